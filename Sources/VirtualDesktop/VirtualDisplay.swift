import Foundation
import PrivateBus

#if canImport(Glibc)
import Glibc
#endif

/// An X server of its own: Xvfb picks a free display number and keeps its
/// screen in a file (`-fbdir`), which screenshots and ``Framebuffer`` read.
public final class VirtualDisplay: @unchecked Sendable {
    public let process: Process
    /// `:N`, for `DISPLAY`.
    public let display: String
    /// The screen, as an XWD file Xvfb draws into.
    public let framebuffer: String
    private let logFile: URL
    /// What Xvfb printed.
    public var log: String { (try? String(contentsOf: logFile, encoding: .utf8)) ?? "" }

    /// Starts Xvfb and waits until clients can connect: its socket is there
    /// and it is still running. One that dies at once (a display number the
    /// last server has not quite given back) is replaced, up to 3 times.
    /// `-noreset`: the server does not start over each time its last client
    /// leaves, so a client connecting at that moment is not turned away.
    public init(directory: URL) throws {
        let fb = directory.appendingPathComponent("fb")
        try FileManager.default.createDirectory(at: fb, withIntermediateDirectories: true)
        framebuffer = fb.appendingPathComponent("Xvfb_screen0").path
        var problems: [String] = []
        for attempt in 1...3 {
            let log = directory.appendingPathComponent("xvfb-\(attempt).log")
            _ = FileManager.default.createFile(atPath: log.path, contents: nil)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/Xvfb")
            process.arguments = ["-displayfd", "1", "-nolisten", "tcp", "-noreset", "-screen", "0", "1280x900x24", "-fbdir", fb.path]
            let output = Pipe()
            process.standardOutput = output
            process.standardError = try FileHandle(forWritingTo: log)
            try PrivateBus.withCleanSignalMask { try process.run() }
            let number = PrivateBus.firstLine(of: output)?.trimmingCharacters(in: .whitespaces) ?? ""
            let socket = "/tmp/.X11-unix/X" + number
            var ready = false
            for _ in 0..<40 where !number.isEmpty && process.isRunning {
                if FileManager.default.fileExists(atPath: socket) {
                    ready = true
                    break
                }
                usleep(50_000)
            }
            if ready {
                usleep(100_000)
                ready = process.isRunning
            }
            if ready {
                self.process = process
                display = ":" + number
                logFile = log
                return
            }
            endProcess(process)
            problems.append("attempt \(attempt): display '\(number)': " + ((try? String(contentsOf: log, encoding: .utf8)) ?? ""))
        }
        throw PrivateBusError("Xvfb did not start (is the xvfb package installed?): \(problems.joined(separator: "\n"))")
    }

    /// Ends Xvfb and waits until it is gone, so its display number and socket are free again.
    public func stop() { endProcess(process) }

    /// The colour of the screen at x, y as "#rrggbb"; nil when it cannot be read.
    public func colour(x: Int, y: Int) -> String? {
        guard let screen = try? Framebuffer(path: framebuffer), let pixel = screen.pixel(x: x, y: y) else { return nil }
        return Framebuffer.hex(pixel)
    }
}

/// Ends a process (SIGTERM, SIGKILL after 5 s) and waits until it is gone.
public func endProcess(_ process: Process) {
    guard process.isRunning else { return }
    process.terminate()
    for _ in 0..<100 where process.isRunning { usleep(50_000) }
    if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    process.waitUntilExit()
}

/// Xvfb's screen file mapped into memory, read where Xvfb draws: a pixel
/// read here is what the X server shows at that moment, with no copy of the
/// file (4.6 MB) made. The file is an XWD image of 32 bits a pixel, as
/// widgetboard/screenshot.py reads it.
public final class Framebuffer: @unchecked Sendable {
    public let width: Int
    public let height: Int
    private let base: UnsafeRawPointer
    private let length: Int
    private let pixels: Int
    private let bytesPerLine: Int
    private let msbFirst: Bool

    public init(path: String) throws {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw PrivateBusError("cannot open the framebuffer \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var status = stat()
        guard fstat(fd, &status) == 0, status.st_size >= 100 else { throw PrivateBusError("the framebuffer \(path) holds no XWD header") }
        length = Int(status.st_size)
        guard let mapped = mmap(nil, length, PROT_READ, MAP_SHARED, fd, 0), mapped != MAP_FAILED else {
            throw PrivateBusError("cannot map the framebuffer \(path): \(String(cString: strerror(errno)))")
        }
        let header = UnsafeRawPointer(mapped), size = length
        base = header
        // The header's fields are 32-bit big-endian numbers.
        func field(_ index: Int) -> Int { Int(UInt32(bigEndian: header.loadUnaligned(fromByteOffset: index * 4, as: UInt32.self))) }
        let (headerSize, bitsPerPixel, colours) = (field(0), field(11), field(19))
        (width, height, bytesPerLine, msbFirst) = (field(4), field(5), field(12), field(7) != 0)
        pixels = headerSize + colours * 12
        guard bitsPerPixel == 32, pixels + bytesPerLine * height <= size else {
            munmap(mapped, size)
            throw PrivateBusError("the framebuffer \(path) is not a 32-bit XWD image of its size")
        }
    }

    deinit { munmap(UnsafeMutableRawPointer(mutating: base), length) }

    /// The pixel at x, y as 0xRRGGBB; nil outside the screen.
    public func pixel(x: Int, y: Int) -> UInt32? {
        guard (0..<width).contains(x), (0..<height).contains(y) else { return nil }
        let at = base + pixels + y * bytesPerLine + x * 4
        let (b0, b1, b2, b3) = (at.load(as: UInt8.self), at.load(fromByteOffset: 1, as: UInt8.self),
                                at.load(fromByteOffset: 2, as: UInt8.self), at.load(fromByteOffset: 3, as: UInt8.self))
        let (r, g, b) = msbFirst ? (b1, b2, b3) : (b2, b1, b0)
        return UInt32(r) << 16 | UInt32(g) << 8 | UInt32(b)
    }

    /// "#rrggbb" of a pixel.
    public static func hex(_ pixel: UInt32) -> String { String(format: "#%06x", pixel) }
}
