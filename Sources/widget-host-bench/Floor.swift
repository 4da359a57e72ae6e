import ArgumentParser
import CDBus
import DBus
import Foundation
import PrivateBus
import WidgetHostInterfaces

#if canImport(Glibc)
import Glibc
#endif

/// Direct libdbus, with no binding in between: the floor every benchmark
/// compares against. It is the benchmark's own (the binding knows nothing of
/// what is measured), and the one place besides the binding that calls
/// libdbus: a direct libdbus round trip is what it measures. These functions BLOCK; run them on a dedicated thread,
/// never on a task of the cooperative pool.
enum DirectLibdbus {
    static let echoInterface = "org.widgethost.Bench.Echo"
    static let echoPath = "/org/widgethost/Bench/Echo"

    /// A plain libdbus echo server on its own connection. `run()` serves until `stop()`.
    final class EchoServer: @unchecked Sendable {
        let raw: OpaquePointer
        let uniqueName: String
        private let stopping = Locked(false)
        /// Whether the next call answered gets its size kept, and the size kept.
        fileprivate let measuring = Locked((next: false, bytes: 0))

        /// With `answeringEveryCall`, every other method call gets an empty
        /// reply too: the quickest possible app for a host to deliver to.
        init(address: String, answeringEveryCall: Bool = false) throws {
            let raw = try openRegistered(address)
            uniqueName = String(cString: dbus_bus_get_unique_name(raw))
            self.raw = raw
            dbus_connection_add_filter(raw, answeringEveryCall ? answerFilter : echoFilter, Unmanaged.passUnretained(self).toOpaque(), nil)
        }

        /// The size on the wire of the next call this app answers, once `send`
        /// has caused it; while `run()` serves.
        func bytesOfNextCall(after send: () throws -> Void) throws -> Int {
            measuring.withLock { $0 = (true, 0) }
            try send()
            for _ in 0..<2_000 {
                if case let (false, bytes) = measuring.withLock({ $0 }) { return bytes }
                usleep(1_000)
            }
            throw DBusError.failed("the app was sent no call")
        }

        /// A blocking call from this connection; only before `run()`.
        func call(_ message: Message) throws -> Message {
            Message(owning: try withCError { dbus_connection_send_with_reply_and_block(raw, message.raw, 25_000, $0) })
        }

        /// Blocks, answering echo calls, until `stop()`.
        func run() { serve(raw, until: stopping) }

        func stop() { stopping.withLock { $0 = true } }
    }

    /// A blocking libdbus client.
    final class Client: @unchecked Sendable {
        let raw: OpaquePointer

        init(address: String) throws {
            let raw = try openRegistered(address)
            self.raw = raw
        }

        deinit {
            dbus_connection_close(raw)
            dbus_connection_unref(raw)
        }

        private func makeCall(_ destination: String, _ payload: String) -> OpaquePointer {
            let message = dbus_message_new_method_call(destination, echoPath, echoInterface, "Echo")!
            var iter = DBusMessageIter()
            dbus_message_iter_init_append(message, &iter)
            payload.withCString { p in
                var pointer: UnsafePointer<CChar>? = p
                _ = dbus_message_iter_append_basic(&iter, TypeCode.string, &pointer)
            }
            return message
        }

        /// One echo round trip with `dbus_connection_send_with_reply_and_block`; returns nanoseconds.
        func roundTrip(to destination: String, payload: String) throws -> UInt64 {
            let message = makeCall(destination, payload)
            defer { dbus_message_unref(message) }
            let start = monotonicNanoseconds()
            let reply = try withCError { dbus_connection_send_with_reply_and_block(raw, message, 25_000, $0) }
            let end = monotonicNanoseconds()
            dbus_message_unref(reply)
            return end - start
        }

        /// A blocking call; returns the reply. An error reply throws.
        func call(_ message: Message) throws -> Message {
            Message(owning: try withCError { dbus_connection_send_with_reply_and_block(raw, message.raw, 25_000, $0) })
        }

        /// The size on the wire of the reply to `message`. An error reply throws.
        func replyBytes(_ message: Message) throws -> Int {
            let reply = try withCError { dbus_connection_send_with_reply_and_block(raw, message.raw, 25_000, $0) }
            defer { dbus_message_unref(reply) }
            return wireBytes(reply)
        }

        /// One blocking round trip of `message`; returns nanoseconds. An error reply throws.
        func roundTrip(_ message: Message) throws -> UInt64 {
            let start = monotonicNanoseconds()
            let reply = try withCError { dbus_connection_send_with_reply_and_block(raw, message.raw, 25_000, $0) }
            let end = monotonicNanoseconds()
            dbus_message_unref(reply)
            return end - start
        }

        /// `total` calls with `window` in flight at a time; returns calls per second.
        func pipelined(to destination: String, payload: String, total: Int, window: Int) -> Double {
            pipelined(total: total, window: window) { makeCall(destination, payload) }
        }

        /// `total` calls made by `make` with `window` in flight; returns calls per second.
        /// Throws when any call is answered with an error.
        func pipelined(total: Int, window: Int, make: () throws -> Message) throws -> Double {
            var failed: String?
            let rate = pipelined(total: total, window: window) {
                guard let message = try? make() else { return nil }
                dbus_message_ref(message.raw)
                return message.raw
            } onError: { failed = $0 }
            if let failed { throw DBusError.failed("a pipelined call failed: \(failed)") }
            return rate
        }

        /// What a stream of calls got: replies, `LimitExceeded` refusals among
        /// them, and the first other error, if any.
        struct Streamed: Sendable {
            var answered = 0
            var refused = 0
            var error: String?

            static let limitExceeded = "org.widgethost.Host1.Error.LimitExceeded"

            mutating func count(_ error: String?) {
                answered += 1
                if error == Self.limitExceeded {
                    refused += 1
                } else if let error, self.error == nil {
                    self.error = error
                }
            }

            /// The replies that were not refusals.
            var acknowledged: Int { answered - refused }
        }

        /// Calls made by `make`, `window` in flight, until `stop` says so.
        func stream(window: Int, until stop: Locked<Bool>, make: () throws -> Message) -> Streamed {
            var sent = 0
            var streamed = Streamed()
            while streamed.answered < sent || !stop.withLock({ $0 }) {
                while !stop.withLock({ $0 }) && sent - streamed.answered < window {
                    guard let message = try? make() else { return Streamed(answered: streamed.answered, error: "could not build a call") }
                    dbus_connection_send(raw, message.raw, nil)
                    sent += 1
                }
                guard readReplies(timeout: 100, { streamed.count($0) }) else { break }
            }
            return streamed
        }

        /// Calls made by `make`, `perSecond` of them a second on a steady
        /// schedule whatever the replies, the first `phase` (0 to 1) of an
        /// interval from now, until `stop` says so.
        func paced(perSecond: Int, phase: Double, until stop: Locked<Bool>, make: () throws -> Message) -> Streamed {
            let interval = 1_000_000_000 / UInt64(perSecond)
            let start = monotonicNanoseconds() + UInt64(Double(interval) * phase)
            var sent: UInt64 = 0
            var streamed = Streamed()
            while UInt64(streamed.answered) < sent || !stop.withLock({ $0 }) {
                let now = monotonicNanoseconds()
                let due = start + sent * interval
                if !stop.withLock({ $0 }) && now >= due {
                    guard let message = try? make() else { return Streamed(answered: streamed.answered, error: "could not build a call") }
                    dbus_connection_send(raw, message.raw, nil)
                    sent += 1
                    continue
                }
                let wait = now >= due ? 100 : Int32((due - now + 999_999) / 1_000_000)
                guard readReplies(timeout: wait, { streamed.count($0) }) else { break }
            }
            return streamed
        }

        /// Flushes, waits up to `timeout` ms (-1: until something arrives) and
        /// calls `answered` for each reply read, with the error name of an error
        /// reply. False once the connection is gone.
        private func readReplies(timeout: Int32, _ answered: (String?) -> Void) -> Bool {
            dbus_connection_flush(raw)
            guard dbus_connection_read_write(raw, timeout) != 0 else { return false }
            while let message = dbus_connection_pop_message(raw) {
                switch dbus_message_get_type(message) {
                case Int32(DBUS_MESSAGE_TYPE_METHOD_RETURN):
                    answered(nil)
                case Int32(DBUS_MESSAGE_TYPE_ERROR):
                    answered(dbus_message_get_error_name(message).map { String(cString: $0) } ?? "an error")
                default:
                    break
                }
                dbus_message_unref(message)
            }
            return true
        }

        private func pipelined(
            total: Int, window: Int, make: () -> OpaquePointer?, onError: (String) -> Void = { _ in }
        ) -> Double {
            let start = monotonicNanoseconds()
            var sent = 0
            var received = 0
            while received < total {
                while sent < total && sent - received < window {
                    guard let message = make() else { return 0 }
                    dbus_connection_send(raw, message, nil)
                    dbus_message_unref(message)
                    sent += 1
                }
                guard readReplies(timeout: -1, { received += 1; if let error = $0 { onError(error) } }) else { break }
            }
            let seconds = Double(monotonicNanoseconds() - start) / 1e9
            return Double(received) / seconds
        }
    }

    /// The ceiling for a host: a plain libdbus relay that turns each call it
    /// gets into the five messages a tap costs a host (the call read, a
    /// delivery call to `app`, the app's reply read, the reply and a signal),
    /// with no work of its own. It writes what the host writes for the
    /// benchmark's widget, entry for entry (the taps benchmark prints both
    /// sizes), so the two differ only in the work between the messages.
    /// `run()` serves until `stop()`.
    final class Relay: @unchecked Sendable {
        /// The delivery's deadline, as the host gives one: milliseconds since 1970, 25 s from now.
        static var deadline: Int64 { Int64((Date().timeIntervalSince1970 + 25) * 1000) }

        let raw: OpaquePointer
        let app: String
        /// The path the host serves the benchmark's widget at, which its Tapped signal names.
        let widget: String
        private let stopping = Locked(false)

        init(address: String, app: String, widget: String) throws {
            let raw = try openRegistered(address)
            self.raw = raw
            self.app = app
            self.widget = widget
            dbus_connection_add_filter(raw, relayFilter, Unmanaged.passUnretained(self).toOpaque(), nil)
        }

        var uniqueName: String { String(cString: dbus_bus_get_unique_name(raw)) }

        /// Blocks, relaying calls, until `stop()`.
        func run() { serve(raw, until: stopping) }

        func stop() { stopping.withLock { $0 = true } }

        fileprivate func relay(_ call: OpaquePointer) {
            let delivery = dbus_message_new_method_call(app, "/org/example/Bench", App1.name, App1.Method.openURL.rawValue)!
            var iter = DBusMessageIter()
            dbus_message_iter_init_append(delivery, &iter)
            appendString(&iter, "bench://open")
            appendDictionary(&iter, [
                ("org.widgethost.deadline", .int64(Self.deadline)),
                ("org.widgethost.source", .dictionary([
                    ("element_id", .string("t")), ("family", .string("systemSmall")), ("kind", .string("K")),
                    ("surface", .string("desktop")), ("via", .string("widget-url")), ("widget_id", .string("w1")),
                ])),
            ])
            var pending: OpaquePointer?
            dbus_connection_send_with_reply(raw, delivery, &pending, cdbus_timeout_infinite())
            dbus_message_unref(delivery)
            guard let pending else { return }
            let waiting = Unmanaged.passRetained(RelayedCall(relay: self, call: Message(owning: dbus_message_ref(call)))).toOpaque()
            dbus_pending_call_set_notify(pending, relayReplied, waiting, releaseRelayedCall)
            dbus_pending_call_unref(pending)
        }

        fileprivate func answer(_ call: OpaquePointer) {
            let details: [(String, Entry)] = [
                ("app_id", .string("org.example.Bench")), ("diagnostics", .strings([])),
                ("url", .string("bench://open")), ("via", .string("widget-url")),
            ]
            let reply = dbus_message_new_method_return(call)!
            var iter = DBusMessageIter()
            dbus_message_iter_init_append(reply, &iter)
            appendString(&iter, "open-url")
            appendDictionary(&iter, details)
            dbus_connection_send(raw, reply, nil)
            dbus_message_unref(reply)
            let signal = dbus_message_new_signal(Host1Widgets.objectPath, Host1Widgets.name, Host1Widgets.Signal.tapped.rawValue)!
            dbus_message_iter_init_append(signal, &iter)
            widget.withCString { p in
                var pointer: UnsafePointer<CChar>? = p
                _ = dbus_message_iter_append_basic(&iter, TypeCode.objectPath, &pointer)
            }
            appendString(&iter, "open-url")
            appendDictionary(&iter, details)
            dbus_connection_send(raw, signal, nil)
            dbus_message_unref(signal)
        }
    }
}

/// `widget-host-bench relay`: ``DirectLibdbus/Relay`` as a process of its own,
/// as the host is one, so that its CPU time and its allocations are counted
/// the same way as the host's. Prints its unique name, then relays until its
/// standard input closes.
struct RelayCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "relay", abstract: "The taps benchmark's relay, run by it as a process of its own.", shouldDisplay: false)

    @Option(help: "The bus to connect to.") var address: String
    @Option(help: "The unique name of the app to deliver to.") var app: String
    @Option(help: "The path of the widget its Tapped signals name.") var widget: String

    func run() throws {
        let relay = try DirectLibdbus.Relay(address: address, app: app, widget: widget)
        say(relay.uniqueName)
        Thread {
            var byte: UInt8 = 0
            while read(0, &byte, 1) > 0 {}
            relay.stop()
        }.start()
        relay.run()
    }
}

/// A started `widget-host-bench relay`; ``stop()`` ends it.
final class RelayProcess: Sendable {
    let uniqueName: String
    let processIdentifier: Int32
    private let input: FileHandle
    private let process: Locked<Process>

    /// Starts the relay with `environment` added to this process's, and waits
    /// until it has joined the bus.
    init(address: String, app: String, widget: String, adding environment: [String: String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: benchExecutable)
        process.arguments = ["relay", "--address", address, "--app", app, "--widget", widget]
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try PrivateBus.withCleanSignalMask { try process.run() }
        guard let name = PrivateBus.firstLine(of: output) else {
            process.terminate()
            throw PrivateBusError("the relay did not start")
        }
        uniqueName = name
        processIdentifier = process.processIdentifier
        self.input = input.fileHandleForWriting
        self.process = Locked(process)
    }

    /// Closes the relay's input, which ends it, and waits until it has.
    func stop() {
        try? input.close()
        process.withLock { $0.waitUntilExit() }
    }
}

/// Answers `Echo(s) → s` with the same string.
private let echoFilter: DBusHandleMessageFunction = { connection, message, _ in
    guard let connection, let message,
        dbus_message_is_method_call(message, DirectLibdbus.echoInterface, "Echo") != 0
    else { return DBUS_HANDLER_RESULT_NOT_YET_HANDLED }
    var iter = DBusMessageIter()
    var text: UnsafePointer<CChar>? = nil
    if dbus_message_iter_init(message, &iter) != 0, dbus_message_iter_get_arg_type(&iter) == TypeCode.string {
        dbus_message_iter_get_basic(&iter, &text)
    }
    guard let reply = dbus_message_new_method_return(message) else { return DBUS_HANDLER_RESULT_NEED_MEMORY }
    var out = DBusMessageIter()
    dbus_message_iter_init_append(reply, &out)
    let empty: StaticString = ""
    var pointer = text ?? UnsafeRawPointer(empty.utf8Start).assumingMemoryBound(to: CChar.self)
    _ = dbus_message_iter_append_basic(&out, TypeCode.string, &pointer)
    dbus_connection_send(connection, reply, nil)
    dbus_message_unref(reply)
    return DBUS_HANDLER_RESULT_HANDLED
}

/// Answers every method call with an empty reply (and `Echo` with its argument).
private let answerFilter: DBusHandleMessageFunction = { connection, message, data in
    guard let connection, let message, dbus_message_get_type(message) == Int32(DBUS_MESSAGE_TYPE_METHOD_CALL) else {
        return DBUS_HANDLER_RESULT_NOT_YET_HANDLED
    }
    if echoFilter(connection, message, data) == DBUS_HANDLER_RESULT_HANDLED { return DBUS_HANDLER_RESULT_HANDLED }
    if let data {
        Unmanaged<DirectLibdbus.EchoServer>.fromOpaque(data).takeUnretainedValue().measuring.withLock {
            if $0.next { $0 = (false, wireBytes(message)) }
        }
    }
    guard dbus_message_get_no_reply(message) == 0 else { return DBUS_HANDLER_RESULT_HANDLED }
    guard let reply = dbus_message_new_method_return(message) else { return DBUS_HANDLER_RESULT_NEED_MEMORY }
    dbus_connection_send(connection, reply, nil)
    dbus_message_unref(reply)
    return DBUS_HANDLER_RESULT_HANDLED
}

private func appendString(_ iter: inout DBusMessageIter, _ text: String) {
    text.withCString { p in
        var pointer: UnsafePointer<CChar>? = p
        _ = dbus_message_iter_append_basic(&iter, TypeCode.string, &pointer)
    }
}

/// The bytes `message` takes on the wire, header and body.
private func wireBytes(_ message: OpaquePointer) -> Int {
    var bytes: UnsafeMutablePointer<CChar>?
    var length: Int32 = 0
    guard dbus_message_marshal(message, &bytes, &length) != 0 else { return 0 }
    dbus_free(bytes)
    return Int(length)
}

/// A value of a relayed dictionary.
private enum Entry {
    case string(String)
    case int64(Int64)
    case strings([String])
    case dictionary([(String, Entry)])

    var signature: String {
        switch self {
        case .string: "s"
        case .int64: "x"
        case .strings: "as"
        case .dictionary: "a{sv}"
        }
    }
}

/// Appends an `a{sv}` of `entries`, in the order given.
private func appendDictionary(_ iter: inout DBusMessageIter, _ entries: [(String, Entry)]) {
    var array = DBusMessageIter()
    dbus_message_iter_open_container(&iter, TypeCode.array, "{sv}", &array)
    for (key, value) in entries {
        var entry = DBusMessageIter()
        dbus_message_iter_open_container(&array, TypeCode.dictEntry, nil, &entry)
        appendString(&entry, key)
        var variant = DBusMessageIter()
        dbus_message_iter_open_container(&entry, TypeCode.variant, value.signature, &variant)
        switch value {
        case .string(let text):
            appendString(&variant, text)
        case .int64(var number):
            _ = dbus_message_iter_append_basic(&variant, TypeCode.int64, &number)
        case .strings(let texts):
            var strings = DBusMessageIter()
            dbus_message_iter_open_container(&variant, TypeCode.array, "s", &strings)
            for text in texts { appendString(&strings, text) }
            dbus_message_iter_close_container(&variant, &strings)
        case .dictionary(let nested):
            appendDictionary(&variant, nested)
        }
        dbus_message_iter_close_container(&entry, &variant)
        dbus_message_iter_close_container(&array, &entry)
    }
    dbus_message_iter_close_container(&iter, &array)
}

/// Relays every method call to the relay's app.
private let relayFilter: DBusHandleMessageFunction = { _, message, data in
    guard let message, let data, dbus_message_get_type(message) == Int32(DBUS_MESSAGE_TYPE_METHOD_CALL) else {
        return DBUS_HANDLER_RESULT_NOT_YET_HANDLED
    }
    Unmanaged<DirectLibdbus.Relay>.fromOpaque(data).takeUnretainedValue().relay(message)
    return DBUS_HANDLER_RESULT_HANDLED
}

/// A relayed call waiting for the app's answer.
private final class RelayedCall {
    let relay: DirectLibdbus.Relay
    let call: Message
    init(relay: DirectLibdbus.Relay, call: Message) {
        self.relay = relay
        self.call = call
    }
}

/// The app answered: reply to the original call and emit the signal.
private let relayReplied: DBusPendingCallNotifyFunction = { pending, data in
    guard let pending, let data else { return }
    if let reply = dbus_pending_call_steal_reply(pending) { dbus_message_unref(reply) }
    let waiting = Unmanaged<RelayedCall>.fromOpaque(data).takeUnretainedValue()
    waiting.relay.answer(waiting.call.raw)
}

private let releaseRelayedCall: DBusFreeFunction = { data in
    guard let data else { return }
    Unmanaged<RelayedCall>.fromOpaque(data).release()
}

/// A private connection, registered with the bus; blocks while it connects.
func openRegistered(_ address: String) throws -> OpaquePointer {
    precondition(threadsInitialized)
    let raw = try withCError { dbus_connection_open_private(address, $0) }
    dbus_connection_set_exit_on_disconnect(raw, 0)
    _ = try withCError { dbus_bus_register(raw, $0) != 0 ? true : nil }
    return raw
}

/// Runs libdbus's own blocking loop on `raw` until `stopping` is set, then closes and releases it.
private func serve(_ raw: OpaquePointer, until stopping: Locked<Bool>) {
    while !stopping.withLock({ $0 }) {
        if dbus_connection_read_write_dispatch(raw, 100) == 0 { break }
    }
    dbus_connection_close(raw)
    dbus_connection_unref(raw)
}
