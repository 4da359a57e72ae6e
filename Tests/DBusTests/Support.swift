import DBus
import Dispatch
import Foundation
import PrivateBus
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

// MARK: - Running external commands

/// Runs busctl on `address` with sd-bus debug logging, which prints every
/// message it receives: the only place busctl shows an error's name (its
/// "Call failed:" line shows just the message).
func busctl(_ address: String, _ arguments: [String]) async throws -> CommandResult {
    try await runCommand("busctl", ["--address=\(address)"] + arguments, adding: ["SYSTEMD_LOG_LEVEL": "debug"])
}

/// The name of the error busctl received, from its debug log.
func receivedErrorName(_ result: CommandResult) -> String? {
    for line in result.stderr.split(separator: "\n") where line.hasPrefix("Got message type=error ") {
        guard let range = line.range(of: " error-name=") else { continue }
        return String(line[range.upperBound...].prefix { $0 != " " })
    }
    return nil
}

// MARK: - A private bus per test

/// Runs blocking work (starting or stopping a dbus-daemon) off the cooperative pool.
///
/// The thread unblocks every signal (`PrivateBus.withCleanSignalMask`): pool and dispatch threads block
/// SIGTERM, a child inherits its parent thread's mask, and a dbus-daemon
/// started with SIGTERM blocked ignores `PrivateBus.stop()` until it falls
/// back to SIGKILL five seconds later.
func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread {
            continuation.resume(with: Result { try PrivateBus.withCleanSignalMask(body) })
        }
    }
}

/// One private dbus-daemon and the binding connections a test opened on it.
final class BusFixture: Sendable {
    let bus: PrivateBus
    var address: String { bus.address }
    private let connections = Mutex<[Connection]>([])

    init(bus: PrivateBus) { self.bus = bus }

    /// A new, registered binding connection to this test's bus.
    func connect(_ label: String = "test") async throws -> Connection {
        let connection = try await Connection.connect(.address(bus.address), label: label)
        connections.withLock { $0.append(connection) }
        return connection
    }

    /// Stops the daemon (waits for it to exit). Safe to call twice.
    func stopBus() async {
        let bus = self.bus
        _ = try? await offPool { bus.stop() }
    }

    func closeAll() {
        for connection in connections.withLock({ $0 }) { connection.close() }
    }
}

/// Starts a private bus, runs `body`, then closes every connection and stops the bus.
func withBus<T: Sendable>(_ body: (BusFixture) async throws -> T) async throws -> T {
    let fixture = BusFixture(bus: try await offPool { try PrivateBus() })
    do {
        let result = try await body(fixture)
        fixture.closeAll()
        await fixture.stopBus()
        return result
    } catch {
        fixture.closeAll()
        await fixture.stopBus()
        throw error
    }
}

// MARK: - Small concurrency helpers

struct TimedOut: Error, CustomStringConvertible {
    var what: String
    var description: String { "timed out waiting for \(what)" }
}

/// Resumes a continuation once; later attempts are ignored.
private final class ResumeOnce<T: Sendable>: Sendable {
    private let continuation: Mutex<CheckedContinuation<T, any Error>?>
    init(_ continuation: CheckedContinuation<T, any Error>) { self.continuation = Mutex(continuation) }
    @discardableResult func resume(_ result: Result<T, any Error>) -> Bool {
        guard let continuation = continuation.withLock({ c -> CheckedContinuation<T, any Error>? in defer { c = nil }; return c }) else {
            return false
        }
        continuation.resume(with: result)
        return true
    }
}

/// Runs `body`, throwing `TimedOut` when it takes longer than `seconds`.
/// Unlike a task group, this does not wait for a body that ignores
/// cancellation (awaiting a task's value, say): a broken binding makes the
/// test fail, never hang.
func withTimeout<T: Sendable>(_ seconds: Double, _ what: String = "an operation", _ body: @escaping @Sendable () async throws -> T)
    async throws -> T
{
    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
        let once = ResumeOnce(continuation)
        let work = Task { once.resume(await Result(catching: body)) }
        Task {
            try? await Task.sleep(for: .milliseconds(Int(seconds * 1000)))
            if once.resume(.failure(TimedOut(what: what))) { work.cancel() }
        }
    }
}

extension Result where Failure == any Error {
    init(catching body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}

/// Polls `condition` every 10 ms until it holds or `seconds` pass.
func eventually(_ seconds: Double = 5, _ what: String, _ condition: @Sendable () -> Bool) async throws {
    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
    while !condition() {
        guard ContinuousClock.now < deadline else { throw TimedOut(what: what) }
        try await Task.sleep(for: .milliseconds(10))
    }
}

/// Polls an async `condition` every 10 ms until it holds or `seconds` pass.
func eventuallyAsync(_ seconds: Double = 5, _ what: String, _ condition: () async throws -> Bool) async throws {
    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
    while try await !condition() {
        guard ContinuousClock.now < deadline else { throw TimedOut(what: what) }
        try await Task.sleep(for: .milliseconds(10))
    }
}

/// A thread-safe counter.
final class Counter: Sendable {
    private let value = Atomic<Int>(0)
    @discardableResult func increment() -> Int { value.add(1, ordering: .relaxed).newValue }
    var count: Int { value.load(ordering: .relaxed) }
}

/// A thread-safe box.
final class Box<T: Sendable>: Sendable {
    private let value: Mutex<T>
    init(_ initial: T) { value = Mutex(initial) }
    func get() -> T { value.withLock { $0 } }
    func set(_ newValue: T) { value.withLock { $0 = newValue } }
    func update<R>(_ body: (inout T) -> R) -> R { value.withLock { body(&$0) } }
}

/// Consumes a stream in the background and keeps everything it yields.
final class Recorder<Element: Sendable>: Sendable {
    private let items = Box<[Element]>([])
    private let ended = Box(false)
    private let task: Task<Void, Never>

    init(_ stream: AsyncStream<Element>) {
        let (items, ended) = (self.items, self.ended)
        task = Task {
            for await item in stream { items.update { $0.append(item) } }
            ended.set(true)
        }
    }

    var received: [Element] { items.get() }

    /// Waits until at least `count` items arrived; returns them all.
    @discardableResult
    func wait(count: Int, seconds: Double = 5) async throws -> [Element] {
        try await eventually(seconds, "\(count) items (have \(items.get().count))") { items.get().count >= count }
        return items.get()
    }

    /// Waits until an item satisfies `predicate`; returns everything received so far.
    @discardableResult
    func wait(seconds: Double = 5, until predicate: @escaping @Sendable (Element) -> Bool) async throws -> [Element] {
        try await eventually(seconds, "a matching item") { items.get().contains(where: predicate) }
        return items.get()
    }

    /// Stops consuming (which ends the stream and its subscription).
    func cancel() { task.cancel() }

    /// True once the stream has ended (waits up to `seconds` for it).
    func finished(seconds: Double = 5) async -> Bool {
        (try? await eventually(seconds, "the stream to end") { ended.get() }) != nil
    }
}

// MARK: - D-Bus helpers

/// Runs `body`, which must throw a `DBusError` named `name`; returns it.
@discardableResult
func expectDBusError(
    _ name: String, sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> Void
) async -> DBusError? {
    do {
        try await body()
        Issue.record("expected \(name), but the operation succeeded", sourceLocation: sourceLocation)
        return nil
    } catch let error as DBusError {
        #expect(error.name == name, "expected \(name), got \(error)", sourceLocation: sourceLocation)
        return error
    } catch {
        Issue.record("expected \(name), got \(type(of: error)): \(error)", sourceLocation: sourceLocation)
        return nil
    }
}

/// Parses one introspection XML string into interface descriptions.
func interfaces(_ xml: String) throws -> [InterfaceDescription] {
    try InterfaceDescription.parse(xml: xml)
}

/// A single interface parsed from a `<node>` document.
func interface(_ xml: String) throws -> InterfaceDescription {
    let parsed = try InterfaceDescription.parse(xml: xml)
    guard parsed.count == 1 else { throw DBusEncodingError("expected one interface, got \(parsed.count)") }
    return parsed[0]
}

/// Equality that compares doubles by bit pattern (so NaN equals the same NaN
/// and -0.0 differs from 0.0) and everything else structurally.
func bitwiseEqual(_ a: DBusValue, _ b: DBusValue) -> Bool {
    switch (a, b) {
    case (.double(let x), .double(let y)): return x.bitPattern == y.bitPattern
    case (.array(let e1, let i1), .array(let e2, let i2)):
        return e1 == e2 && i1.count == i2.count && zip(i1, i2).allSatisfy(bitwiseEqual)
    case (.dictionary(let k1, let v1, let d1), .dictionary(let k2, let v2, let d2)):
        return k1 == k2 && v1 == v2 && d1.count == d2.count
            && zip(d1, d2).allSatisfy { bitwiseEqual($0.key, $1.key) && bitwiseEqual($0.value, $1.value) }
    case (.structure(let f1), .structure(let f2)):
        return f1.count == f2.count && zip(f1, f2).allSatisfy(bitwiseEqual)
    case (.variant(let x), .variant(let y)): return bitwiseEqual(x, y)
    default: return a == b
    }
}

/// Every unix fd inside a value.
func fileDescriptors(in value: DBusValue) -> [Int32] {
    switch value {
    case .unixFD(let fd): return [fd]
    case .array(_, let items), .structure(let items): return items.flatMap(fileDescriptors)
    case .dictionary(_, _, let entries): return entries.flatMap { fileDescriptors(in: $0.key) + fileDescriptors(in: $0.value) }
    case .variant(let inner): return fileDescriptors(in: inner)
    default: return []
    }
}

// MARK: - Process measurements

/// Resident set size in bytes (/proc/self/statm, second field, in pages).
func residentBytes() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let fields = text.split(separator: " ")
    guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}

/// User plus system CPU time this process has used, in microseconds.
func processCPUMicroseconds() -> Int64 {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Int64(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1_000_000 + Int64(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec)
}

// MARK: - Naming

let testInterface = "org.widgethost.Test.Echo"
let testPath = "/org/widgethost/Test/Echo"

// MARK: - The echo object

/// An exported echo object: `Echo(v) → v`, `EchoString(s) → s`,
/// `EchoAll(ybnqiuxtdsogh) → ybnqiuxtdsogh` and one `Typed<n>(T) → T` per
/// requested complete type. Every handler returns its arguments unchanged,
/// then closes the descriptors it was handed (the reply holds duplicates).
struct EchoObject {
    let typedMethods: [String: String]  // signature → method name
    let calls = Counter()

    static let basics = "ybnqiuxtdsogh"

    init(on connection: Connection, path: String = testPath, typedSignatures: [String] = []) throws {
        var typed: [String: String] = [:]
        var methods = """
                <method name="Echo"><annotation name="org.gtk.GDBus.C.UnixFD" value="true"/><arg name="value" type="v" direction="in"/><arg name="value" type="v" direction="out"/></method>
                <method name="EchoString"><arg type="s" direction="in"/><arg type="s" direction="out"/></method>
                <method name="EchoAll">\n
            """
        for c in Self.basics {
            methods += "      <arg type=\"\(c)\" direction=\"in\"/><arg type=\"\(c)\" direction=\"out\"/>\n"
        }
        methods += "    </method>\n"
        for (index, signature) in Set(typedSignatures).sorted().enumerated() {
            let name = "Typed\(index)"
            typed[signature] = name
            methods += "    <method name=\"\(name)\"><arg type=\"\(signature)\" direction=\"in\"/><arg type=\"\(signature)\" direction=\"out\"/></method>\n"
        }
        let description = try interface("<node><interface name=\"\(testInterface)\">\n\(methods)</interface></node>")
        var exported = ExportedInterface(description)
        let calls = self.calls
        let echo = MethodHandler.deferred { call, reply in
            calls.increment()
            reply.succeed(call.arguments)
            for fd in call.arguments.flatMap(fileDescriptors(in:)) { close(fd) }
        }
        for method in description.methods { exported.method(method.name, echo) }
        try connection.export([exported], at: path)
        typedMethods = typed
    }
}
