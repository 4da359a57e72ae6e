import CDBus
import DBus
import Foundation
import PrivateBus

#if canImport(Glibc)
import Glibc
#endif

extension DirectLibdbus {
    /// The ceiling of a durable write: a libdbus server doing no work but what
    /// acknowledging only what is on disk needs. It is sent the host's own
    /// calls (`SetContent`, `Update`: the same bytes on the bus), and each is
    /// handed to a writer thread, which appends the call's first argument as
    /// a line, as it came (the host's journal line holds that text too), and
    /// covers all that arrived meanwhile with one `fdatasync` (group commit),
    /// then hands the calls back to the connection's thread, which replies.
    /// Two thread hand-offs and a sync, as in widget-hostd, and nothing else.
    final class DurableRelay: @unchecked Sendable {
        let raw: OpaquePointer
        let uniqueName: String
        private let stopping = Locked(false)
        private let file: Int32
        private let extraSyncDelay: UInt32
        /// Calls waiting for the writer, and calls on disk waiting for their reply.
        private let toWrite = Locked<[OpaquePointer]>([]), written = Locked<[OpaquePointer]>([])
        private let writerWakes = DispatchSemaphore(value: 0)
        /// Written by the writer to wake the connection's thread.
        private var wake: [Int32] = [-1, -1]
        /// The connection's and the writer's thread, for their CPU time.
        private let threads = Locked<[clockid_t]>([])

        /// The CPU time both of the relay's threads have spent, in seconds.
        var cpuSeconds: Double { threads.withLock { $0 }.reduce(0) { $0 + threadCPUSeconds($1) } }

        /// Notes the calling thread's CPU clock.
        private func counted() {
            var clock = clockid_t()
            if pthread_getcpuclockid(pthread_self(), &clock) == 0 { threads.withLock { $0.append(clock) } }
        }

        /// `path` is the journal file (on the disk measured); `extraSyncDelay`
        /// microseconds are added to each sync, as the slow-sync shim adds to the host's.
        init(address: String, path: String, extraSyncDelay: UInt32 = 0) throws {
            raw = try openRegistered(address)
            uniqueName = String(cString: dbus_bus_get_unique_name(raw))
            file = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
            self.extraSyncDelay = extraSyncDelay
            guard file >= 0, pipe(&wake) == 0, fcntl(wake[0], F_SETFL, O_NONBLOCK) == 0 else {
                throw PrivateBusError("cannot open \(path) or a pipe: \(String(cString: strerror(errno)))")
            }
            dbus_connection_add_filter(raw, durableFilter, Unmanaged.passUnretained(self).toOpaque(), nil)
        }

        fileprivate func received(_ call: OpaquePointer) {
            dbus_message_ref(call)
            toWrite.withLock { $0.append(call) }
            writerWakes.signal()
        }

        /// Blocks, serving, until `stop()`; starts the writer thread.
        func run() {
            counted()
            let writer = Thread { self.write() }
            writer.start()
            var fd: Int32 = -1
            _ = dbus_connection_get_unix_fd(raw, &fd)
            while !stopping.withLock({ $0 }) {
                var fds = [
                    pollfd(fd: fd, events: Int16(POLLIN) | (dbus_connection_has_messages_to_send(raw) != 0 ? Int16(POLLOUT) : 0), revents: 0),
                    pollfd(fd: wake[0], events: Int16(POLLIN), revents: 0),
                ]
                if dbus_connection_get_dispatch_status(raw) != DBUS_DISPATCH_DATA_REMAINS { _ = poll(&fds, 2, 100) }
                if fds[1].revents != 0 {
                    var drain = [UInt8](repeating: 0, count: 64)
                    _ = read(wake[0], &drain, drain.count)
                }
                for call in written.withLock({ calls in defer { calls = [] }; return calls }) {
                    if let reply = dbus_message_new_method_return(call) {
                        dbus_connection_send(raw, reply, nil)
                        dbus_message_unref(reply)
                    }
                    dbus_message_unref(call)
                }
                guard dbus_connection_read_write(raw, 0) != 0 else { break }
                while dbus_connection_dispatch(raw) == DBUS_DISPATCH_DATA_REMAINS {}
            }
            writerWakes.signal()
            dbus_connection_close(raw)
            dbus_connection_unref(raw)
            close(wake[0])
            close(wake[1])
            close(file)
        }

        /// The writer thread: one append and one sync for everything queued meanwhile.
        private func write() {
            counted()
            var bytes: [UInt8] = []
            while true {
                writerWakes.wait()
                if stopping.withLock({ $0 }) { return }
                let calls = toWrite.withLock { calls in defer { calls = [] }; return calls }
                guard !calls.isEmpty else { continue }
                bytes.removeAll(keepingCapacity: true)
                for call in calls {
                    var iter = DBusMessageIter()
                    var text: UnsafePointer<CChar>? = nil
                    if dbus_message_iter_init(call, &iter) != 0, dbus_message_iter_get_arg_type(&iter) == TypeCode.string {
                        dbus_message_iter_get_basic(&iter, &text)
                    }
                    if let text { bytes.append(contentsOf: UnsafeRawBufferPointer(start: text, count: strlen(text))) }
                    bytes.append(0x0A)
                }
                _ = bytes.withUnsafeBytes { Glibc.write(file, $0.baseAddress, $0.count) }
                if extraSyncDelay > 0 { usleep(extraSyncDelay) }
                _ = fdatasync(file)
                written.withLock { $0 += calls }
                var one: UInt8 = 1
                _ = Glibc.write(wake[1], &one, 1)
            }
        }

        func stop() {
            stopping.withLock { $0 = true }
            writerWakes.signal()
        }
    }
}

/// Hands every method call to the durable relay's writer.
private let durableFilter: DBusHandleMessageFunction = { _, message, data in
    guard let message, let data, dbus_message_get_type(message) == Int32(DBUS_MESSAGE_TYPE_METHOD_CALL) else {
        return DBUS_HANDLER_RESULT_NOT_YET_HANDLED
    }
    Unmanaged<DirectLibdbus.DurableRelay>.fromOpaque(data).takeUnretainedValue().received(message)
    return DBUS_HANDLER_RESULT_HANDLED
}
