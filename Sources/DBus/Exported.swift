import Synchronization

/// An incoming method call.
public struct MethodCall: Sendable {
    public let message: Message
    /// The caller's unique name.
    public let sender: String
    public let path: String
    public let interface: String
    public let member: String
    /// The arguments, copied out of the message before the handler runs
    /// (``MethodHandler/reading(_:)`` reads them itself, and they are read
    /// here only when asked for).
    public var arguments: [DBusValue] { read ?? message.arguments() }
    private let read: [DBusValue]?

    init(message: Message, sender: String, path: String, interface: String, member: String, arguments: [DBusValue]?) {
        self.message = message
        self.sender = sender
        self.path = path
        self.interface = interface
        self.member = member
        read = arguments
    }
}

/// An error that knows its D-Bus name. Handlers may throw these (or
/// `DBusError`); anything else is answered with `org.freedesktop.DBus.Error.Failed`.
public protocol DBusErrorConvertible: Error {
    var dbusError: DBusError { get }
}

extension DBusError: DBusErrorConvertible {
    public var dbusError: DBusError { self }
}

func dbusError(from error: any Error) -> DBusError {
    if let convertible = error as? any DBusErrorConvertible { return convertible.dbusError }
    if error is DBusEncodingError { return .invalidArgs(String(describing: error)) }
    return .failed(String(describing: error))
}

/// The answer to one method call, sent once. A reply dropped unanswered
/// answers the caller with an error, so no caller waits forever.
public final class Reply: Sendable {
    private let connection: Connection
    private let call: Message
    private let outSignature: String
    private let interface: String
    private let member: String
    /// The method, for messages: built only when one is needed.
    private var what: String { interface + "." + member }
    private let sent = Atomic<Bool>(false)

    init(connection: Connection, call: Message, outSignature: String, interface: String, member: String) {
        self.connection = connection
        self.call = call
        self.outSignature = outSignature
        self.interface = interface
        self.member = member
    }

    deinit {
        if !sent.load(ordering: .acquiring) {
            transmit(.failure(DBusError.failed("\(what) was dropped without an answer")))
        }
    }

    /// Replies with values; they must match the method's declared out-signature.
    public func succeed(_ values: [DBusValue] = []) {
        guard !sent.exchange(true, ordering: .acquiringAndReleasing) else { return }
        guard DBusValue.signatures(of: values, equal: outSignature) else {
            let signature = values.map(\.signature).joined()
            transmit(.failure(DBusError.failed("internal error: \(what) produced '\(signature)' instead of '\(outSignature)'")))
            return
        }
        transmit(.success(values))
    }

    /// Replies with the values `body` writes (see ``MessageWriter``); they
    /// must match the method's declared out-signature.
    public func succeed(writing body: (inout MessageWriter) throws -> Void) {
        guard !sent.exchange(true, ordering: .acquiringAndReleasing), !call.noReplyExpected else { return }
        let message: Message?
        do {
            let reply = try call.makeReturn(writing: body)
            message =
                reply.hasSignature(outSignature)
                ? reply : call.makeError(.failed("internal error: \(what) produced '\(reply.signature)' instead of '\(outSignature)'"))
        } catch {
            message = call.makeError(Self.unsendable(what, error))
        }
        if let message { try? connection.send(message) }
    }

    /// Replies with an error.
    public func fail(_ error: any Error) {
        guard !sent.exchange(true, ordering: .acquiringAndReleasing) else { return }
        transmit(.failure(error))
    }

    /// The error that replaces a reply that could not be made: LimitsExceeded
    /// for one over D-Bus's limits (sending it would cost the connection).
    static func unsendable(_ what: String, _ error: any Error) -> DBusError {
        if let error = error as? DBusError, error.name == DBusError.limitsExceededName {
            return .limitsExceeded("the reply of \(what) is too large to send: \(error.message)")
        }
        return .failed("internal error: \(what) produced a bad reply: \(error)")
    }

    private func transmit(_ result: Result<[DBusValue], any Error>) {
        guard !call.noReplyExpected else { return }
        let message: Message?
        switch result {
        case .success(let values):
            do { message = try call.makeReturn(values) } catch {
                message = call.makeError(Self.unsendable(what, error))
            }
        case .failure(let error):
            message = call.makeError(dbusError(from: error))
        }
        if let message { try? connection.send(message) }
    }
}

/// How a method is implemented.
public enum MethodHandler: Sendable {
    /// Runs on the connection's thread and answers at once. Must not block.
    case immediate(@Sendable (MethodCall) throws -> [DBusValue])
    /// Runs on the connection's thread; answers through `Reply` whenever it likes.
    case deferred(@Sendable (MethodCall, Reply) -> Void)
    /// Runs in a new task, which the connection holds and cancels when it is lost.
    case async(@Sendable (MethodCall) async throws -> [DBusValue])
    /// Runs on the connection's thread, reads its arguments from the message
    /// itself, typed (``MessageReader``, within the connection's decoding
    /// limits), and answers through `Reply` whenever it likes. It may throw
    /// only while it reads, before it answers: what it throws answers the
    /// call, and a call over the limits is answered as the limits say.
    case reading(@Sendable (MethodCall, inout MessageReader, Reply) throws -> Void)
}

/// Accessors of one property. The getter runs on the connection's thread.
///
/// A getter may take the object's path, so one interface value (and its
/// handlers) can serve many objects: exporting the same `ExportedInterface`
/// at a thousand paths then shares its storage instead of copying it.
public struct PropertyHandler: Sendable {
    /// Reads the property of the object at the given path.
    public var getAt: @Sendable (String) -> DBusValue
    public var set: (@Sendable (DBusValue) throws -> Void)?

    public init(get: @escaping @Sendable () -> DBusValue, set: (@Sendable (DBusValue) throws -> Void)? = nil) {
        self.getAt = { _ in get() }
        self.set = set
    }

    /// A getter that is told which object is being read.
    public init(getAt: @escaping @Sendable (String) -> DBusValue) {
        self.getAt = getAt
        self.set = nil
    }
}

/// An interface implementation: the description (from XML) plus one handler
/// per method and accessors per property.
public struct ExportedInterface: Sendable {
    public let description: InterfaceDescription
    var methods: [String: MethodHandler] = [:]
    var properties: [String: PropertyHandler] = [:]
    /// Reads every readable property at once (see `readAll(_:)`).
    var readAll: (@Sendable (String) -> [DBusValue])?

    public init(_ description: InterfaceDescription) {
        self.description = description
    }

    public mutating func method(_ name: String, _ handler: MethodHandler) {
        methods[name] = handler
    }

    public mutating func property(_ name: String, _ handler: PropertyHandler) {
        properties[name] = handler
    }

    /// Reads every readable property of the object at a path in one step,
    /// in declared order, for `GetAll`, `GetManagedObjects` and
    /// `InterfacesAdded`: an object whose properties come from one record
    /// is then read once instead of once per property.
    public mutating func readAll(_ read: @escaping @Sendable (String) -> [DBusValue]) {
        readAll = read
    }

    /// Throws unless every declared method and property has a handler and every handler is declared.
    public func validate() throws {
        for method in description.methods where methods[method.name] == nil {
            throw DBusEncodingError("\(description.name).\(method.name) is declared but has no handler")
        }
        for name in methods.keys where description.method(name) == nil {
            throw DBusEncodingError("\(description.name) has a handler for undeclared method \(name)")
        }
        for property in description.properties where properties[property.name] == nil {
            throw DBusEncodingError("\(description.name).\(property.name) is declared but has no accessors")
        }
        for name in properties.keys where description.property(name) == nil {
            throw DBusEncodingError("\(description.name) has accessors for undeclared property \(name)")
        }
    }

    func values(at path: String) -> DBusValue {
        if let readAll { return description.readableProperties(readAll(path)) }
        var entries: [DBusValue.DictEntry] = []
        for property in description.properties where property.isReadable {
            if let handler = properties[property.name] {
                entries.append(.init(.string(property.name), .variant(handler.getAt(path))))
            }
        }
        return .dictionary(key: "s", value: "v", entries)
    }
}

/// The standard interfaces the binding serves itself.
public enum StandardInterfaces {
    public static let introspectable = "org.freedesktop.DBus.Introspectable"
    public static let properties = "org.freedesktop.DBus.Properties"
    public static let peer = "org.freedesktop.DBus.Peer"
    public static let objectManager = "org.freedesktop.DBus.ObjectManager"
    /// `Properties.GetAll`.
    public static let getAll = "GetAll"
    /// `ObjectManager.GetManagedObjects`.
    public static let getManagedObjects = "GetManagedObjects"
    /// `Peer.Ping`, which libdbus answers by itself on every connection.
    public static let ping = "Ping"

    static let xml = """
        <node>
          <interface name="org.freedesktop.DBus.Introspectable">
            <method name="Introspect"><arg name="xml_data" type="s" direction="out"/></method>
          </interface>
          <interface name="org.freedesktop.DBus.Peer">
            <method name="Ping"/>
            <method name="GetMachineId"><arg name="machine_uuid" type="s" direction="out"/></method>
          </interface>
          <interface name="org.freedesktop.DBus.Properties">
            <method name="Get">
              <arg name="interface_name" type="s" direction="in"/><arg name="property_name" type="s" direction="in"/>
              <arg name="value" type="v" direction="out"/>
            </method>
            <method name="GetAll">
              <arg name="interface_name" type="s" direction="in"/><arg name="props" type="a{sv}" direction="out"/>
            </method>
            <method name="Set">
              <arg name="interface_name" type="s" direction="in"/><arg name="property_name" type="s" direction="in"/>
              <arg name="value" type="v" direction="in"/>
            </method>
            <signal name="PropertiesChanged">
              <arg name="interface_name" type="s"/><arg name="changed_properties" type="a{sv}"/>
              <arg name="invalidated_properties" type="as"/>
            </signal>
          </interface>
          <interface name="org.freedesktop.DBus.ObjectManager">
            <method name="GetManagedObjects">
              <arg name="object_paths_interfaces_and_properties" type="a{oa{sa{sv}}}" direction="out"/>
            </method>
            <signal name="InterfacesAdded">
              <arg name="object_path" type="o"/><arg name="interfaces_and_properties" type="a{sa{sv}}"/>
            </signal>
            <signal name="InterfacesRemoved"><arg name="object_path" type="o"/><arg name="interfaces" type="as"/></signal>
          </interface>
        </node>
        """

    /// Parsed once from the text above.
    public static let descriptions: [String: InterfaceDescription] = {
        // The text is a constant of this file; failing to parse it is a bug here.
        let parsed = (try? InterfaceDescription.parse(xml: xml)) ?? []
        precondition(parsed.count == 4, "standard interface XML failed to parse")
        return Dictionary(uniqueKeysWithValues: parsed.map { ($0.name, $0) })
    }()
}

/// The exported object tree of one connection.
final class ObjectServer: Sendable {
    struct State {
        /// The objects by parent path, then by last element: a service with
        /// many objects side by side (`/…/widgets/w1` … `/…/widgets/w100000`)
        /// keeps each one's short last element, held inline in its `String`,
        /// rather than a whole path on the heap for each.
        var objects: [String: [String: [ExportedInterface]]] = [:] {
            didSet { lastFound = nil }
        }
        var managers: Set<String> = []
        /// What reading one call's arguments may build.
        var limits = DecodingLimits.none
        /// What runs after a `GetManagedObjects` reply of `bytes` or more is queued.
        var afterLargeReply: (bytes: Int, run: @Sendable () -> Void)?

        subscript(path: String) -> [ExportedInterface]? {
            get {
                let (parent, leaf) = ObjectServer.split(path)
                return objects[parent]?[leaf]
            }
            set {
                let (parent, leaf) = ObjectServer.split(path)
                objects[parent, default: [:]][leaf] = newValue
                if objects[parent]?.isEmpty == true { objects[parent] = nil }
            }
        }

        /// The parent path looked up last, reused as the key while calls go
        /// to objects beside each other: a parent such as
        /// `/org/example/items` (of `/org/example/items/i1` …) is then not made a String again for each.
        private var lastParent = ""

        /// The path looked up last and what was found there, until the
        /// objects change: calls in a row to one object find it by comparing
        /// the path, without hashing it.
        private var lastFound: (path: String, interfaces: [ExportedInterface]?)?

        /// The interfaces at `path`, as the subscript reads them.
        mutating func interfaces(at path: String) -> [ExportedInterface]? {
            if let lastFound, lastFound.path == path { return lastFound.interfaces }
            let found: [ExportedInterface]?
            if path != "/", let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) {
                if slash == path.startIndex {
                    lastParent = "/"
                } else if !lastParent.utf8.elementsEqual(path.utf8[..<slash]) {
                    lastParent = String(path[..<slash])
                }
                found = objects[lastParent]?[String(path[path.index(after: slash)...])]
            } else {
                found = objects[""]?[""]
            }
            lastFound = (path, found)
            return found
        }
    }
    let state = Locked(State())
    /// The tasks `.async` handlers run in: cancelled when the connection is lost.
    let handlerTasks = OwnedTasks()

    /// `/a/b/c` → (`/a/b`, `c`); `/a` → (`/`, `a`); `/` → (``, ``).
    static func split(_ path: String) -> (parent: String, leaf: String) {
        guard path != "/", let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else { return ("", "") }
        let parent = slash == path.startIndex ? "/" : String(path[..<slash])
        return (parent, String(path[path.index(after: slash)...]))
    }

    static func join(_ parent: String, _ leaf: String) -> String {
        parent.isEmpty ? "/" : parent == "/" ? "/" + leaf : parent + "/" + leaf
    }

    func interfaces(at path: String) -> [ExportedInterface]? {
        state.withLock { $0.interfaces(at: path) }
    }

    /// The nearest ObjectManager at or above `path`, excluding `path` itself.
    func manager(above path: String) -> String? {
        state.withLock { state in
            var best: String?
            for manager in state.managers where manager != path && ObjectPath.isDescendant(path, of: manager) {
                if best == nil || manager.count > best!.count { best = manager }
            }
            return best
        }
    }

    func children(of path: String) -> [String] {
        state.withLock { state in
            var names = Set<String>()
            let prefix = path == "/" ? "/" : path + "/"
            // The objects right below `path` are its children; deeper ones and
            // object managers give the first element of what follows `path`.
            for leaf in state.objects[path]?.keys ?? [:].keys where !leaf.isEmpty { names.insert(leaf) }
            for candidate in Array(state.objects.keys) + Array(state.managers) where candidate.hasPrefix(prefix) && candidate != path {
                let rest = candidate.dropFirst(prefix.count)
                if let first = rest.split(separator: "/").first { names.insert(String(first)) }
            }
            return names.sorted()
        }
    }

    func checkSignal(path: String, interface: String, member: String, arguments: [DBusValue]) throws {
        let signal = try declaredSignal(path: path, interface: interface, member: member)
        guard DBusValue.signatures(of: arguments, equal: signal.signature) else {
            throw Self.wrongSignature(signal, interface, signature: arguments.map(\.signature).joined())
        }
    }

    /// The signal `member` of `interface`, which the object at `path` must serve.
    func declaredSignal(path: String, interface: String, member: String) throws -> InterfaceDescription.Signal {
        // Read in place: the interface copied out of the object's list, and
        // the standard interfaces hashed for every signal, cost more than the
        // rest of the check.
        let declared: InterfaceDescription.Signal??
        if interface.utf8.starts(with: "org.freedesktop.DBus.".utf8), let standard = StandardInterfaces.descriptions[interface] {
            declared = .some(standard.signal(member))
        } else {
            declared = interfaces(at: path)?.withUnsafeBufferPointer { exported in
                exported.firstIndex { $0.description.name == interface }.map { exported[$0].description.signal(member) }
            }
        }
        guard let declared else {
            throw DBusEncodingError("no interface \(interface) is exported at \(path)")
        }
        guard let signal = declared else {
            throw DBusEncodingError("\(interface) declares no signal \(member)")
        }
        return signal
    }

    static func wrongSignature(_ signal: InterfaceDescription.Signal, _ interface: String, signature: String) -> DBusEncodingError {
        DBusEncodingError("\(interface).\(signal.name) has signature '\(signal.signature)', not '\(signature)'")
    }

    func introspect(path: String) -> String {
        let exported = interfaces(at: path)
        let isManager = state.withLock { $0.managers.contains(path) }
        var out = introspectionDocType + "<node>\n"
        let standard = StandardInterfaces.descriptions
        out += standard[StandardInterfaces.introspectable]!.xml()
        out += standard[StandardInterfaces.peer]!.xml()
        if exported != nil { out += standard[StandardInterfaces.properties]!.xml() }
        if isManager { out += standard[StandardInterfaces.objectManager]!.xml() }
        for interface in exported ?? [] { out += interface.description.xml() }
        for child in children(of: path) { out += "  <node name=\"\(escape(child))\"/>\n" }
        return out + "</node>\n"
    }

    /// Writes `GetManagedObjects` of the manager at `manager` — every object
    /// below it, by path, with its interfaces' properties — as the objects
    /// are walked: each object's properties are read and written into the
    /// message in turn, so a reply listing many objects is held once, as the
    /// message's bytes, never first as values.
    func writeManagedObjects(under manager: String, into writer: inout MessageWriter) throws {
        // The objects are taken by parent and last element, without building
        // their paths: the objects below a parent are below the manager when
        // the parent is the manager or lies below it.
        var objects = state.withLock { state in
            Array(
                state.objects.lazy.filter { parent, _ in !parent.isEmpty && ObjectPath.isDescendant(parent, of: manager) }
                    .flatMap { parent, leaves in leaves.lazy.map { (parent: parent, leaf: $0.key, interfaces: $0.value) } })
        }
        // By path: beside each other, the paths of one parent sort as their last elements do.
        objects.sort { a, b in a.parent == b.parent ? a.leaf < b.leaf : Self.join(a.parent, a.leaf) < Self.join(b.parent, b.leaf) }
        try writer.appendArray(of: "{oa{sa{sv}}}") { entries in
            for object in objects {
                let path = Self.join(object.parent, object.leaf)
                try entries.appendDictEntry { entry in
                    try entry.append(objectPath: path)
                    try entry.appendArray(of: "{sa{sv}}") { interfaces in
                        for interface in object.interfaces {
                            try interfaces.appendDictEntry { properties in
                                try properties.append(interface.description.name)
                                try properties.append(value: interface.values(at: path))
                            }
                        }
                    }
                }
            }
        }
    }

    static func interfacesAndProperties(_ interfaces: [ExportedInterface], at path: String) -> DBusValue {
        .dictionary(
            key: "s", value: "a{sv}",
            interfaces.map { .init(.string($0.description.name), $0.values(at: path)) })
    }

    // MARK: Dispatch

    /// Handles one method call. Runs on the connection's thread.
    func handle(_ message: Message, on connection: Connection) {
        let path = message.path ?? "/"
        let member = message.member ?? ""
        // The interface is compared in place; its name is made a String only for a message.
        let hasInterface = message.hasInterface
        var interfaceName: String? { message.interface }
        let exported = interfaces(at: path)

        func fail(_ name: String, _ text: String) {
            guard !message.noReplyExpected, let reply = message.makeError(DBusError(name: name, message: text)) else { return }
            try? connection.send(reply)
        }
        func answer(_ values: [DBusValue]) {
            guard !message.noReplyExpected else { return }
            do {
                try connection.send(message.makeReturn(values))
            } catch {
                let error = Reply.unsendable("\(interfaceName ?? "").\(member)", error)
                if let reply = message.makeError(error) { try? connection.send(reply) }
            }
        }

        // Introspectable works on every node, including the inner ones.
        if message.hasInterface(StandardInterfaces.introspectable) || (!hasInterface && member == "Introspect") {
            guard member == "Introspect" else {
                return fail(DBusError.unknownMethodName, "org.freedesktop.DBus.Introspectable has no method \(member)")
            }
            guard message.signature.isEmpty else {
                return fail(DBusError.invalidArgsName, "Introspect takes no arguments, got '\(message.signature)'")
            }
            if exported == nil && children(of: path).isEmpty && !state.withLock({ $0.managers.contains(path) }) && path != "/" {
                return fail(DBusError.unknownObjectName, "No object at \(path)")
            }
            return answer([.string(introspect(path: path))])
        }

        if message.hasInterface(StandardInterfaces.objectManager), state.withLock({ $0.managers.contains(path) }) {
            guard member == "GetManagedObjects" else {
                return fail(DBusError.unknownMethodName, "org.freedesktop.DBus.ObjectManager has no method \(member)")
            }
            return answerManagedObjects(message, under: path, on: connection)
        }

        guard let exported else {
            return fail(DBusError.unknownObjectName, "No object at \(path)")
        }

        // A call may carry file descriptors only where its method declares
        // them (``InterfaceDescription/Method/takesUnixFDs``): any other is refused before its arguments are read
        // (reading an `h` duplicates the descriptor), and releasing the message
        // closes them. A descriptor a caller can make a service hold — say,
        // inside a variant — is one it can make the service run out of.
        func refuseDescriptors(_ method: String) {
            fail(
                DBusError.invalidArgsName,
                "\(method) takes no unix file descriptors, but the call carried some (type 'h'); send the call without them — they were closed unread")
        }
        if message.hasInterface(StandardInterfaces.properties) {
            if message.containsUnixFDs { return refuseDescriptors("\(StandardInterfaces.properties).\(member)") }
            return handleProperties(message, member: member, exported: exported, path: path, connection: connection, fail: fail, answer: answer)
        }

        // The interface is found by its index and read in place: a copy of
        // it (its description, its tables) cost a retain and a release of
        // each of its references on every call.
        let found: Int?
        if hasInterface {
            found = exported.firstIndex { message.hasInterface($0.description.name) }
            guard found != nil else {
                return fail(DBusError.unknownInterfaceName, "The object at \(path) has no interface \(interfaceName ?? "")")
            }
        } else {
            found = exported.firstIndex { $0.methods[member] != nil }
        }
        // Through a buffer pointer: an array's subscript copied the whole interface out first.
        let entry = found.flatMap { found in
            exported.withUnsafeBufferPointer { interfaces in
                interfaces[found].methods[member].map { (interfaces[found].description.method(member), $0, interfaces[found].description.name) }
            }
        }
        guard let entry, let method = entry.0 else {
            return fail(
                DBusError.unknownMethodName,
                "\(interfaceName ?? "The object at \(path)") has no method \(member)")
        }
        let (handler, name) = (entry.1, entry.2)
        if message.containsUnixFDs && !method.takesUnixFDs {
            return refuseDescriptors("\(name).\(member)")
        }
        guard message.hasSignature(method.inSignature) else {
            let expected = method.inSignature.isEmpty ? "takes no arguments" : "takes arguments of type '\(method.inSignature)'"
            return fail(
                DBusError.invalidArgsName,
                "\(name).\(member) \(expected), but the call carried '\(message.signature)'")
        }
        let limits = state.withLock { $0.limits }
        func overLimits(_ error: any Error) -> DBusError {
            DBusError(name: limits.errorName, message: "\(name).\(member): \(error); send less in one call")
        }
        let reply = Reply(
            connection: connection, call: message, outSignature: method.outSignature, interface: name,
            member: member)
        if case .reading(let body) = handler {
            let call = MethodCall(
                message: message, sender: message.sender ?? "", path: path, interface: name, member: member,
                arguments: nil)
            var reader = MessageReader(message, limits: limits)
            do {
                try body(call, &reader, reply)
            } catch let error as DecodingLimitExceeded {
                reply.fail(overLimits(error))
            } catch {
                reply.fail(error)
            }
            return
        }
        let arguments: [DBusValue]
        do {
            arguments = try message.arguments(within: limits)
        } catch {
            let error = overLimits(error)
            return fail(error.name, error.message)
        }
        let call = MethodCall(
            message: message, sender: message.sender ?? "", path: path, interface: name,
            member: member, arguments: arguments)
        switch handler {
        case .reading:
            preconditionFailure("answered above")
        case .immediate(let body):
            do { reply.succeed(try body(call)) } catch { reply.fail(error) }
        case .deferred(let body):
            body(call, reply)
        case .async(let body):
            // Held by the server, and cancelled when the connection is lost.
            handlerTasks.start {
                do { reply.succeed(try await body(call)) } catch { reply.fail(error) }
            }
        }
    }

    /// Answers `GetManagedObjects` with a reply written as the objects are
    /// walked (see ``writeManagedObjects(under:into:)``); one over D-Bus's
    /// limits is a LimitsExceeded error. After a large one, the connection's
    /// ``Connection/afterLargeReply(ofAtLeast:_:)`` runs.
    private func answerManagedObjects(_ message: Message, under manager: String, on connection: Connection) {
        guard !message.noReplyExpected else { return }
        let reply: Message
        let bytes: Int
        do {
            reply = try message.makeReturn()
            bytes = try reply.write { try writeManagedObjects(under: manager, into: &$0) }
        } catch {
            let error = Reply.unsendable("\(StandardInterfaces.objectManager).\(StandardInterfaces.getManagedObjects)", error)
            if let reply = message.makeError(error) { try? connection.send(reply) }
            return
        }
        try? connection.send(reply)
        if let large = state.withLock({ $0.afterLargeReply }), bytes >= large.bytes { large.run() }
    }

    private func handleProperties(
        _ message: Message, member: String, exported: [ExportedInterface], path: String, connection: Connection,
        fail: (String, String) -> Void, answer: ([DBusValue]) -> Void
    ) {
        guard let method = StandardInterfaces.descriptions[StandardInterfaces.properties]!.method(member) else {
            return fail(DBusError.unknownMethodName, "org.freedesktop.DBus.Properties has no method \(member)")
        }
        guard message.signature == method.inSignature else {
            return fail(
                DBusError.invalidArgsName,
                "Properties.\(member) takes '\(method.inSignature)', but the call carried '\(message.signature)'")
        }
        let limits = state.withLock { $0.limits }
        let args: [DBusValue]
        do { args = try message.arguments(within: limits) } catch {
            return fail(limits.errorName, "Properties.\(member): \(error); send less in one call")
        }
        let interfaceName = args[0].stringValue ?? ""
        guard let interface = exported.first(where: { $0.description.name == interfaceName }) else {
            return fail(DBusError.unknownInterfaceName, "The object at \(path) has no interface '\(interfaceName)'")
        }
        if member == "GetAll" { return answer([interface.values(at: path)]) }
        let propertyName = args[1].stringValue ?? ""
        guard let property = interface.description.property(propertyName), let handler = interface.properties[propertyName] else {
            return fail(DBusError.unknownPropertyName, "\(interfaceName) has no property '\(propertyName)'")
        }
        if member == "Get" {
            guard property.isReadable else {
                return fail(DBusError.failedName, "\(interfaceName).\(propertyName) is write-only")
            }
            return answer([.variant(handler.getAt(path))])
        }
        // Set
        guard property.access != .read, let setter = handler.set else {
            return fail(DBusError.propertyReadOnlyName, "\(interfaceName).\(propertyName) is read-only")
        }
        guard case .variant(let value) = args[2], value.signature == property.type else {
            return fail(
                DBusError.invalidArgsName,
                "\(interfaceName).\(propertyName) has type '\(property.type)', not '\(args[2].unwrapped.signature)'")
        }
        do {
            try setter(value)
        } catch {
            let e = dbusError(from: error)
            return fail(e.name, e.message)
        }
        answer([])
        if property.emitsChangedSignal == "true" || property.emitsChangedSignal == "invalidates" {
            try? connection.emitPropertiesChanged(path: path, interface: interfaceName, properties: [propertyName])
        }
    }
}

extension Connection {
    /// Serves `interfaces` at `path` (replacing what was there). Every
    /// declared method must have a handler. Under an ObjectManager this emits
    /// `InterfacesAdded`, unless `announce` is false: for objects served
    /// before the name is owned, which nobody can be watching yet (a client
    /// that comes later asks `GetManagedObjects`).
    /// Bounds what reading each call to this connection's objects may build:
    /// a call over them is answered with `limits.errorName` before any handler runs.
    public func setDecodingLimits(_ limits: DecodingLimits) {
        objects.state.withLock { $0.limits = limits }
    }

    /// Runs `body` on the connection's thread after each `GetManagedObjects`
    /// reply of `bytes` or more is queued for sending. Writing such a reply
    /// reads every object's properties, which leaves many small blocks freed
    /// behind it; a service can give their pages back to the system here (off
    /// this thread: that can take milliseconds).
    public func afterLargeReply(ofAtLeast bytes: Int, _ body: @escaping @Sendable () -> Void) {
        objects.state.withLock { $0.afterLargeReply = (bytes, body) }
    }

    public func export(_ interfaces: [ExportedInterface], at path: String, announce: Bool = true) throws {
        guard ObjectPath.isValid(path) else { throw DBusEncodingError("'\(path)' is not a valid object path") }
        for interface in interfaces { try interface.validate() }
        objects.state.withLock { $0[path] = interfaces }
        if announce, let manager = objects.manager(above: path) {
            try? emit(
                path: manager, interface: StandardInterfaces.objectManager, member: "InterfacesAdded",
                arguments: [.objectPath(path), ObjectServer.interfacesAndProperties(interfaces, at: path)])
        }
    }

    /// Serves the same `interfaces` at every one of `paths`, checking them
    /// once and announcing nothing: for the objects a service puts back
    /// before it owns its name (see ``export(_:at:announce:)``).
    public func export(_ interfaces: [ExportedInterface], at paths: [String]) throws {
        for path in paths where !ObjectPath.isValid(path) { throw DBusEncodingError("'\(path)' is not a valid object path") }
        for interface in interfaces { try interface.validate() }
        objects.state.withLock { state in
            // Objects exported together usually share their parent: room for all at once.
            if let first = paths.first {
                let parent = ObjectServer.split(first).parent
                state.objects[parent, default: [:]].reserveCapacity((state.objects[parent]?.count ?? 0) + paths.count)
            }
            for path in paths { state[path] = interfaces }
        }
    }

    /// Stops serving `path`. Under an ObjectManager this emits `InterfacesRemoved`.
    public func unexport(_ path: String) {
        let removed = objects.state.withLock { state in
            defer { state[path] = nil }
            return state[path]
        }
        guard let removed, let manager = objects.manager(above: path) else { return }
        try? emit(
            path: manager, interface: StandardInterfaces.objectManager, member: "InterfacesRemoved",
            arguments: [.objectPath(path), .strings(removed.map(\.description.name))])
    }

    /// Stops serving every object, quietly: for a server that stops, so the
    /// handlers it exported (and what they hold) are released.
    public func unexportAll() {
        objects.state.withLock { $0 = ObjectServer.State() }
    }

    /// Serves `org.freedesktop.DBus.ObjectManager` at `path` for every object below it.
    public func addObjectManager(at path: String) {
        _ = objects.state.withLock { $0.managers.insert(path) }
    }

    /// Emits `PropertiesChanged` for the named properties, honouring each
    /// property's `EmitsChangedSignal` annotation.
    public func emitPropertiesChanged(path: String, interface: String, properties names: [String]) throws {
        guard let exported = objects.interfaces(at: path)?.first(where: { $0.description.name == interface }) else {
            throw DBusEncodingError("no interface \(interface) is exported at \(path)")
        }
        var changed: [DBusValue.DictEntry] = []
        var invalidated: [String] = []
        // An object read in one step is read once, however many properties changed.
        let all = exported.readAll.map { read in
            Dictionary(zip(exported.description.properties.filter(\.isReadable).map(\.name), read(path))) { a, _ in a }
        }
        for name in names {
            guard let property = exported.description.property(name), let handler = exported.properties[name] else {
                throw DBusEncodingError("\(interface) has no property \(name)")
            }
            switch property.emitsChangedSignal {
            case "true": changed.append(.init(.string(name), .variant(all?[name] ?? handler.getAt(path))))
            case "invalidates": invalidated.append(name)
            default: continue
            }
        }
        guard !changed.isEmpty || !invalidated.isEmpty else { return }
        try emit(
            path: path, interface: StandardInterfaces.properties, member: "PropertiesChanged",
            arguments: [.string(interface), .dictionary(key: "s", value: "v", changed), .strings(invalidated)])
    }
}
