import Foundation
import Synchronization

/// A private `dbus-daemon` started from a temporary configuration, with its
/// own service directory for D-Bus activation. It never touches the machine's
/// session or system bus. Stopped (and its folder removed) by `stop()` or when
/// released.
public final class PrivateBus: @unchecked Sendable {
    /// The address clients connect to.
    public let address: String
    /// The temporary folder holding the config, the socket and `services/`.
    public let directory: URL
    /// The `<servicedir>`: put `NAME.service` files here for activation.
    public let serviceDirectory: URL
    private let process: Process
    private let stopped = Mutex(false)

    /// Starts the daemon. `environment` is what activated services inherit
    /// (the daemon passes its own environment on); defaults to this process's.
    /// `serviceDirectories` are searched for activation files after
    /// `serviceDirectory`, as a session bus searches `~/.local/share/dbus-1/services`.
    /// `allowUsers` are accounts besides this process's that may connect (a bus
    /// lets only its own account in): programs a test runs as another user.
    public init(
        environment: [String: String]? = nil, daemon: String = "dbus-daemon", serviceDirectories: [String] = [], allowUsers: [String] = []
    ) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("widgethost-bus-\(UUID().uuidString.prefix(8))")
        serviceDirectory = directory.appendingPathComponent("services")
        try FileManager.default.createDirectory(at: serviceDirectory, withIntermediateDirectories: true)
        let config = directory.appendingPathComponent("bus.conf")
        try """
        <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
        <busconfig>
          <type>session</type>
          <listen>unix:dir=\(directory.path)</listen>
          <servicedir>\(serviceDirectory.path)</servicedir>
        \(serviceDirectories.map { "  <servicedir>\($0)</servicedir>\n" }.joined())\
          <auth>EXTERNAL</auth>
          <policy context="default">
        \(allowUsers.map { "    <allow user=\"\($0)\"/>\n" }.joined())\
            <allow send_destination="*" eavesdrop="true"/>
            <allow eavesdrop="true"/>
            <allow own="*"/>
          </policy>
          <limit name="max_incoming_bytes">1000000000</limit>
          <limit name="max_outgoing_bytes">1000000000</limit>
          <limit name="max_message_size">134217728</limit>
          <limit name="max_replies_per_connection">50000</limit>
          <limit name="max_connections_per_user">10000</limit>
          <limit name="service_start_timeout">60000</limit>
        </busconfig>
        """.write(to: config, atomically: true, encoding: .utf8)

        process = Process()
        process.executableURL = URL(fileURLWithPath: Self.which(daemon) ?? "/usr/bin/dbus-daemon")
        process.arguments = ["--config-file=\(config.path)", "--nofork", "--nopidfile", "--print-address=1"]
        var env = environment ?? ProcessInfo.processInfo.environment
        env.removeValue(forKey: "DBUS_STARTER_ADDRESS")
        env.removeValue(forKey: "DBUS_STARTER_BUS_TYPE")
        process.environment = env
        let output = Pipe()
        process.standardOutput = output
        // dbus-daemon warns about fd limits it may not raise; show its stderr only when asked.
        process.standardError = ProcessInfo.processInfo.environment["WIDGETHOST_BUS_DEBUG"] == nil ? FileHandle.nullDevice : FileHandle.standardError
        let started = process
        try Self.withCleanSignalMask { try started.run() }

        // The first line of output is the address.
        guard let text = Self.firstLine(of: output) else {
            process.terminate()
            throw PrivateBusError("dbus-daemon did not print an address (is the dbus-daemon package installed?)")
        }
        address = text
    }

    deinit { stop() }

    /// The first line a started process writes to `pipe` (blocking until it
    /// does), or nil when it ends or writes an empty line first.
    public static func firstLine(of pipe: Pipe) -> String? {
        var line = Data()
        let handle = pipe.fileHandleForReading
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = handle.availableData
            if chunk.isEmpty { break }
            line.append(chunk)
        }
        guard let text = String(data: line, encoding: .utf8)?.split(separator: "\n").first, !text.isEmpty else { return nil }
        return String(text)
    }

    /// The environment a client process needs to use this bus as its session bus.
    public func environment(base: [String: String] = ProcessInfo.processInfo.environment) -> [String: String] {
        var env = base
        env["DBUS_SESSION_BUS_ADDRESS"] = address
        env.removeValue(forKey: "DBUS_STARTER_ADDRESS")
        env.removeValue(forKey: "DBUS_STARTER_BUS_TYPE")
        return env
    }

    /// Writes an activation file `<name>.service` running `exec`.
    public func installService(name: String, exec: String) throws {
        let text = "[D-BUS Service]\nName=\(name)\nExec=\(exec)\n"
        try text.write(to: serviceDirectory.appendingPathComponent("\(name).service"), atomically: true, encoding: .utf8)
    }

    public func stop() {
        let wasStopped = stopped.withLock { stopped in
            defer { stopped = true }
            return stopped
        }
        guard !wasStopped else { return }
        if process.isRunning {
            // Never wait here (callers may be on the cooperative pool): ask it
            // to stop, and make sure from a background queue that it did.
            process.terminate()
            let process = self.process
            DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + 5) {
                if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            }
        }
        // The daemon unlinks its socket as it exits, which can race the removal
        // (ENOENT halfway through leaves the folder): try again while it is there.
        for _ in 0..<5 where FileManager.default.fileExists(atPath: directory.path) {
            try? FileManager.default.removeItem(at: directory)
        }
    }

    /// Runs `body` — which starts a child process — with no signal blocked on
    /// the calling thread: a child inherits its parent thread's mask, and the
    /// pool and dispatch threads block SIGTERM, so a dbus-daemon started from
    /// one would ignore `stop()` and outlive the process that started it.
    public static func withCleanSignalMask<T>(_ body: () throws -> T) rethrows -> T {
        var none = sigset_t()
        var saved = sigset_t()
        sigemptyset(&none)
        pthread_sigmask(SIG_SETMASK, &none, &saved)
        defer { pthread_sigmask(SIG_SETMASK, &saved, nil) }
        return try body()
    }

    /// The full path of an executable on PATH.
    public static func which(_ name: String) -> String? {
        if name.hasPrefix("/") { return name }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for dir in path.split(separator: ":") {
            let candidate = "\(dir)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }
}

public struct PrivateBusError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
