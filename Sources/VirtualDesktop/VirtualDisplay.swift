import Foundation
import PrivateBus
import Synchronization

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
    /// Its one screen is `width` by `height` pixels.
    public init(directory: URL, width: Int = 1280, height: Int = 900) throws {
        let fb = directory.appendingPathComponent("fb")
        try FileManager.default.createDirectory(at: fb, withIntermediateDirectories: true)
        framebuffer = fb.appendingPathComponent("Xvfb_screen0").path
        var problems: [String] = []
        for attempt in 1...3 {
            let log = directory.appendingPathComponent("xvfb-\(attempt).log")
            _ = FileManager.default.createFile(atPath: log.path, contents: nil)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/Xvfb")
            process.arguments = ["-displayfd", "1", "-nolisten", "tcp", "-noreset", "-screen", "0", "\(width)x\(height)x24", "-fbdir", fb.path]
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

/// A program the tests and the benchmarks start on a virtual display of its own, beside
/// the caller's private session bus (``GnomeShell``, ``Plasma``): its display, its
/// environment, its output. ``stop()`` ends it and its display.
public class DesktopProgram: @unchecked Sendable {
    public let display: VirtualDisplay
    /// What the program runs with on top of the session's environment (the display, the
    /// folders); its helpers (xdotool, AT-SPI clients) need the same.
    public let environment: [String: String]
    /// The running program (another one after a restart).
    public internal(set) var process: Process
    /// The session bus's environment, with the XDG folders.
    let session: [String: String]
    /// `$XDG_CONFIG_HOME` of the session, where the program's settings are written.
    let configHome: URL
    let output: ProgramOutput
    private let stopped = Mutex(false)

    init(display: VirtualDisplay, environment: [String: String], process: Process, session: [String: String], configHome: URL, output: ProgramOutput) {
        (self.display, self.environment, self.process) = (display, environment, process)
        (self.session, self.configHome, self.output) = (session, configHome, output)
    }

    /// What the program printed so far, across its restarts.
    public func printed() -> String { output.printed() }

    /// The session's environment with the program's own on top.
    var everything: [String: String] { session.merging(environment) { _, new in new } }

    /// Ends the program, its display and what ``ended()`` ends; again is nothing.
    public func stop() {
        guard !stopped.withLock({ was in defer { was = true }; return was }) else { return }
        endProcess(process)
        display.stop()
        ended()
    }

    /// What a program ends besides itself and its display, once.
    func ended() {}
}

/// A program's output (stdout and stderr) in a file of its own, read as it grows: what it
/// printed, across its restarts, for the message of a failure.
struct ProgramOutput: Sendable {
    let file: URL

    /// A new, empty `NAME-XXXX.out` in `folder`.
    init(in folder: URL, name: String) {
        file = folder.appendingPathComponent("\(name)-\(UUID().uuidString.prefix(4)).out")
        _ = FileManager.default.createFile(atPath: file.path, contents: nil)
    }

    /// What was printed so far.
    func printed() -> String { (try? String(contentsOf: file, encoding: .utf8)) ?? "" }

    /// Starts `executable` with `arguments` and `environment`, what it prints added to the file.
    func run(_ executable: String, _ arguments: [String], environment: [String: String]) throws -> Process {
        let handle = try FileHandle(forWritingTo: file)
        handle.seekToEndOfFile()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = environment
        process.standardOutput = handle
        process.standardError = handle
        try PrivateBus.withCleanSignalMask { try process.run() }
        return process
    }
}

/// Whether `condition` holds within `timeout` seconds, asked every 20 ms.
func poll(timeout: Double, _ condition: () async -> Bool) async -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(20))
    }
    return await condition()
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
