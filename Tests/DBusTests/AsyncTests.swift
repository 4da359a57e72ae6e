import DBus
import Dispatch
import Foundation
import Testing

/// An object whose methods answer late, never, or wrongly.
final class SlowObject: Sendable {
    static let xml = """
        <node>
          <interface name="\(testInterface)">
            <method name="Hang"><arg type="s" direction="out"/></method>
            <method name="SlowDeferred"><arg type="s" direction="out"/></method>
            <method name="SlowAsync"><arg type="s" direction="out"/></method>
            <method name="Fast"><arg type="i" direction="in"/><arg type="i" direction="out"/></method>
            <method name="Drop"><arg type="s" direction="out"/></method>
            <method name="Twice"><arg type="s" direction="out"/></method>
            <method name="WrongOut"><arg type="s" direction="out"/></method>
            <method name="Throws"><arg type="s" direction="in"/></method>
            <method name="AsyncThrows"/>
          </interface>
        </node>
        """
    struct Refusal: DBusErrorConvertible {
        var dbusError: DBusError { DBusError(name: "org.widgethost.Test.Error.Refused", message: "refused on purpose") }
    }
    struct PlainError: Error {}

    /// Replies to Hang, kept alive so no answer is sent.
    let held = Box<[Reply]>([])
    let hangs = Counter()
    let started = Counter()
    /// SlowAsync handlers that returned or threw.
    let ended = Counter()
    /// The slow methods answer only once this is set.
    let release = Box(false)

    init(on connection: Connection) throws {
        var exported = ExportedInterface(try interface(Self.xml))
        let (held, hangs, started, ended, release) = (self.held, self.hangs, self.started, self.ended, self.release)
        exported.method(
            "Hang",
            .deferred { _, reply in
                held.update { $0.append(reply) }
                hangs.increment()
            })
        exported.method(
            "SlowDeferred",
            .deferred { _, reply in
                started.increment()
                // Answers from another thread, once released.
                @Sendable func poll() {
                    if release.get() { return reply.succeed([.string("deferred")]) }
                    DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(5), execute: poll)
                }
                poll()
            })
        exported.method(
            "SlowAsync",
            .async { _ in
                started.increment()
                defer { ended.increment() }
                while !release.get() { try await Task.sleep(for: .milliseconds(5)) }
                return [.string("async")]
            })
        exported.method("Fast", .immediate { call in call.arguments })
        exported.method("Drop", .deferred { _, _ in })
        exported.method(
            "Twice",
            .deferred { _, reply in
                reply.succeed([.string("first")])
                reply.succeed([.string("second")])
                reply.fail(DBusError.failed("third"))
            })
        exported.method("WrongOut", .immediate { _ in [.int32(1)] })
        exported.method(
            "Throws",
            .immediate { call in
                if call.arguments.first == .string("named") { throw Refusal() }
                throw PlainError()
            })
        exported.method("AsyncThrows", .async { _ in throw DBusError(name: "org.widgethost.Test.Error.Async", message: "from a task") })
        try connection.export([exported], at: testPath)
    }
}

extension Connection {
    /// Calls a method of the test interface on `destination`.
    func test(_ destination: String, _ member: String, _ args: [DBusValue] = [], timeout: Duration? = nil) async throws -> [DBusValue] {
        try await call(destination: destination, path: testPath, interface: testInterface, member: member, args, timeout: timeout)
    }
}

@Suite("Asynchronous behaviour")
struct AsyncTests {
    @Test("an .async handler still running when its connection is lost is cancelled, not left running")
    func asyncHandlerEndsWithItsConnection() async throws {
        try await withBus { fixture in
            let server = try await fixture.connect("server")
            let client = try await fixture.connect("client")
            let object = try SlowObject(on: server)
            let destination = try #require(server.uniqueName)
            let call = Task { try await client.test(destination, "SlowAsync") }
            try await eventually(5, "the handler to start") { object.started.count == 1 }
            #expect(object.ended.count == 0)
            server.close()
            // Never released: only its cancellation ends it.
            try await eventually(5, "the handler to be cancelled") { object.ended.count == 1 }
            #expect(!object.release.get())
            _ = try? await withTimeout(30, "the call to end") { try await call.value }
        }
    }

    @Test("a call times out with NoReply after about its timeout")
    func timeout() async throws {
        try await withBus { fixture in
            let server = try await fixture.connect("server")
            let client = try await fixture.connect("client")
            let object = try SlowObject(on: server)
            let destination = try #require(server.uniqueName)

            let start = ContinuousClock.now
            let error = await expectDBusError(DBusError.noReplyName) {
                _ = try await withTimeout(10, "the call to time out") { try await client.test(destination, "Hang", timeout: .milliseconds(500)) }
            }
            let elapsed = ContinuousClock.now - start
            #expect(error != nil)
            // About the timeout: not early, and nowhere near the 25 s default (generous for a loaded machine).
            #expect(elapsed >= .milliseconds(480), "timed out after \(elapsed)")
            #expect(elapsed < .seconds(10), "timed out after \(elapsed)")
            #expect(object.hangs.count == 1)
            // The late answer goes nowhere; the connection carries on.
            object.held.set([])
            #expect(try await client.test(destination, "Fast", [.int32(3)]) == [.int32(3)])
            #expect(client.isConnected)
        }
    }

    @Test("zero, negative and huge timeouts neither crash nor hang")
    func oddTimeouts() async throws {
        try await withBus { fixture in
            let server = try await fixture.connect("server")
            let client = try await fixture.connect("client")
            let object = try SlowObject(on: server)
            let destination = try #require(server.uniqueName)
            for timeout: Duration in [.zero, .milliseconds(-5), .seconds(-10), .nanoseconds(1)] {
                let start = ContinuousClock.now
                await expectDBusError(DBusError.noReplyName) {
                    _ = try await withTimeout(5, "timeout \(timeout)") { try await client.test(destination, "Hang", timeout: timeout) }
                }
                #expect(ContinuousClock.now - start < .seconds(10), "timeout \(timeout)")
            }
            // A timeout beyond what libdbus can express waits like an infinite one; the call still answers.
            for huge: Duration in [.seconds(10_000_000), .seconds(Int64.max)] {
                #expect(try await client.test(destination, "Fast", [.int32(2)], timeout: huge) == [.int32(2)])
            }
            await expectDBusError(DBusError.noReplyName) { _ = try await client.test(destination, "Hang", timeout: .seconds(Int64.min)) }
            object.held.set([])
        }
    }

    @Test("one timer serves every call's timeout: each call expires at its own deadline, in deadline order")
    func deadlines() async throws {
        try await withBus { fixture in
            let server = try await fixture.connect("server")
            let client = try await fixture.connect("client")
            let object = try SlowObject(on: server)
            let destination = try #require(server.uniqueName)
            // (timeout, error name, time from start) in the order the calls expired, recorded on the connection's thread.
            let expired = Box<[(Int, String, Duration)]>([])
            let start = ContinuousClock.now
            // The longest first: each shorter call must pull the timer earlier.
            for ms in [900, 600, 300] {
                let message = try Message.methodCall(destination: destination, path: testPath, interface: testInterface, member: "Hang")
                client.send(message, timeout: .milliseconds(ms)) { result in
                    let name: String
                    switch result {
                    case .success: name = "answered"
                    case .failure(let error): name = (error as? DBusError)?.name ?? "\(error)"
                    }
                    expired.update { $0.append((ms, name, ContinuousClock.now - start)) }
                }
            }
            try await eventually(10, "all three calls to expire") { expired.get().count == 3 }
            let results = expired.get()
            #expect(results.map(\.0) == [300, 600, 900])
            #expect(results.allSatisfy { $0.1 == DBusError.noReplyName }, "\(results)")
            for (ms, _, elapsed) in results { #expect(elapsed >= .milliseconds(ms - 5), "the \(ms) ms call expired after \(elapsed)") }
            // Not all at the deadline armed first (the longest): 600 ms apart stays apart.
            #expect(results[2].2 - results[0].2 > .milliseconds(300), "\(results)")
            #expect(object.hangs.count == 3)
            object.held.set([])
            // A call answered in time is not failed later by the timer.
            #expect(try await client.test(destination, "Fast", [.int32(4)], timeout: .milliseconds(300)) == [.int32(4)])
            try await Task.sleep(for: .milliseconds(400))
            #expect(try await client.test(destination, "Fast", [.int32(5)]) == [.int32(5)])
        }
    }

    @Test("send(_:completion:) answers once on the connection's thread: the reply, an error reply, or NoReply")
    func callbackSend() async throws {
        try await withBus { fixture in
            let server = try await fixture.connect("server")
            let client = try await fixture.connect("client")
            _ = try SlowObject(on: server)
            let destination = try #require(server.uniqueName)
            func send(_ member: String, _ args: [DBusValue], timeout: Duration? = nil) async throws -> (Result<[DBusValue], DBusError>, Bool) {
                let message = try Message.methodCall(
                    destination: destination, path: testPath, interface: testInterface, member: member, arguments: args)
                let calls = Counter()
                let result = try await withTimeout(10, member) {
                    await withCheckedContinuation { continuation in
                        client.send(message, timeout: timeout) { result in
                            calls.increment()
                            precondition(client.isCurrentThread)
                            continuation.resume(returning: result.map { $0.arguments() }.mapError { $0 as? DBusError ?? .failed("\($0)") })
                        }
                    }
                }
                try await Task.sleep(for: .milliseconds(50))
                return (result, calls.count == 1)
            }
            let (fast, once1) = try await send("Fast", [.int32(7)])
            #expect(try fast.get() == [.int32(7)])
            let (refused, once2) = try await send("Throws", [.string("named")])
            #expect(throws: DBusError.self) { try refused.get() }
            if case .failure(let error) = refused { #expect(error.name == "org.widgethost.Test.Error.Refused") }
            let (hung, once3) = try await send("Hang", [], timeout: .milliseconds(200))
            if case .failure(let error) = hung { #expect(error.name == DBusError.noReplyName) } else { Issue.record("Hang answered: \(hung)") }
            #expect(once1 && once2 && once3)
        }
    }

    @Test("cancelling the task of an in-flight call throws CancellationError at once")
    func cancellation() async throws {
        try await withBus { fixture in
            let server = try await fixture.connect("server")
            let client = try await fixture.connect("client")
            let object = try SlowObject(on: server)
            let destination = try #require(server.uniqueName)

            let task = Task { try await client.test(destination, "Hang") }
            try await eventually(5, "the call to arrive") { object.hangs.count == 1 }
            let start = ContinuousClock.now
            task.cancel()
            let result = try await withTimeout(2, "the cancelled call to return") { await task.result }
            let elapsed = ContinuousClock.now - start
            #expect(elapsed < .seconds(10), "cancellation took \(elapsed)")
            #expect(throws: CancellationError.self) { try result.get() }

            // Answering the cancelled call afterwards does no harm.
            object.held.set([])
            // A task cancelled before it calls never sends anything.
            let early = Task {
                withUnsafeCurrentTask { $0?.cancel() }
                return try await client.test(destination, "Hang")
            }
            await #expect(throws: CancellationError.self) { try await withTimeout(2, "the early-cancelled call") { try await early.value } }
            // Many cancelled calls in a row leave the connection healthy.
            for _ in 0..<20 {
                let t = Task { try await client.test(destination, "Hang") }
                try await Task.sleep(for: .milliseconds(2))
                t.cancel()
                _ = try await withTimeout(2, "a cancelled call") { await t.result }
            }
            #expect(try await client.test(destination, "Fast", [.int32(9)]) == [.int32(9)])
            try await Task.sleep(for: .milliseconds(50))
            #expect(object.hangs.count <= 21)
            #expect(client.isConnected)
        }
    }

    @Test(".deferred and .async handlers answer later while fast calls on the same connection complete")
    func slowDoesNotBlockFast() async throws {
        try await withBus { fixture in
            let server = try await fixture.connect("server")
            let client = try await fixture.connect("client")
            let object = try SlowObject(on: server)
            let destination = try #require(server.uniqueName)

            // Two slow calls that cannot finish until released.
            let finished = Counter()
            let deferred = Task {
                defer { finished.increment() }
                return try await client.test(destination, "SlowDeferred")
            }
            let async = Task {
                defer { finished.increment() }
                return try await client.test(destination, "SlowAsync")
            }
            try await eventually(5, "both slow calls to start") { object.started.count == 2 }

            // Meanwhile fast calls on the same connections go through, in both directions of load.
            try await withTimeout(20, "fast calls while slow ones are pending") {
                for i in 0..<100 {
                    #expect(try await client.test(destination, "Fast", [.int32(Int32(i))]) == [.int32(Int32(i))])
                }
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for i in 0..<20 {
                        group.addTask {
                            let back = try await client.test(destination, "Fast", [.int32(Int32(-i))])
                            #expect(back == [.int32(Int32(-i))])
                        }
                    }
                    try await group.waitForAll()
                }
            }
            // The slow ones waited all along, and still do.
            try await Task.sleep(for: .milliseconds(200))
            #expect(finished.count == 0)

            object.release.set(true)
            #expect(try await withTimeout(10, "the deferred reply") { try await deferred.value } == [.string("deferred")])
            #expect(try await withTimeout(10, "the async reply") { try await async.value } == [.string("async")])
            #expect(finished.count == 2)
        }
    }

    @Test("a dropped Reply, a wrong out-signature and thrown errors all answer the caller")
    func handlerFailures() async throws {
        try await withBus { fixture in
            let server = try await fixture.connect("server")
            let client = try await fixture.connect("client")
            _ = try SlowObject(on: server)
            let destination = try #require(server.uniqueName)

            let dropped = await expectDBusError(DBusError.failedName) { _ = try await client.test(destination, "Drop", timeout: .seconds(5)) }
            #expect(dropped?.message.contains("dropped without an answer") == true, "\(String(describing: dropped))")
            let wrong = await expectDBusError(DBusError.failedName) { _ = try await client.test(destination, "WrongOut") }
            #expect(wrong?.message.contains("'i' instead of 's'") == true, "\(String(describing: wrong))")
            await expectDBusError("org.widgethost.Test.Error.Refused") { _ = try await client.test(destination, "Throws", [.string("named")]) }
            await expectDBusError(DBusError.failedName) { _ = try await client.test(destination, "Throws", [.string("plain")]) }
            await expectDBusError("org.widgethost.Test.Error.Async") { _ = try await client.test(destination, "AsyncThrows") }
            // Only the first answer counts.
            #expect(try await client.test(destination, "Twice") == [.string("first")])
            #expect(try await client.test(destination, "Fast", [.int32(1)]) == [.int32(1)])
        }
    }
}
