import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// What a finished command left: its status and output.
public struct CommandResult: Sendable, CustomStringConvertible {
    public var status: Int32
    public var stdout: String
    public var stderr: String
    /// Killed at the timeout.
    public var timedOut: Bool
    public var succeeded: Bool { status == 0 && !timedOut }
    public var description: String { "status \(status)\(timedOut ? " (timed out)" : "")\nstdout: \(stdout)\nstderr: \(stderr)" }
}

/// Runs a command to completion with a clean signal mask, killing it after
/// `timeout` seconds. Its output goes to files, so nothing can fill a pipe
/// and deadlock. Its environment is `environment`, or else this process's
/// with the machine's buses out of reach (a child never touches them by
/// accident) and plain, untranslated output; `adding` goes on top.
public func runCommand(
    _ executable: String, _ arguments: [String], environment: [String: String]? = nil, adding extra: [String: String] = [:],
    timeout: Double = 30
) async throws -> CommandResult {
    let command = try Command(executable, arguments, environment: environment, adding: extra)
    let status: Int32 = try await withCheckedThrowingContinuation { continuation in
        command.start(timeout: timeout) { continuation.resume(with: $0) }
    }
    return command.finish(status)
}

/// ``runCommand(_:_:environment:adding:timeout:)`` for set-up and tear-down
/// outside any task (mounting a test disk): blocks the calling thread, which
/// must not be one of Swift's cooperative pool.
public func runCommandBlocking(_ executable: String, _ arguments: [String], timeout: Double = 30) throws -> CommandResult {
    let command = try Command(executable, arguments, environment: nil, adding: [:])
    let done = DispatchSemaphore(value: 0)
    let status = Mutex<Result<Int32, any Error>?>(nil)
    command.start(timeout: timeout) { result in
        status.withLock { $0 = result }
        done.signal()
    }
    done.wait()
    return command.finish(try status.withLock { $0! }.get())
}

/// One command: its process, and the files its output goes to.
private struct Command: Sendable {
    let process: Process
    let dir: URL
    let out: URL
    let err: URL
    let handles: [FileHandle]
    let timedOut = TimeoutFlag()

    init(_ executable: String, _ arguments: [String], environment: [String: String]?, adding extra: [String: String]) throws {
        process = Process()
        process.executableURL = URL(fileURLWithPath: PrivateBus.which(executable) ?? executable)
        process.arguments = arguments
        var env = environment ?? ProcessInfo.processInfo.environment.merging([
            "DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent/widgethost-tests",
            "DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/widgethost-tests",
            "SYSTEMD_PAGER": "", "SYSTEMD_COLORS": "0", "LC_ALL": "C.UTF-8",
        ]) { _, safe in safe }
        env.merge(extra) { _, added in added }
        process.environment = env
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("wh-cmd-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        out = dir.appendingPathComponent("out")
        err = dir.appendingPathComponent("err")
        _ = FileManager.default.createFile(atPath: out.path, contents: nil)
        _ = FileManager.default.createFile(atPath: err.path, contents: nil)
        let outHandle = try FileHandle(forWritingTo: out), errHandle = try FileHandle(forWritingTo: err)
        handles = [outHandle, errHandle]
        process.standardOutput = outHandle
        process.standardError = errHandle
        process.standardInput = FileHandle.nullDevice
    }

    /// Starts the process; `done` gets its exit status, or why it did not start.
    func start(timeout: Double, _ done: @escaping @Sendable (Result<Int32, any Error>) -> Void) {
        process.terminationHandler = { done(.success($0.terminationStatus)) }
        do { try PrivateBus.withCleanSignalMask { try process.run() } } catch {
            process.terminationHandler = nil
            try? FileManager.default.removeItem(at: dir)
            return done(.failure(error))
        }
        let (running, flag) = (process, timedOut)
        let pid = process.processIdentifier
        DispatchQueue.global().asyncAfter(deadline: .now() + timeout) {
            if running.isRunning {
                flag.set()
                kill(pid, SIGKILL)
            }
        }
    }

    /// What the finished process left; removes its files.
    func finish(_ status: Int32) -> CommandResult {
        for handle in handles { try? handle.close() }
        defer { try? FileManager.default.removeItem(at: dir) }
        return CommandResult(
            status: status, stdout: (try? String(contentsOf: out, encoding: .utf8)) ?? "",
            stderr: (try? String(contentsOf: err, encoding: .utf8)) ?? "", timedOut: timedOut.isSet)
    }
}

private final class TimeoutFlag: Sendable {
    private let flag = Mutex(false)
    func set() { flag.withLock { $0 = true } }
    var isSet: Bool { flag.withLock { $0 } }
}

/// The processes whose environment holds `variable=value`: a run gives what it
/// starts a mark of its own, and whatever still carries it afterwards was left
/// behind (apps a bus started by D-Bus activation inherit the bus's environment,
/// so they carry it too).
public func processesMarked(_ variable: String, _ value: String) -> [String] {
    let wanted = Data("\(variable)=\(value)".utf8)
    let pids = (try? FileManager.default.contentsOfDirectory(atPath: "/proc"))?.filter { $0.allSatisfy(\.isNumber) } ?? []
    return pids.compactMap { pid in
        guard let environ = FileManager.default.contents(atPath: "/proc/\(pid)/environ"),
            environ.split(separator: 0).contains(where: { Data($0) == wanted })
        else { return nil }
        let command = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline").map {
            String(decoding: $0.map { $0 == 0 ? UInt8(ascii: " ") : $0 }, as: UTF8.self)
        }
        return "\(pid): \(command ?? "?")"
    }
}
