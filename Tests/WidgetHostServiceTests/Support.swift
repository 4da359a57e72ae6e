import DBus
import Foundation
import PrivateBus
import Synchronization
import Testing

/// Where the package's built executables are (next to the test bundle).
let buildDirectory: String = {
    if let dir = ProcessInfo.processInfo.environment["WIDGETHOST_BIN_DIR"] { return dir }
    let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    return URL(fileURLWithPath: exe).deletingLastPathComponent().path
}()

/// The repository root (for dbus/ and packaging/).
let repositoryRoot: URL = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()

/// The fixtures' temporary folders not removed yet. A fixture's folder goes once its host has
/// written its last state and gone, which can be after the test that stopped it has ended: the
/// test process waits for those removals as it exits (up to 10 s), then removes what is left.
enum FixtureFolders {
    static let removals = DispatchGroup()
    private static let pending = Mutex<Set<String>>([])
    private static let exitHook: Void = { atexit { FixtureFolders.finish() } }()

    static func add(_ root: URL) {
        _ = exitHook
        pending.withLock { _ = $0.insert(root.path) }
    }

    static func remove(_ root: URL) {
        try? FileManager.default.removeItem(at: root)
        pending.withLock { _ = $0.remove(root.path) }
    }

    private static func finish() {
        _ = removals.wait(timeout: .now() + 10)
        for path in pending.withLock({ $0 }) { try? FileManager.default.removeItem(atPath: path) }
    }
}

/// A private bus, temporary XDG folders and (optionally) a running widget-hostd.
final class HostFixture: @unchecked Sendable {
    let root: URL
    let dataHome: URL
    let dataDir: URL
    let bus: PrivateBus
    let environment: [String: String]
    private var host: Process?
    let hostLog: URL

    /// Creates the folders and the bus. `desktopEntries` go to $XDG_DATA_HOME/applications;
    /// `busUsers` are other accounts the bus lets in (see `PrivateBus`).
    init(desktopEntries: [String: String] = [:], busUsers: [String] = []) throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("wh-test-\(UUID().uuidString.prefix(8))")
        FixtureFolders.add(root)
        dataHome = root.appendingPathComponent("data")
        dataDir = root.appendingPathComponent("sysdata")
        hostLog = root.appendingPathComponent("host.log")
        for dir in ["data/applications", "sysdata/applications", "config", "state", "runtime"] {
            try FileManager.default.createDirectory(at: root.appendingPathComponent(dir), withIntermediateDirectories: true)
        }
        for (name, text) in desktopEntries {
            try text.write(to: dataHome.appendingPathComponent("applications/\(name)"), atomically: true, encoding: .utf8)
        }
        var env = ProcessInfo.processInfo.environment
        env["XDG_DATA_HOME"] = dataHome.path
        env["XDG_DATA_DIRS"] = dataDir.path
        env["XDG_CONFIG_HOME"] = root.appendingPathComponent("config").path
        env["XDG_CONFIG_DIRS"] = root.appendingPathComponent("config").path
        env["XDG_STATE_HOME"] = root.appendingPathComponent("state").path
        bus = try PrivateBus(environment: env, allowUsers: busUsers)
        environment = bus.environment(base: env)
    }

    deinit { stop() }

    private let stopped = Mutex(false)

    /// Starts the bus once fewer than `HostFixture.gate`'s limit of fixtures run,
    /// so a parallel test run does not start dozens of daemons at once on a small machine.
    static func make(desktopEntries: [String: String] = [:], busUsers: [String] = []) async throws -> HostFixture {
        await gate.acquire()
        do {
            return try HostFixture(desktopEntries: desktopEntries, busUsers: busUsers)
        } catch {
            await gate.release()
            throw error
        }
    }

    static let gate = AsyncGate(limit: 3)

    /// Stops the host and the bus without blocking the caller's thread.
    func stop() {
        let first = stopped.withLock { isStopped in
            defer { isStopped = true }
            return !isStopped
        }
        guard first else { return }
        bus.stop()
        if let host, host.isRunning {
            // The host writes its state as it stops: remove the folder once it is gone.
            host.terminate()
            let root = self.root
            FixtureFolders.removals.enter()
            DispatchQueue.global(qos: .utility).async {
                for _ in 0..<500 where host.isRunning { usleep(10_000) }
                if host.isRunning {
                    kill(host.processIdentifier, SIGKILL)
                    host.waitUntilExit()
                }
                FixtureFolders.remove(root)
                FixtureFolders.removals.leave()
            }
        } else {
            FixtureFolders.remove(root)
        }
        Task { await Self.gate.release() }
    }

    /// Starts widget-hostd on the bus and waits until it owns its name.
    func startHost(_ arguments: [String] = [], environment extra: [String: String] = [:]) async throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: buildDirectory + "/widget-hostd")
        process.arguments = ["--log-level", "debug"] + arguments
        process.environment = environment.merging(extra) { _, new in new }
        if !FileManager.default.fileExists(atPath: hostLog.path) {
            _ = FileManager.default.createFile(atPath: hostLog.path, contents: nil)
        }
        let log = try FileHandle(forWritingTo: hostLog)
        log.seekToEndOfFile()
        process.standardOutput = log
        process.standardError = log
        try PrivateBus.withCleanSignalMask { try process.run() }
        host = process
        try await waitForName("org.widgethost.Host1")
    }

    var hostProcess: Process? { host }

    /// Starts `executable` on the fixture's bus with its output (stdout and
    /// stderr) going to a file; `printed()` reads what it wrote so far.
    func launch(_ executable: String, _ arguments: [String] = [], environment extra: [String: String] = [:]) throws -> Launched {
        let output = root.appendingPathComponent("\((executable as NSString).lastPathComponent)-\(UUID().uuidString.prefix(4)).out")
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        let handle = try FileHandle(forWritingTo: output)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = environment.merging(extra) { _, new in new }
        process.standardOutput = handle
        process.standardError = handle
        try PrivateBus.withCleanSignalMask { try process.run() }
        return Launched(process: process, output: output)
    }

    /// Where the host keeps its state: `$XDG_STATE_HOME/widgethost`.
    var stateDirectory: URL { root.appendingPathComponent("state/widgethost") }

    /// Stops the host with `signal` (SIGTERM: gracefully; SIGKILL: at once) and
    /// waits until it is gone and its name is free.
    func stopHost(signal: Int32 = SIGTERM) async {
        guard let host else { return }
        if host.isRunning { kill(host.processIdentifier, signal) }
        await waitForExit(host)
        self.host = nil
        if let connection = try? await connect() {
            _ = await eventually { (try? await connection.nameOwner("org.widgethost.Host1")) == nil }
            connection.close()
        }
    }

    var log: String { (try? String(contentsOf: hostLog, encoding: .utf8)) ?? "" }

    /// Polls until `name` has an owner on the bus.
    func waitForName(_ name: String, timeout: Double = 20) async throws {
        let connection = try await connect()
        defer { connection.close() }
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if try await connection.nameOwner(name) != nil { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        Issue.record("\(name) did not appear on the bus within \(timeout) s. Host log:\n\(log)")
        throw CancellationError()
    }

    func connect() async throws -> Connection {
        try await Connection.connect(.address(bus.address), label: "test")
    }

    func gdbus(_ arguments: [String]) async throws -> CommandResult {
        try await runCommand("gdbus", arguments, environment: environment)
    }

    func busctl(_ arguments: [String]) async throws -> CommandResult {
        try await runCommand("busctl", ["--address=\(bus.address)"] + arguments, environment: environment)
    }

    /// Every `Tap` call on the bus from now on, as `busctl monitor` sees it:
    /// what a renderer sent, whoever it is and whatever the host answers.
    func monitorTaps() async throws -> TapMonitor {
        let launched = try launch("/usr/bin/busctl", ["--address=\(bus.address)", "monitor", "--json=short", "--match", "type='method_call',member='Tap'"])
        guard await eventually(timeout: 10, { launched.printed().contains("Monitoring") }) else {
            launched.stop()
            throw PrivateBusError("busctl monitor did not start: \(launched.printed())")
        }
        return TapMonitor(launched: launched)
    }

    /// `gdbus call` on the host's root object.
    func callHost(_ method: String, _ args: [String] = []) async throws -> CommandResult {
        try await gdbus(
            ["call", "--session", "--dest", "org.widgethost.Host1", "--object-path", "/org/widgethost/Host1", "--method", method]
                + args)
    }

    func cli(_ arguments: [String]) async throws -> CommandResult {
        try await runCommand(buildDirectory + "/widget-host", arguments, environment: environment)
    }
}

/// Waits for a Process to exit without blocking a thread (Process.waitUntilExit can hang off the main thread).
func waitForExit(_ process: Process, timeout: Double = 10) async {
    let deadline = Date().addingTimeInterval(timeout)
    while process.isRunning && Date() < deadline { try? await Task.sleep(for: .milliseconds(10)) }
    if process.isRunning { kill(process.processIdentifier, SIGKILL) }
}

/// Waits asynchronously until `condition` holds or the timeout passes.
func eventually(timeout: Double = 10, _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: .milliseconds(20))
    }
    return try await condition()
}

/// Stops process `pid` with SIGSTOP and returns once every one of its
/// threads is stopped. The kernel wakes one thread to take the signal and
/// stops the others only when that one runs: on a busy machine the rest may
/// go on for a while after `kill` returns, serving calls sent meanwhile.
func stopProcess(_ pid: Int32) async -> Bool {
    kill(pid, SIGSTOP)
    return await eventually(timeout: 10) {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return !tasks.isEmpty && tasks.allSatisfy { task in
            let stat = (try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/stat", encoding: .utf8)) ?? ""
            // The state follows the command name, which is in parentheses.
            let state = stat.split(separator: ")").last?.split(separator: " ").first
            return state == "T" || state == "t"
        }
    }
}

/// The apps ListApps reports, by id.
func listApps(_ connection: Connection) async throws -> [String: [String: DBusValue]] {
    let reply = try await connection.call(
        destination: "org.widgethost.Host1", path: "/org/widgethost/Host1", interface: "org.widgethost.Host1.Apps",
        member: "ListApps")
    var result: [String: [String: DBusValue]] = [:]
    for entry in reply.first?.arrayElements ?? [] {
        guard case .structure(let fields) = entry, let id = fields[0].stringValue else { continue }
        result[id] = (fields[1].stringKeyedEntries ?? [:]).mapValues(\.unwrapped)
    }
    return result
}

extension Connection {
    func host(_ member: String, _ args: [DBusValue] = [], interface: String = "org.widgethost.Host1.Apps") async throws
        -> [DBusValue]
    {
        try await call(
            destination: "org.widgethost.Host1", path: "/org/widgethost/Host1", interface: interface, member: member, args)
    }
}

/// Collects signals from a stream in the background.
final class SignalRecorder: @unchecked Sendable {
    private let items = Mutex<[Message]>([])
    private var task: Task<Void, Never>?

    init(_ stream: AsyncStream<Message>) {
        task = Task { [weak self] in
            for await message in stream {
                guard let self else { return }
                self.append(message)
            }
        }
    }

    deinit { task?.cancel() }

    private func append(_ message: Message) {
        items.withLock { $0.append(message) }
    }

    var messages: [Message] { items.withLock { $0 } }

    /// (member, first string argument) of each signal so far.
    var events: [String] {
        messages.map { "\($0.member ?? "?") \($0.arguments().first?.stringValue ?? "")" }
    }
}

/// The `Tap` calls `busctl monitor` saw (``HostFixture/monitorTaps()``).
struct TapMonitor {
    let launched: Launched

    /// Each tap seen so far: when the bus daemon received it (Unix
    /// milliseconds) and its options, each as its value's JSON (`x` a number).
    func taps() -> [(receivedMs: Int64, options: [String: Any])] {
        launched.printed().split(separator: "\n").compactMap { line in
            guard line.hasPrefix("{"), let data = line.data(using: .utf8),
                let message = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
                let received = message["timestamp-realtime"] as? Int64 ?? (message["timestamp-realtime"] as? NSNumber)?.int64Value,
                let arguments = (message["payload"] as? [String: Any])?["data"] as? [Any],
                let options = arguments.last as? [String: Any]
            else { return nil }
            return (received / 1000, options.compactMapValues { ($0 as? [String: Any])?["data"] })
        }
    }

    /// A problem with the deadline of the newest tap, once busctl has shown
    /// at least `seen` taps (none shown within 5 s, no deadline given, or one
    /// not `seconds` after the tap reached the bus); nil when it holds.
    func deadlineProblem(seconds: ClosedRange<Double>, seen: Int = 1) async -> String? {
        _ = await eventually(timeout: 5) { taps().count >= seen }
        let seenSoFar = taps()
        guard seenSoFar.count >= seen, let tap = seenSoFar.last else {
            return "busctl monitor saw \(seenSoFar.count) Tap calls, not \(seen): \(launched.printed().suffix(500))"
        }
        guard let deadline = (tap.options["deadline"] as? NSNumber)?.int64Value else {
            return "the tap gave no 'deadline' option (x, Unix milliseconds): \(tap.options)"
        }
        let after = Double(deadline - tap.receivedMs) / 1000
        return seconds.contains(after) ? nil : "the tap's deadline is \(after) s after it reached the bus, not \(seconds.lowerBound) to \(seconds.upperBound) s"
    }

    func stop() { launched.stop() }
}

/// A process started by `HostFixture.launch`.
struct Launched {
    let process: Process
    let output: URL
    func printed() -> String { (try? String(contentsOf: output, encoding: .utf8)) ?? "" }
    func stop() { if process.isRunning { process.terminate() } }
}
