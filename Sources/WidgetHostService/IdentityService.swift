import DBus
import Dispatch
import WidgetHostCore
import WidgetHostSystem

/// Who is calling (docs/apps.md#identity-who-may-act-for-an-app): each connection's
/// sandbox identity, read from the kernel once — on its first app-owned call,
/// never on a tap — and cached until the connection leaves the bus.
///
/// A lookup needs the bus (`GetConnectionCredentials`) and the disk (`/proc`),
/// so it never runs on the connection's thread; while it runs, it holds its
/// caller (``SenderLines/hold(_:)``): the caller's later calls wait behind it,
/// so one sender's calls still take effect in the order it sent them. Other
/// senders are not held up.
extension HostService {
    /// The job of the connection's thread that runs `sender`'s next turn
    /// (``SenderLines/turn(of:)``): between two jobs the thread reads and
    /// dispatches what arrived, so one sender's burst never holds up the others.
    nonisolated func scheduleTurn(of sender: String) {
        connection.async { self.assumeIsolated { $0.senders.turn(of: sender) } }
    }

    /// Runs `body` with `handlers` and the caller's identity — and, when
    /// `name` is given, the unique name owning that bus name now — answering
    /// `reply` with what it returns or throws. At once when the identity is
    /// cached and no name is asked for.
    func withCaller<T, Handlers>(
        _ sender: String, nameOwnerOf name: String? = nil, reply: TypedReply<T>, handlers: Confined<Handlers>,
        _ body: @escaping @Sendable (Handlers, CallerIdentity, String?) throws -> T
    ) {
        if name == nil, let known = senders.known(sender) {
            return stores.storage.answerOnceStored(reply) { try body(handlers.part(on: self), try known.get(), nil) }
        }
        senders.hold(sender)
        spawn { service in
            do {
                let identity = try await service.identity(of: sender)
                let owner: String? = if let name { try await service.connection.nameOwner(name) } else { nil }
                // What a connection that left meanwhile would leave behind — a
                // registration, say — would outlive it for good: nothing is stored.
                if service.senders.hasLeft(sender) {
                    reply.fail(HostError.accessDenied("the calling connection left the bus before its call took effect; nothing was stored"))
                } else {
                    service.stores.storage.answerOnceStored(reply) { try body(handlers.part(on: service), identity, owner) }
                }
            } catch {
                reply.fail(error)
            }
            service.senders.release(sender)
        }
    }

    /// The identity of `sender`'s process, from the cache or the kernel.
    private func identity(of sender: String) async throws -> CallerIdentity {
        if let known = senders.known(sender) { return try known.get() }
        let credentials = try await connection.credentials(of: sender)
        let result: Result<CallerIdentity, HostError> = await withCheckedContinuation { continuation in
            DispatchQueue.global(qos: .userInitiated).async {
                continuation.resume(returning: CallerIdentity.read(credentials))
            }
        }
        // Cached only while the connection is still on the bus (see connectionClosed).
        senders.remember(result, for: sender)
        logger.debug("caller identity", metadata: ["sender": "\(sender)", "identity": "\(result)"])
        return try result.get()
    }
}
