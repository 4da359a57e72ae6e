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
    let process = Process()
    process.executableURL = URL(fileURLWithPath: PrivateBus.which(executable) ?? executable)
    process.arguments = arguments
    var env = environment ?? ProcessInfo.processInfo.environment.merging([
        "DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent/widgethost-tests",
        "DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/widgethost-tests",
        "SYSTEMD_PAGER": "", "SYSTEMD_COLORS": "0", "LC_ALL": "C.UTF-8",
    ]) { _, safe in safe }
    env.merge(extra) { _, added in added }
    process.environment = env
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("wh-cmd-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: dir) }
    let out = dir.appendingPathComponent("out"), err = dir.appendingPathComponent("err")
    _ = FileManager.default.createFile(atPath: out.path, contents: nil)
    _ = FileManager.default.createFile(atPath: err.path, contents: nil)
    let outHandle = try FileHandle(forWritingTo: out), errHandle = try FileHandle(forWritingTo: err)
    process.standardOutput = outHandle
    process.standardError = errHandle
    process.standardInput = FileHandle.nullDevice
    let timedOut = TimeoutFlag()
    let status: Int32 = try await withCheckedThrowingContinuation { continuation in
        process.terminationHandler = { continuation.resume(returning: $0.terminationStatus) }
        do { try PrivateBus.withCleanSignalMask { try process.run() } } catch {
            process.terminationHandler = nil
            continuation.resume(throwing: error)
            return
        }
        let pid = process.processIdentifier
        DispatchQueue.global().asyncAfter(deadline: .now() + timeout) {
            if process.isRunning {
                timedOut.set()
                kill(pid, SIGKILL)
            }
        }
    }
    try outHandle.close()
    try errHandle.close()
    return CommandResult(
        status: status, stdout: (try? String(contentsOf: out, encoding: .utf8)) ?? "",
        stderr: (try? String(contentsOf: err, encoding: .utf8)) ?? "", timedOut: timedOut.isSet)
}

private final class TimeoutFlag: Sendable {
    private let flag = Mutex(false)
    func set() { flag.withLock { $0 = true } }
    var isSet: Bool { flag.withLock { $0 } }
}
