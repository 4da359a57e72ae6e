import CDBus

/// Writes a message's body as a walk goes: containers are opened, values
/// appended and containers closed straight into the libdbus message, each
/// value checked before libdbus sees it (D-Bus's limits on arrays, on the
/// body and on nesting, as ``Message/append(_:)`` checks them). A reply
/// written this way exists once, as the message's bytes, however many objects
/// it lists: `GetManagedObjects` of a hundred thousand objects never becomes a
/// tree of values first.
struct BodyWriter: ~Copyable {
    /// One open container: its iterator, what it holds, where its elements
    /// start in the body (an array's limit counts from there), and its depth
    /// as the D-Bus validator counts it.
    private struct Frame {
        enum Kind {
            /// An array of `element` (`{kv}` for a dictionary).
            case array(element: String)
            /// A dictionary entry: its key's type, then its value's; `written` of them so far.
            case entry(key: String, value: String, written: Int)
        }
        var iterator: DBusMessageIter
        var kind: Kind
        var start: Int
        var depth: Int
    }

    /// The body's own iterator, then one frame per open container.
    private var body = DBusMessageIter()
    private var frames: [Frame] = []
    /// Where the next value starts in the body: the body's length so far.
    private(set) var offset = 0
    /// The bytes of the body's signature so far: a header field of at most 255.
    private var signatureBytes = 0

    /// Writes into the empty body of `message`.
    fileprivate init(_ message: Message) {
        dbus_message_iter_init_append(message.raw, &body)
    }

    /// Opens an array of `element`; a dictionary is an array of `{kv}` entries.
    mutating func openArray(of element: String) throws {
        let type = "a" + element
        guard Signature.isSingleCompleteType(type) else { throw DBusEncodingError("'\(type)' is not one complete type") }
        let depth = try admit(type.utf8.count, type) { $0 == type }
        let start = Marshal.arrayStart(at: offset, element: element)
        try open(TypeCode.array, element, .array(element: element), start: start, depth: depth)
        offset = start
    }

    /// Opens a dictionary entry, in an array of `{kv}`.
    mutating func openEntry() throws {
        guard let frame = frames.last, case .array(let element) = frame.kind, element.utf8.first == UInt8(ascii: "{") else {
            throw DBusEncodingError("a dictionary entry can only be written in a dictionary")
        }
        let inner = element.dropFirst().dropLast()
        offset = Marshal.align(offset, 8)
        try open(
            TypeCode.dictEntry, nil, .entry(key: String(inner.prefix(1)), value: String(inner.dropFirst()), written: 0), start: offset,
            depth: frame.depth + 1)
    }

    /// Appends one value, checked first: a bad value, or one that takes the
    /// body past D-Bus's limits, throws before libdbus sees it.
    mutating func append(_ value: DBusValue) throws {
        let depth = try admit(value.signatureLength, value.signature) { value.hasSignature($0) }
        try Marshal.checkType(value)
        offset = try Marshal.check(value, depth: depth, at: offset)
        try Marshal.checkBody(offset)
        guard withInnermost({ Marshal.append(value, &$0) }) else { throw DBusError.noMemory }
    }

    /// Closes the innermost open container.
    mutating func close() throws {
        guard var frame = frames.popLast() else { throw DBusEncodingError("there is no open container to close") }
        switch frame.kind {
        case .array: _ = try Marshal.arrayEnd(frame.start, offset)
        case .entry(_, _, let written):
            guard written == 2 else { throw DBusEncodingError("a dictionary entry needs a key and a value") }
        }
        try Marshal.checkBody(offset)
        guard withInnermost({ dbus_message_iter_close_container(&$0, &frame.iterator) != 0 }) else { throw DBusError.noMemory }
    }

    /// Checks that a value of `type` may come next — the element type of the
    /// array it goes in, an entry's key and then its value — and counts it;
    /// returns its depth. `type` is built only for the message of an error.
    private mutating func admit(_ signatureLength: Int, _ type: @autoclosure () -> String, isType: (String) -> Bool) throws -> Int {
        guard let frame = frames.last else {
            signatureBytes += signatureLength
            guard signatureBytes <= 255 else {
                throw DBusEncodingError("the body's signature would be \(signatureBytes) bytes, over the 255-byte limit")
            }
            return 0
        }
        let expected: String
        switch frame.kind {
        case .array(let element):
            expected = element
        case .entry(let key, let value, let written):
            guard written < 2 else { throw DBusEncodingError("a dictionary entry holds a key and a value, not a third value of type '\(type())'") }
            expected = written == 0 ? key : value
            frames[frames.count - 1].kind = .entry(key: key, value: value, written: written + 1)
        }
        guard isType(expected) else { throw DBusEncodingError("a value of type '\(type())' where '\(expected)' belongs") }
        let depth = frame.depth + 1
        guard depth <= 64 else { throw DBusEncodingError("a value is nested more than 64 containers deep") }
        return depth
    }

    private mutating func open(_ type: Int32, _ signature: String?, _ kind: Frame.Kind, start: Int, depth: Int) throws {
        var sub = DBusMessageIter()
        let opened = withInnermost { iterator in
            guard let signature else { return dbus_message_iter_open_container(&iterator, type, nil, &sub) != 0 }
            return signature.withCString { dbus_message_iter_open_container(&iterator, type, $0, &sub) != 0 }
        }
        guard opened else { throw DBusError.noMemory }
        frames.append(Frame(iterator: sub, kind: kind, start: start, depth: depth))
    }

    /// Runs `body` on the iterator that is written to now: the innermost open container's, else the body's.
    private mutating func withInnermost<T>(_ body: (inout DBusMessageIter) -> T) -> T {
        frames.isEmpty ? body(&self.body) : body(&frames[frames.count - 1].iterator)
    }

    /// Gives up every open container; the message is unusable afterwards.
    fileprivate mutating func abandon() {
        while var frame = frames.popLast() {
            withInnermost { dbus_message_iter_abandon_container(&$0, &frame.iterator) }
        }
    }

    fileprivate var isClosed: Bool { frames.isEmpty }
}

extension Message {
    /// A method return for this call whose body `write` writes straight into
    /// the message (see ``writeBody(_:)``), with the body's length.
    func makeReturn(writing write: (inout BodyWriter) throws -> Void) throws -> (reply: Message, bytes: Int) {
        guard let raw = dbus_message_new_method_return(self.raw) else { throw DBusError.noMemory }
        let reply = Message(owning: raw)
        return (reply, try reply.writeBody(write))
    }

    /// Writes this message's empty body with `write`, straight into the
    /// message (see ``BodyWriter``); returns the body's length. When `write`
    /// or a check throws, the error is rethrown and the message is unusable:
    /// drop it.
    func writeBody(_ write: (inout BodyWriter) throws -> Void) throws -> Int {
        precondition(signature.isEmpty, "a body is written only into an empty message")
        var writer = BodyWriter(self)
        do {
            try write(&writer)
            guard writer.isClosed else { throw DBusEncodingError("a container was left open") }
        } catch {
            writer.abandon()
            throw error
        }
        return writer.offset
    }
}
