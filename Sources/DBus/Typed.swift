/// The typed face of the binding that generated interface code builds on:
/// replies whose values are Swift types, decoding of arguments, and typed
/// calls of the standard interfaces for clients.

/// The answer to one call whose out-arguments are the Swift value `Value`
/// (a tuple when there are several, `Void` when there are none). Generated
/// binders hand one to each method of a server protocol; like `Reply`, it is
/// answered once, from any thread, and a dropped one answers with an error.
public struct TypedReply<Value>: Sendable {
    /// The untyped reply, for what needs the call's message.
    public let untyped: Reply
    private let write: @Sendable (inout MessageWriter, Value) throws -> Void

    /// `write` writes a `Value` into the reply's message.
    public init(_ reply: Reply, writing write: @escaping @Sendable (inout MessageWriter, Value) throws -> Void) {
        self.untyped = reply
        self.write = write
    }

    public func succeed(_ value: Value) { untyped.succeed { try write(&$0, value) } }

    public func fail(_ error: any Error) { untyped.fail(error) }

    /// Answers with what `body` returns, or with the error it throws.
    public func answer(_ body: () throws -> Value) {
        send(Result { try body() })
    }

    /// Answers with a value or an error.
    public func send(_ result: Result<Value, any Error>) {
        switch result {
        case .success(let value): succeed(value)
        case .failure(let error): fail(error)
        }
    }
}

extension TypedReply where Value == Void {
    public func succeed() { untyped.succeed([]) }
}

/// A value that is not of the type an interface declares: a reply or signal
/// from a peer that does not follow the declaration.
public func typeMismatch(_ what: String, expected signature: String, got value: DBusValue) -> DBusError {
    .invalidArgs("\(what) must be of type '\(signature)', not '\(value.signature)'")
}

extension InterfaceDescription {
    /// The readable properties as `GetAll` answers them (`a{sv}`), given their
    /// values in declared order.
    public func readableProperties(_ values: [DBusValue]) -> DBusValue {
        let readable = properties.filter(\.isReadable)
        return .dictionary(key: "s", value: "v", zip(readable, values).map { .init(.string($0.name), .variant($1)) })
    }

    /// The one interface an introspection document declares. For documents
    /// checked at build time (generated code), so a failure is a bug there.
    public static func declared(_ xml: String) -> InterfaceDescription {
        guard let parsed = try? parse(xml: xml), parsed.count == 1 else {
            preconditionFailure("an interface declaration checked at build time failed to parse")
        }
        return parsed[0]
    }
}

// MARK: - The standard interfaces, for clients

extension Connection {
    /// `org.freedesktop.DBus.Properties.GetAll`: every readable property of
    /// `interface` at `path`, the variants unwrapped.
    public nonisolated(nonsending) func allProperties(
        destination: String, path: String, interface: String, timeout: Duration? = nil
    ) async throws -> [String: DBusValue] {
        let reply = try await call(
            destination: destination, path: path, interface: StandardInterfaces.properties, member: StandardInterfaces.getAll, [.string(interface)],
            timeout: timeout)
        guard reply.count == 1, let entries = reply[0].stringKeyedEntries else {
            throw typeMismatch("the reply of GetAll", expected: "a{sv}", got: .structure(reply))
        }
        return entries.mapValues(\.variantContent)
    }

    /// `org.freedesktop.DBus.ObjectManager.GetManagedObjects` of the manager
    /// at `path`: each object's properties by interface.
    public nonisolated(nonsending) func managedObjects(
        destination: String, path: String, timeout: Duration? = nil
    ) async throws -> [String: [String: [String: DBusValue]]] {
        let reply = try await call(
            destination: destination, path: path, interface: StandardInterfaces.objectManager, member: StandardInterfaces.getManagedObjects,
            timeout: timeout)
        guard reply.count == 1, let objects = reply[0].stringKeyedEntries else {
            throw typeMismatch("the reply of GetManagedObjects", expected: "a{oa{sa{sv}}}", got: .structure(reply))
        }
        return objects.mapValues(StandardSignal.interfacesAndProperties)
    }
}

/// A signal of the standard interfaces that clients mirroring an object
/// tree follow.
public enum StandardSignal: Sendable, Equatable {
    /// `ObjectManager.InterfacesAdded`: the object at `path` and its properties by interface.
    case interfacesAdded(path: String, interfaces: [String: [String: DBusValue]])
    /// `ObjectManager.InterfacesRemoved`.
    case interfacesRemoved(path: String, interfaces: [String])
    /// `Properties.PropertiesChanged` of the object at `path`.
    case propertiesChanged(path: String, interface: String, changed: [String: DBusValue], invalidated: [String])

    /// The signal `message` carries, or nil when it is none of these.
    public init?(_ message: Message) {
        let args = message.arguments()
        switch (message.interface, message.member) {
        case (StandardInterfaces.objectManager, "InterfacesAdded"):
            guard args.count == 2, case .objectPath(let path) = args[0] else { return nil }
            self = .interfacesAdded(path: path, interfaces: Self.interfacesAndProperties(args[1]))
        case (StandardInterfaces.objectManager, "InterfacesRemoved"):
            guard args.count == 2, case .objectPath(let path) = args[0] else { return nil }
            self = .interfacesRemoved(path: path, interfaces: (args[1].arrayElements ?? []).compactMap(\.stringValue))
        case (StandardInterfaces.properties, "PropertiesChanged"):
            guard args.count == 3, let interface = args[0].stringValue else { return nil }
            self = .propertiesChanged(
                path: message.path ?? "", interface: interface,
                changed: (args[1].stringKeyedEntries ?? [:]).mapValues(\.variantContent),
                invalidated: (args[2].arrayElements ?? []).compactMap(\.stringValue))
        default:
            return nil
        }
    }

    /// `a{sa{sv}}` as properties by interface, the variants unwrapped.
    static func interfacesAndProperties(_ value: DBusValue) -> [String: [String: DBusValue]] {
        (value.stringKeyedEntries ?? [:]).mapValues { ($0.stringKeyedEntries ?? [:]).mapValues(\.variantContent) }
    }
}

extension DBusValue {
    /// The content of one variant (a value that is no variant as it is).
    /// Unlike `unwrapped`, a variant holding a variant keeps the inner one.
    public var variantContent: DBusValue {
        if case .variant(let inner) = self { return inner }
        return self
    }
}

extension DBusValue {
    /// Whether `values`, one after another, have the types `signature` spells
    /// (a method's in- or out-signature).
    public static func values(_ values: [DBusValue], haveSignature signature: String) -> Bool {
        signatures(of: values, equal: signature)
    }
}
