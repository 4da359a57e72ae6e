import DBus
import WidgetHostCore

#if canImport(Glibc)
import Glibc
#endif

/// A process's files as the kernel shows them under `root` (`/proc`).
public struct ProcFiles: ProcessFiles {
    public var root: String

    public init(root: String = "/proc") {
        self.root = root
    }

    /// Opens the process's root, then `.flatpak-info` inside it: the file is
    /// the one of that process's mount namespace, whatever links it holds.
    public func flatpakInfo(pid: Int32) throws(HostError) -> String? {
        let root = "\(self.root)/\(pid)/root"
        let rootFD = retryingOnEINTR { Glibc.open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK) }
        // A process that is gone, or whose root this user may not open, is refused:
        // not being able to look is no proof of not being sandboxed.
        if rootFD < 0 { throw Self.unreadable(root, errno) }
        defer { Glibc.close(rootFD) }
        let infoFD = retryingOnEINTR { openat(rootFD, ".flatpak-info", O_RDONLY | O_CLOEXEC | O_NOCTTY) }
        if infoFD < 0 {
            if errno == ENOENT { return nil }
            throw Self.unreadable("\(root)/.flatpak-info", errno)
        }
        defer { Glibc.close(infoFD) }
        var st = stat()
        guard fstat(infoFD, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else {
            throw .accessDenied("the caller's \(root)/.flatpak-info is not a regular file, so its Flatpak identity cannot be trusted")
        }
        guard let contents = Self.readAll(infoFD, limit: 1 << 20) else { throw Self.unreadable("\(root)/.flatpak-info", errno) }
        return contents
    }

    public func cgroups(pid: Int32) throws(HostError) -> String {
        let path = "\(root)/\(pid)/cgroup"
        let fd = retryingOnEINTR { Glibc.open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY) }
        guard fd >= 0 else { throw Self.unreadable(path, errno) }
        defer { Glibc.close(fd) }
        guard let contents = Self.readAll(fd, limit: 1 << 20) else { throw Self.unreadable(path, errno) }
        return contents
    }

    private static func unreadable(_ path: String, _ code: Int32) -> HostError {
        .accessDenied("cannot read \(path) (\(String(cString: strerror(code)))) to tell whether the caller is sandboxed; a caller whose identity cannot be read is refused")
    }

    private static func readAll(_ fd: Int32, limit: Int) -> String? {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while bytes.count < limit {
            let n = buffer.withUnsafeMutableBytes { space in retryingOnEINTR { Glibc.read(fd, space.baseAddress, space.count) } }
            if n < 0 { return nil }
            if n == 0 { break }
            bytes += buffer[0..<n]
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

extension CallerIdentity {
    /// The identity of process `pid`, read from `procRoot` (`/proc`); see
    /// ``CallerIdentity/read(pid:from:)``. Blocking: call it off the bus thread.
    public static func read(pid: Int32, procRoot: String = "/proc") throws(HostError) -> CallerIdentity {
        try read(pid: pid, from: ProcFiles(root: procRoot))
    }

    /// The identity of the process a bus connection's credentials name.
    /// Blocking: call it off the bus thread.
    ///
    /// With `ProcessFD` (a pidfd, offered by newer buses) the answer is checked
    /// against the process itself: a PID alone may be reused by another process
    /// once the caller exits, between the bus answering and `/proc/<pid>` being
    /// read, so a caller that exits at the right moment could be mistaken for
    /// whatever process gets its PID next. If the pidfd's process is still alive
    /// after the read, the files read were its own. Without one (dbus-daemon
    /// before 1.15), the PID is all the bus offers, as for xdg-desktop-portal.
    public static func read(_ credentials: Credentials) -> Result<CallerIdentity, HostError> {
        defer { if let fd = credentials.processFD { Glibc.close(fd) } }
        // No PID: not a local Unix-socket peer, which no sandbox can be.
        guard let pid = credentials.processID else { return .success(.unsandboxed) }
        let result = Result { () throws(HostError) in try read(pid: Int32(bitPattern: pid)) }
        if let fd = credentials.processFD {
            var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            // A pidfd polls readable once its process has exited.
            if poll(&entry, 1, 0) != 0 {
                return .failure(.accessDenied("the caller's process exited while its identity was read; call again from a live process"))
            }
        }
        return result
    }
}
