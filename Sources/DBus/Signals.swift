/// A signal match rule (the `AddMatch` language, signals only).
///
/// Locally a rule is matched on interface, member, path, path namespace and
/// arg0, and on the sender when it is a unique name or the bus itself; a
/// well-known sender name is left to the bus's filtering.
public struct MatchRule: Sendable, Hashable, CustomStringConvertible {
    public var sender: String?
    public var interface: String?
    public var member: String?
    public var path: String?
    public var pathNamespace: String?
    public var arg0: String?

    public init(
        sender: String? = nil, interface: String? = nil, member: String? = nil, path: String? = nil,
        pathNamespace: String? = nil, arg0: String? = nil
    ) {
        self.sender = sender
        self.interface = interface
        self.member = member
        self.path = path
        self.pathNamespace = pathNamespace
        self.arg0 = arg0
    }

    /// The rule in the bus's match-rule syntax.
    public var description: String {
        var parts = ["type='signal'"]
        func add(_ key: String, _ value: String?) {
            guard let value else { return }
            // A quote cannot appear inside quotes: close, escape it, reopen.
            let escaped = value.split(separator: "'", omittingEmptySubsequences: false).joined(separator: "'\\''")
            parts.append("\(key)='\(escaped)'")
        }
        add("sender", sender)
        add("interface", interface)
        add("member", member)
        add("path", path)
        add("path_namespace", pathNamespace)
        add("arg0", arg0)
        return parts.joined(separator: ",")
    }

    func matches(_ message: Message) -> Bool {
        if let interface, message.interface != interface { return false }
        if let member, message.member != member { return false }
        if let path, message.path != path { return false }
        if let pathNamespace {
            guard let p = message.path, ObjectPath.isDescendant(p, of: pathNamespace) else { return false }
        }
        if let sender, sender.hasPrefix(":") || sender == "org.freedesktop.DBus", message.sender != sender {
            return false
        }
        if let arg0 {
            guard case .string(let first)? = message.arguments().first, first == arg0 else { return false }
        }
        return true
    }
}

struct Subscription: Sendable {
    let rule: MatchRule
    let continuation: AsyncStream<Message>.Continuation
}

/// A change of a bus name's owner (`NameOwnerChanged`). Empty strings mean "no owner".
public struct NameOwnerChange: Sendable, Equatable {
    public var name: String
    public var oldOwner: String
    public var newOwner: String
}

/// The bus's answer to `RequestName`.
public enum RequestNameReply: UInt32, Sendable {
    case primaryOwner = 1, inQueue = 2, exists = 3, alreadyOwner = 4
}

/// What the bus knows of a connection's process (`GetConnectionCredentials`).
public struct Credentials: Sendable, Equatable {
    public var unixUserID: UInt32?
    public var processID: UInt32?
    public var securityLabel: String?
    /// A pidfd of the process (`ProcessFD`), where the bus offers one; the
    /// caller owns it and must close it.
    public var processFD: Int32?
}

extension Connection {
    static let busName = "org.freedesktop.DBus"
    static let busPath = "/org/freedesktop/DBus"

    /// Subscribes to signals: adds the match rule on the bus and streams every
    /// matching signal until the stream is dropped, which removes the rule.
    public func signals(_ rule: MatchRule) async throws -> AsyncStream<Message> {
        let (stream, continuation) = AsyncStream<Message>.makeStream(bufferingPolicy: .unbounded)
        let id = state.withLock { state -> UInt64? in
            guard !state.disconnected else { return nil }
            let id = state.nextID
            state.nextID += 1
            state.subscriptions[id] = Subscription(rule: rule, continuation: continuation)
            return id
        }
        guard let id else { throw DBusError.disconnected() }
        continuation.onTermination = { [weak self] _ in
            guard let self else { return }
            _ = self.state.withLock { $0.subscriptions.removeValue(forKey: id) }
            if let message = try? Message.methodCall(
                destination: Self.busName, path: Self.busPath, interface: Self.busName, member: "RemoveMatch",
                arguments: [.string(rule.description)])
            {
                message.noReplyExpected = true
                try? self.send(message)
            }
        }
        do {
            _ = try await call(
                destination: Self.busName, path: Self.busPath, interface: Self.busName, member: "AddMatch",
                [.string(rule.description)])
        } catch {
            continuation.finish()
            throw error
        }
        return stream
    }

    /// Streams `NameOwnerChanged`, optionally for one name only.
    public func nameOwnerChanges(for name: String? = nil) async throws -> AsyncStream<NameOwnerChange> {
        let signals = try await signals(
            MatchRule(sender: Self.busName, interface: Self.busName, member: "NameOwnerChanged", path: Self.busPath, arg0: name))
        return AsyncStream { continuation in
            let task = Task {
                for await message in signals {
                    let args = message.arguments()
                    guard args.count == 3, let n = args[0].stringValue, let o = args[1].stringValue,
                        let w = args[2].stringValue
                    else { continue }
                    continuation.yield(NameOwnerChange(name: n, oldOwner: o, newOwner: w))
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    func deliverSignal(_ message: Message) {
        let targets = state.withLock { state in
            state.subscriptions.values.filter { $0.rule.matches(message) }.map(\.continuation)
        }
        for target in targets { target.yield(message) }
    }

    // MARK: Bus methods

    /// Asks for a well-known name. Pass `doNotQueue` to fail at once when it is taken.
    public func requestName(_ name: String, allowReplacement: Bool = false, replaceExisting: Bool = false, doNotQueue: Bool = true)
        async throws -> RequestNameReply
    {
        var flags: UInt32 = 0
        if allowReplacement { flags |= 1 }
        if replaceExisting { flags |= 2 }
        if doNotQueue { flags |= 4 }
        let reply = try await call(
            destination: Self.busName, path: Self.busPath, interface: Self.busName, member: "RequestName",
            [.string(name), .uint32(flags)])
        guard case .uint32(let code)? = reply.first, let result = RequestNameReply(rawValue: code) else {
            throw DBusError.failed("the bus gave an unexpected answer to RequestName")
        }
        return result
    }

    /// Gives a well-known name back.
    public func releaseName(_ name: String) async throws {
        _ = try await call(
            destination: Self.busName, path: Self.busPath, interface: Self.busName, member: "ReleaseName", [.string(name)])
    }

    /// The unique name owning `name`, or nil when nobody owns it.
    public func nameOwner(_ name: String) async throws -> String? {
        do {
            let reply = try await call(
                destination: Self.busName, path: Self.busPath, interface: Self.busName, member: "GetNameOwner",
                [.string(name)])
            return reply.first?.stringValue
        } catch let error as DBusError where error.name == DBusError.nameHasNoOwnerName {
            return nil
        }
    }

    /// The credentials the bus holds for a connection.
    public func credentials(of name: String) async throws -> Credentials {
        let reply = try await call(
            destination: Self.busName, path: Self.busPath, interface: Self.busName,
            member: "GetConnectionCredentials", [.string(name)])
        let dict = reply.first?.stringKeyedEntries ?? [:]
        var credentials = Credentials()
        if case .uint32(let uid)? = dict["UnixUserID"]?.unwrapped { credentials.unixUserID = uid }
        if case .uint32(let pid)? = dict["ProcessID"]?.unwrapped { credentials.processID = pid }
        if case .unixFD(let fd)? = dict["ProcessFD"]?.unwrapped, fd >= 0 { credentials.processFD = fd }
        if case .array(_, let bytes)? = dict["LinuxSecurityLabel"]?.unwrapped {
            let raw = bytes.compactMap { value -> UInt8? in if case .byte(let b) = value { return b } else { return nil } }
            credentials.securityLabel = String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        return credentials
    }
}
