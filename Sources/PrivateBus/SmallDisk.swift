import Foundation
import Synchronization

/// A tmpfs of a few hundred kilobytes mounted on a temporary folder, for tests
/// of what a full or read-only disk does: ``fill()`` takes every free byte,
/// ``makeRoom()`` gives them back, ``setReadOnly(_:)`` remounts it. Mounting
/// needs root (CI runs the tests as root); ``isAvailable`` says whether it works
/// here. Unmounted and removed by ``unmount()`` or when released.
public final class SmallDisk: Sendable {
    /// Where it is mounted.
    public let path: String
    private let filler: String
    private let mounted = Mutex(true)

    /// Whether this process may mount a tmpfs: tried once, with a real mount.
    public static let isAvailable: Bool = {
        guard geteuid() == 0, let disk = try? SmallDisk(bytes: 64 << 10) else { return false }
        disk.unmount()
        return true
    }()

    /// Mounts a tmpfs of `bytes` (rounded up to whole pages by the kernel).
    public init(bytes: Int) throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("wh-disk-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        path = folder
        filler = folder + "/filler"
        do {
            try Self.run("/bin/mount", ["-t", "tmpfs", "-o", "size=\(bytes),mode=0700", "tmpfs", folder])
        } catch {
            try? FileManager.default.removeItem(atPath: folder)
            mounted.withLock { $0 = false }  // nothing for deinit to unmount
            throw error
        }
    }

    deinit { unmount() }

    /// Writes a file until the disk has no byte left.
    public func fill() throws {
        let fd = open(filler, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw PrivateBusError("cannot create \(filler): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        let block = [UInt8](repeating: 0x2e, count: 4096)
        // Whole blocks, then single bytes into the last partial block.
        for size in [4096, 1] {
            while true {
                let written = block.withUnsafeBytes { write(fd, $0.baseAddress!, size) }
                if written < 0 && errno == EINTR { continue }
                if written <= 0 { break }
            }
        }
        fsync(fd)
    }

    /// Frees `bytes` of what ``fill()`` took, or all of it.
    public func makeRoom(_ bytes: Int? = nil) {
        // Truncated before it is unlinked: a process another test started at the moment the
        // filler was open holds it until that process execs, and an unlinked file's blocks
        // are freed only when the last descriptor of it closes; a truncated file's at once.
        guard let bytes else {
            _ = truncate(filler, 0)
            return _ = unlink(filler)
        }
        var st = stat()
        guard stat(filler, &st) == 0 else { return }
        _ = truncate(filler, max(0, st.st_size - off_t(bytes)))
    }

    /// Remounts it read-only, or writable again.
    public func setReadOnly(_ readOnly: Bool) throws {
        try Self.run("/bin/mount", ["-o", readOnly ? "remount,ro" : "remount,rw", path])
    }

    /// Unmounts it (lazily, should a process still hold a file there) and removes the folder.
    public func unmount() {
        let wasMounted = mounted.withLock { mounted in
            defer { mounted = false }
            return mounted
        }
        guard wasMounted else { return }
        try? Self.run("/bin/umount", ["-l", path])
        try? FileManager.default.removeItem(atPath: path)
    }

    private static func run(_ executable: String, _ arguments: [String]) throws {
        let result = try runCommandBlocking(executable, arguments)
        guard result.succeeded else {
            throw PrivateBusError("\(executable) \(arguments.joined(separator: " ")): \(result.stderr)")
        }
    }
}
