import CDBus

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The type codes libdbus uses, as Int32 (the C macros are casts Swift does not import).
package enum TypeCode {
    package static let invalid: Int32 = 0
    package static let byte = code("y"), boolean = code("b"), int16 = code("n"), uint16 = code("q")
    package static let int32 = code("i"), uint32 = code("u"), int64 = code("x"), uint64 = code("t")
    package static let double = code("d"), string = code("s"), objectPath = code("o"), signature = code("g")
    package static let unixFD = code("h"), array = code("a"), variant = code("v"), structure = code("r")
    package static let dictEntry = code("e")
    package static func code(_ c: Unicode.Scalar) -> Int32 { Int32(c.value) }
}

/// The four kinds of D-Bus message.
public enum MessageKind: Sendable, Equatable {
    case methodCall, methodReturn, error, signal, other
}

/// One D-Bus message. Owns one reference to the libdbus message and drops it
/// when released. Header strings and arguments are copied out on reading, so
/// nothing read from a message outlives it by pointer.
public final class Message: @unchecked Sendable {
    package let raw: OpaquePointer

    /// Takes over one reference.
    package init(owning raw: OpaquePointer) {
        self.raw = raw
    }

    deinit {
        dbus_message_unref(raw)
    }

    /// The message `bytes` hold in the wire format: one whole message, as
    /// ``marshalled`` gives it, validated by libdbus as it validates what a
    /// connection reads. Throws when the bytes are anything else.
    package convenience init(demarshalling bytes: [UInt8]) throws {
        let raw = try bytes.withUnsafeBufferPointer { buffer in
            try buffer.withMemoryRebound(to: CChar.self) { chars in
                // The fixed header says how long the message is: exactly the bytes given.
                guard chars.count >= 16, chars.count <= MessageLimits.maxMessageBytes,
                    dbus_message_demarshal_bytes_needed(chars.baseAddress, Int32(chars.count)) == Int32(chars.count)
                else { throw DBusError.invalidArgs("these \(chars.count) bytes are not one whole D-Bus message") }
                return try withCError { dbus_message_demarshal(chars.baseAddress, Int32(chars.count), $0) }
            }
        }
        self.init(owning: raw)
    }

    /// The whole message in the wire format, as libdbus marshals it (a copy).
    package var marshalled: [UInt8] {
        var data: UnsafeMutablePointer<CChar>?
        var length: Int32 = 0
        guard dbus_message_marshal(raw, &data, &length) != 0, let data else { return [] }
        defer { dbus_free(data) }
        return Array(UnsafeRawBufferPointer(start: data, count: Int(length)))
    }

    // MARK: Making messages

    /// A method call. Throws when a name or path is malformed.
    public static func methodCall(
        destination: String?, path: String, interface: String?, member: String, arguments: [DBusValue] = []
    ) throws -> Message {
        let message = try newMethodCall(destination: destination, path: path, interface: interface, member: member)
        try message.append(arguments)
        return message
    }

    /// A method call whose arguments `body` writes.
    public static func methodCall(
        destination: String?, path: String, interface: String?, member: String, writing body: (inout MessageWriter) throws -> Void
    ) throws -> Message {
        let message = try newMethodCall(destination: destination, path: path, interface: interface, member: member)
        try message.write(body)
        return message
    }

    private static func newMethodCall(destination: String?, path: String, interface: String?, member: String) throws -> Message {
        try Names.checkPath(path)
        try Names.checkMember(member)
        if let interface { try Names.checkInterface(interface) }
        if let destination { try Names.checkBusName(destination) }
        let raw = withOptionalCString(destination) { destination in
            path.withCString { path in
                withOptionalCString(interface) { interface in member.withCString { dbus_message_new_method_call(destination, path, interface, $0) } }
            }
        }
        guard let raw else { throw DBusError.noMemory }
        return Message(owning: raw)
    }

    /// A signal.
    public static func signal(path: String, interface: String, member: String, arguments: [DBusValue] = []) throws -> Message {
        let message = try newSignal(path: path, interface: interface, member: member)
        try message.append(arguments)
        return message
    }

    /// A signal whose arguments `body` writes.
    public static func signal(path: String, interface: String, member: String, writing body: (inout MessageWriter) throws -> Void) throws
        -> Message
    {
        let message = try newSignal(path: path, interface: interface, member: member)
        try message.write(body)
        return message
    }

    private static func newSignal(path: String, interface: String, member: String) throws -> Message {
        try Names.checkPath(path)
        try Names.checkInterface(interface)
        try Names.checkMember(member)
        let raw = path.withCString { path in
            interface.withCString { interface in member.withCString { dbus_message_new_signal(path, interface, $0) } }
        }
        guard let raw else { throw DBusError.noMemory }
        return Message(owning: raw)
    }

    /// A method return for this call.
    public func makeReturn(_ arguments: [DBusValue] = []) throws -> Message {
        let message = try newReturn()
        try message.append(arguments)
        return message
    }

    /// A method return for this call, whose arguments `body` writes.
    public func makeReturn(writing body: (inout MessageWriter) throws -> Void) throws -> Message {
        let message = try newReturn()
        try message.write(body)
        return message
    }

    private func newReturn() throws -> Message {
        guard let raw = dbus_message_new_method_return(self.raw) else { throw DBusError.noMemory }
        return Message(owning: raw)
    }

    /// An error reply for this call.
    public func makeError(_ error: DBusError) -> Message? {
        let name = Names.isValidErrorName(error.name) ? error.name : DBusError.failedName
        // libdbus treats the message as printf-free text; interior NULs would cut it.
        let text = String(error.message.map { $0 == "\0" ? " " : $0 })
        guard let raw = dbus_message_new_error(self.raw, name, text) else { return nil }
        return Message(owning: raw)
    }

    // MARK: Header

    public var kind: MessageKind {
        switch dbus_message_get_type(raw) {
        case Int32(DBUS_MESSAGE_TYPE_METHOD_CALL): return .methodCall
        case Int32(DBUS_MESSAGE_TYPE_METHOD_RETURN): return .methodReturn
        case Int32(DBUS_MESSAGE_TYPE_ERROR): return .error
        case Int32(DBUS_MESSAGE_TYPE_SIGNAL): return .signal
        default: return .other
        }
    }

    public var sender: String? { copy(dbus_message_get_sender(raw)) }
    public var destination: String? { copy(dbus_message_get_destination(raw)) }
    public var path: String? { copy(dbus_message_get_path(raw)) }
    public var interface: String? { copy(dbus_message_get_interface(raw)) }
    public var member: String? { copy(dbus_message_get_member(raw)) }
    public var errorName: String? { copy(dbus_message_get_error_name(raw)) }
    public var signature: String { copy(dbus_message_get_signature(raw)) ?? "" }
    public var serial: UInt32 { dbus_message_get_serial(raw) }
    public var replySerial: UInt32 { dbus_message_get_reply_serial(raw) }
    public var noReplyExpected: Bool {
        get { dbus_message_get_no_reply(raw) != 0 }
        set { dbus_message_set_no_reply(raw, newValue ? 1 : 0) }
    }
    /// Whether the bus may start the destination by D-Bus activation (default true).
    public var autoStart: Bool {
        get { dbus_message_get_auto_start(raw) != 0 }
        set { dbus_message_set_auto_start(raw, newValue ? 1 : 0) }
    }
    /// Whether the receiver may prompt the user to authorize the call.
    public var allowInteractiveAuthorization: Bool {
        get { dbus_message_get_allow_interactive_authorization(raw) != 0 }
        set { dbus_message_set_allow_interactive_authorization(raw, newValue ? 1 : 0) }
    }

    /// True for the local `Disconnected` signal libdbus queues when the bus goes away.
    var isLocalDisconnected: Bool {
        dbus_message_is_signal(raw, "org.freedesktop.DBus.Local", "Disconnected") != 0
            && dbus_message_has_path(raw, "/org/freedesktop/DBus/Local") != 0
    }

    private func copy(_ p: UnsafePointer<CChar>?) -> String? {
        guard let p else { return nil }
        return String(cString: p)
    }

    // MARK: Arguments

    /// Appends values to the body. Values are checked first, so a bad value
    /// leaves the message unchanged.
    public func append(_ values: [DBusValue]) throws {
        guard !values.isEmpty else { return }
        try Marshal.checkBody(try DBusValue.wireSize(of: values))
        // The body's signature is one header field of at most 255 bytes; libdbus
        // does not check it on append and writes a corrupt header past that.
        let bodySignature = signature.utf8.count + values.reduce(0) { $0 + $1.signatureLength }
        guard bodySignature <= 255 else {
            throw DBusEncodingError("the arguments' signature would be \(bodySignature) bytes, over the 255-byte limit")
        }
        var iter = DBusMessageIter()
        dbus_message_iter_init_append(raw, &iter)
        for value in values {
            guard Marshal.append(value, &iter) else { throw DBusError.noMemory }
        }
    }

    /// The body's length on the wire, as libdbus marshals it (copies the whole
    /// message: for tests and diagnostics).
    var bodyLength: Int {
        let data = marshalled
        guard data.count >= 8 else { return -1 }
        // The header's fixed part: endianness, type, flags, version, then the body length.
        let value = data[4..<8].reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        return Int(data[0] == UInt8(ascii: "l") ? value : value.byteSwapped)
    }

    /// Whether the message carries unix file descriptors (`h` values). They
    /// belong to the message and are closed when it is released; only reading
    /// an `h` argument makes a duplicate, which the reader then owns.
    public var containsUnixFDs: Bool { dbus_message_contains_unix_fds(raw) != 0 }

    /// Reads every argument, copying all data out of the message.
    public func arguments() -> [DBusValue] {
        var iter = DBusMessageIter()
        guard dbus_message_iter_init(raw, &iter) != 0 else { return [] }
        return Marshal.readAll(&iter)
    }

    /// Reads every argument within `limits`: a container over them stops the
    /// reading where it is found, so what a caller sends past them is never built.
    /// - Throws: ``DecodingLimitExceeded``.
    public func arguments(within limits: DecodingLimits) throws(DecodingLimitExceeded) -> [DBusValue] {
        var iter = DBusMessageIter()
        guard dbus_message_iter_init(raw, &iter) != 0 else { return [] }
        var reader = Marshal.BoundedReader(limits: limits)
        return try reader.readAll(&iter)
    }

    /// The error this message carries, when it is an error reply.
    public var error: DBusError? {
        guard kind == .error else { return nil }
        let text: String
        if case .string(let s)? = arguments().first { text = s } else { text = "" }
        return DBusError(name: errorName ?? DBusError.failedName, message: text)
    }
}

extension DBusValue {
    /// The bytes `values` take as a message body, padding included; throws
    /// what `Message.append` would for them (LimitsExceeded over D-Bus's limits).
    public static func wireSize(of values: [DBusValue]) throws -> Int {
        var end = 0
        for value in values { end = try Marshal.check(value, at: end) }
        return end
    }
}

extension InterfaceDescription {
    /// The bytes one object's entry in a `GetManagedObjects` reply takes — a
    /// one-entry `a{oa{sa{sv}}}` at the start of a body, this interface with
    /// its readable properties' `values` in declared order — then `also`:
    /// `wireSize(of:)` of those values, without building the dictionaries.
    public func managedObjectSize(path: String, values: [DBusValue], also: [DBusValue] = []) throws -> Int {
        var end = try Marshal.objectEntryEnd(path: path, interface: name, properties: properties, values: values)
        for value in also { end = try Marshal.check(value, at: end) }
        return end
    }
}

/// Encoding and decoding between `DBusValue` and libdbus message iterators.
enum Marshal {
    /// Where a one-entry `a{oa{sa{sv}}}` marshalled from the start of a body
    /// ends (as `check` walks it: dictionary entries at `depth + 2`, a variant's
    /// value one deeper).
    static func objectEntryEnd(
        path: String, interface: String, properties: [InterfaceDescription.Property], values: [DBusValue]
    ) throws -> Int {
        let objects = 8  // the length, then the padding to the first entry
        var end = try check(.objectPath(path), depth: 2, at: objects)
        let interfaces = align(align(end, 4) + 4, 8)
        end = try check(.string(interface), depth: 4, at: interfaces)
        let dictionary = align(align(end, 4) + 4, 8)
        end = dictionary
        var value = values.makeIterator()
        for property in properties where property.isReadable {
            guard let next = value.next() else { break }
            end = try check(.string(property.name), depth: 6, at: align(end, 8))
            try checkType(next)
            end = try check(next, depth: 7, at: end + 1 + next.signatureLength + 1)
        }
        end = try arrayEnd(dictionary, end)
        end = try arrayEnd(interfaces, end)
        return try arrayEnd(objects, end)
    }

    /// Validates a value so that appending it cannot fail halfway, and that
    /// no array in it passes D-Bus's array limit; returns where the value ends
    /// when it is marshalled from `offset` in a body.
    static func check(_ value: DBusValue, at offset: Int = 0) throws -> Int {
        try checkType(value)
        return try check(value, depth: 0, at: offset)
    }

    /// The value's whole type must be valid on its own: each container's
    /// element type may be, while the nesting around it is too deep (33
    /// arrays) or too long for a signature. libdbus aborts the process when
    /// handed such a variant signature, and a peer drops the connection that
    /// sends such a message.
    static func checkType(_ value: DBusValue) throws {
        // Nesting 33 deep takes more than 32 bytes of signature; most types are far shorter.
        if value.signatureLength <= 32 { return }
        let signature = value.signature
        guard signature.utf8.count <= 255 else {
            throw DBusEncodingError("the type '\(signature.prefix(40))…' is longer than the 255-byte signature limit")
        }
        guard Signature.isSingleCompleteType(signature) else {
            throw DBusEncodingError("the type '\(signature.prefix(40))…' nests arrays or structs more than 32 deep")
        }
    }

    /// `depth` is the value's nesting depth in the body as the D-Bus
    /// validator counts it (containers and variants alike); over 64 is invalid.
    /// `offset` is where the value starts in the body; returns where it ends,
    /// counting the padding the wire format puts before each value.
    static func check(_ value: DBusValue, depth: Int, at offset: Int) throws -> Int {
        guard depth <= 64 else { throw DBusEncodingError("a value is nested more than 64 containers deep") }
        switch value {
        case .byte: return offset + 1
        case .int16, .uint16: return align(offset, 2) + 2
        case .bool, .int32, .uint32: return align(offset, 4) + 4
        case .int64, .uint64, .double: return align(offset, 8) + 8
        case .string(let s):
            if containsNUL(s) { throw DBusEncodingError("a D-Bus string cannot contain a NUL character") }
            return align(offset, 4) + 4 + s.utf8.count + 1
        case .objectPath(let p):
            if !ObjectPath.isValid(p) { throw DBusEncodingError("'\(p)' is not a valid D-Bus object path") }
            return align(offset, 4) + 4 + p.utf8.count + 1
        case .signature(let g):
            if !Signature.isValid(g) { throw DBusEncodingError("'\(g)' is not a valid D-Bus signature") }
            return offset + 1 + g.utf8.count + 1
        case .unixFD(let fd):
            // libdbus sends a duplicate; a closed descriptor would fail halfway through the append.
            if fcntl(fd, F_GETFD) == -1 { throw DBusEncodingError("\(fd) is not an open file descriptor") }
            return align(offset, 4) + 4
        case .array(let element, let items):
            guard Signature.isSingleCompleteType(element) else {
                throw DBusEncodingError("array element signature '\(element)' is not one complete type")
            }
            // The validator descends into arrays of strings and containers, not into fixed-size ones.
            let fixed = element.utf8.count == 1 && "ybnqiuxtdh".utf8.contains(element.utf8.first!)
            let start = arrayStart(at: offset, element: element)
            var end = start
            for item in items {
                guard has(item, type: element) else {
                    throw DBusEncodingError("array of '\(element)' holds a value of type '\(item.signature)'")
                }
                end = try check(item, depth: fixed ? depth : depth + 1, at: end)
            }
            return try arrayEnd(start, end)
        case .dictionary(let key, let valueType, let entries):
            guard key.utf8.count == 1, Signature.isBasic(key.utf8.first!), Signature.isSingleCompleteType(valueType) else {
                throw DBusEncodingError("'a{\(key)\(valueType)}' is not a valid dictionary type")
            }
            let start = align(align(offset, 4) + 4, 8)
            var end = start
            for entry in entries {
                guard has(entry.key, type: key), has(entry.value, type: valueType) else {
                    throw DBusEncodingError(
                        "dictionary 'a{\(key)\(valueType)}' holds an entry of types '\(entry.key.signature)' → '\(entry.value.signature)'")
                }
                end = try check(entry.key, depth: depth + 2, at: align(end, 8))
                end = try check(entry.value, depth: depth + 2, at: end)
            }
            return try arrayEnd(start, end)
        case .structure(let fields):
            guard !fields.isEmpty else { throw DBusEncodingError("a D-Bus struct needs at least one field") }
            var end = align(offset, 8)
            for field in fields { end = try check(field, depth: depth + 1, at: end) }
            return end
        case .variant(let inner):
            try checkType(inner)
            return try check(inner, depth: depth + 1, at: offset + 1 + inner.signatureLength + 1)
        }
    }

    /// Where the elements of an array of `element` start when the array is
    /// marshalled from `offset`: after its length and the padding to its
    /// element's alignment.
    static func arrayStart(at offset: Int, element: String) -> Int {
        align(align(offset, 4) + 4, alignment(of: element))
    }

    /// A body that ends at `end` must fit one message: a peer (dbus-daemon
    /// first) drops the connection that sends a message over the limits, so
    /// the sender must refuse it here.
    static func checkBody(_ end: Int) throws {
        guard end <= MessageLimits.maxBodyBytes else {
            throw DBusError.limitsExceeded(
                "the message body would be \(end) bytes; D-Bus allows at most \(MessageLimits.maxMessageBytes) bytes in one message")
        }
    }

    /// An array's end; its elements (from `start`, after the padding) may take
    /// at most ``MessageLimits/maxArrayBytes``.
    static func arrayEnd(_ start: Int, _ end: Int) throws -> Int {
        guard end - start <= MessageLimits.maxArrayBytes else {
            throw DBusError.limitsExceeded(
                "an array would hold \(end - start) bytes; D-Bus allows at most \(MessageLimits.maxArrayBytes) bytes in one array")
        }
        return end
    }

    static func align(_ offset: Int, _ alignment: Int) -> Int { (offset + alignment - 1) & ~(alignment - 1) }

    /// The wire alignment of a type, decided by its first character.
    static func alignment(of signature: String) -> Int {
        switch signature.utf8.first {
        case UInt8(ascii: "n"), UInt8(ascii: "q"): 2
        case UInt8(ascii: "b"), UInt8(ascii: "i"), UInt8(ascii: "u"), UInt8(ascii: "s"), UInt8(ascii: "o"), UInt8(ascii: "a"),
            UInt8(ascii: "h"):
            4
        case UInt8(ascii: "x"), UInt8(ascii: "t"), UInt8(ascii: "d"), UInt8(ascii: "("), UInt8(ascii: "{"): 8
        default: 1
        }
    }

    /// Whether `value` is of type `signature`, without building the value's
    /// signature for the common cases (basic types and variants).
    static func has(_ value: DBusValue, type signature: String) -> Bool {
        let utf8 = signature.utf8
        guard utf8.count == 1, let code = utf8.first else { return value.hasSignature(signature) }
        switch (code, value) {
        case (UInt8(ascii: "v"), .variant), (UInt8(ascii: "s"), .string), (UInt8(ascii: "o"), .objectPath),
            (UInt8(ascii: "g"), .signature), (UInt8(ascii: "b"), .bool), (UInt8(ascii: "y"), .byte), (UInt8(ascii: "n"), .int16),
            (UInt8(ascii: "q"), .uint16), (UInt8(ascii: "i"), .int32), (UInt8(ascii: "u"), .uint32), (UInt8(ascii: "x"), .int64),
            (UInt8(ascii: "t"), .uint64), (UInt8(ascii: "d"), .double), (UInt8(ascii: "h"), .unixFD):
            return true
        default:
            return false
        }
    }

    /// Whether a string holds a NUL byte (memchr over its UTF-8 when contiguous).
    static func containsNUL(_ s: String) -> Bool {
        // In place, where the string is one piece (always, for a native one): no copy of it to make one.
        if let found = s.utf8.withContiguousStorageIfAvailable({ $0.count > 0 && memchr($0.baseAddress!, 0, $0.count) != nil }) {
            return found
        }
        return s.utf8.contains(0)
    }

    /// Appends one checked value. False only when libdbus runs out of memory.
    static func append(_ value: DBusValue, _ iter: inout DBusMessageIter) -> Bool {
        switch value {
        case .byte(var v): return dbus_message_iter_append_basic(&iter, TypeCode.byte, &v) != 0
        case .bool(let b):
            var v: dbus_bool_t = b ? 1 : 0
            return dbus_message_iter_append_basic(&iter, TypeCode.boolean, &v) != 0
        case .int16(var v): return dbus_message_iter_append_basic(&iter, TypeCode.int16, &v) != 0
        case .uint16(var v): return dbus_message_iter_append_basic(&iter, TypeCode.uint16, &v) != 0
        case .int32(var v): return dbus_message_iter_append_basic(&iter, TypeCode.int32, &v) != 0
        case .uint32(var v): return dbus_message_iter_append_basic(&iter, TypeCode.uint32, &v) != 0
        case .int64(var v): return dbus_message_iter_append_basic(&iter, TypeCode.int64, &v) != 0
        case .uint64(var v): return dbus_message_iter_append_basic(&iter, TypeCode.uint64, &v) != 0
        case .double(var v): return dbus_message_iter_append_basic(&iter, TypeCode.double, &v) != 0
        case .unixFD(var v): return dbus_message_iter_append_basic(&iter, TypeCode.unixFD, &v) != 0
        case .string(let s): return appendString(s, TypeCode.string, &iter)
        case .objectPath(let s): return appendString(s, TypeCode.objectPath, &iter)
        case .signature(let s): return appendString(s, TypeCode.signature, &iter)
        case .array(let element, let items):
            return container(TypeCode.array, element, &iter) { sub in
                for item in items where !append(item, &sub) { return false }
                return true
            }
        case .dictionary(let key, let valueType, let entries):
            return container(TypeCode.array, "{" + key + valueType + "}", &iter) { sub in
                for entry in entries {
                    let ok = container(TypeCode.dictEntry, nil, &sub) { pair in
                        append(entry.key, &pair) && append(entry.value, &pair)
                    }
                    if !ok { return false }
                }
                return true
            }
        case .structure(let fields):
            return container(TypeCode.structure, nil, &iter) { sub in
                for field in fields where !append(field, &sub) { return false }
                return true
            }
        case .variant(let inner):
            return container(TypeCode.variant, inner.signature, &iter) { sub in append(inner, &sub) }
        }
    }

    static func appendString(_ s: String, _ type: Int32, _ iter: inout DBusMessageIter) -> Bool {
        s.withCString { p in
            var pointer: UnsafePointer<CChar>? = p
            return dbus_message_iter_append_basic(&iter, type, &pointer) != 0
        }
    }

    static func container(
        _ type: Int32, _ signature: String?, _ iter: inout DBusMessageIter,
        _ body: (inout DBusMessageIter) -> Bool
    ) -> Bool {
        var sub = DBusMessageIter()
        let opened: Bool
        if let signature {
            opened = signature.withCString { dbus_message_iter_open_container(&iter, type, $0, &sub) != 0 }
        } else {
            opened = dbus_message_iter_open_container(&iter, type, nil, &sub) != 0
        }
        guard opened else { return false }
        guard body(&sub) else {
            dbus_message_iter_abandon_container(&iter, &sub)
            return false
        }
        return dbus_message_iter_close_container(&iter, &sub) != 0
    }

    /// Every argument from `iter` on, with no limit but D-Bus's own.
    static func readAll(_ iter: inout DBusMessageIter) -> [DBusValue] {
        var reader = BoundedReader(limits: .none)
        return (try? reader.readAll(&iter)) ?? []
    }

    /// The value at `iter`, with no limit but D-Bus's own.
    static func read(_ iter: inout DBusMessageIter) -> DBusValue {
        var reader = BoundedReader(limits: .none)
        return (try? reader.read(&iter)) ?? .structure([])
    }

    /// The basic value at `iter`, of type code `type`.
    private static func basicValue(_ iter: inout DBusMessageIter, _ type: Int32) -> DBusValue {
        switch type {
        case TypeCode.byte: return .byte(basic(&iter, UInt8(0)))
        case TypeCode.boolean: return .bool(basic(&iter, dbus_bool_t(0)) != 0)
        case TypeCode.int16: return .int16(basic(&iter, Int16(0)))
        case TypeCode.uint16: return .uint16(basic(&iter, UInt16(0)))
        case TypeCode.int32: return .int32(basic(&iter, Int32(0)))
        case TypeCode.uint32: return .uint32(basic(&iter, UInt32(0)))
        case TypeCode.int64: return .int64(basic(&iter, Int64(0)))
        case TypeCode.uint64: return .uint64(basic(&iter, UInt64(0)))
        case TypeCode.double: return .double(basic(&iter, Double(0)))
        case TypeCode.unixFD: return .unixFD(basic(&iter, Int32(-1)))
        case TypeCode.string: return .string(string(&iter))
        case TypeCode.objectPath: return .objectPath(string(&iter))
        case TypeCode.signature: return .signature(string(&iter))
        default:
            // Unknown type codes cannot occur in a message libdbus validated.
            return .structure([])
        }
    }

    /// Reads values within ``DecodingLimits``: each array or dictionary is
    /// counted as it is read, and each `a{sv}` weighed by the bytes of what it
    /// holds (strings by their UTF-8, other values as 8 bytes).
    struct BoundedReader {
        let limits: DecodingLimits
        /// Bytes read so far; an `a{sv}` weighs the growth while it is read.
        var bytes = 0

        mutating func readAll(_ iter: inout DBusMessageIter) throws(DecodingLimitExceeded) -> [DBusValue] {
            var values: [DBusValue] = []
            while dbus_message_iter_get_arg_type(&iter) != TypeCode.invalid {
                try count(values.count + 1)
                values.append(try read(&iter))
                dbus_message_iter_next(&iter)
            }
            return values
        }

        func count(_ entries: Int) throws(DecodingLimitExceeded) {
            guard entries > limits.maxContainerEntries else { return }
            throw DecodingLimitExceeded(
                "an array or dictionary in the call holds more than \(limits.maxContainerEntries) entries, the limit\(limits.entriesName.map { " \($0)" } ?? "")")
        }

        /// Throws once the `a{sv}` whose reading started at `start` bytes holds more than the limit.
        func weigh(since start: Int) throws(DecodingLimitExceeded) {
            guard bytes - start > limits.maxDictionaryBytes else { return }
            throw DecodingLimitExceeded(
                "a dictionary (a{sv}) in the call holds more than \(limits.maxDictionaryBytes) bytes, the limit\(limits.bytesName.map { " \($0)" } ?? "")")
        }

        mutating func read(_ iter: inout DBusMessageIter) throws(DecodingLimitExceeded) -> DBusValue {
            let type = dbus_message_iter_get_arg_type(&iter)
            switch type {
            case TypeCode.variant:
                var sub = DBusMessageIter()
                dbus_message_iter_recurse(&iter, &sub)
                return .variant(try read(&sub))
            case TypeCode.structure:
                var sub = DBusMessageIter()
                dbus_message_iter_recurse(&iter, &sub)
                return .structure(try readAll(&sub))
            case TypeCode.array where dbus_message_iter_get_element_type(&iter) == TypeCode.dictEntry:
                let full = Marshal.currentSignature(&iter)
                let inner = full.dropFirst(2).dropLast()
                let key = String(inner.prefix(1))
                let value = String(inner.dropFirst())
                let weighed = full == "a{sv}"
                let start = bytes
                var sub = DBusMessageIter()
                dbus_message_iter_recurse(&iter, &sub)
                var entries: [DBusValue.DictEntry] = []
                while dbus_message_iter_get_arg_type(&sub) == TypeCode.dictEntry {
                    try count(entries.count + 1)
                    var pair = DBusMessageIter()
                    dbus_message_iter_recurse(&sub, &pair)
                    let k = try read(&pair)
                    dbus_message_iter_next(&pair)
                    let v = try read(&pair)
                    entries.append(.init(k, v))
                    if weighed { try weigh(since: start) }
                    dbus_message_iter_next(&sub)
                }
                return .dictionary(key: key, value: value, entries)
            case TypeCode.array:
                let full = Marshal.currentSignature(&iter)
                var sub = DBusMessageIter()
                dbus_message_iter_recurse(&iter, &sub)
                return .array(element: String(full.dropFirst()), try readAll(&sub))
            default:
                let value = Marshal.basicValue(&iter, type)
                switch value {
                case .string(let text), .objectPath(let text), .signature(let text): bytes += text.utf8.count
                default: bytes += 8
                }
                return value
            }
        }
    }

    static func basic<T>(_ iter: inout DBusMessageIter, _ initial: T) -> T {
        var value = initial
        withUnsafeMutablePointer(to: &value) { dbus_message_iter_get_basic(&iter, $0) }
        return value
    }

    static func string(_ iter: inout DBusMessageIter) -> String {
        var pointer: UnsafePointer<CChar>? = nil
        dbus_message_iter_get_basic(&iter, &pointer)
        guard let pointer else { return "" }
        return String(cString: pointer)
    }

    private static func currentSignature(_ iter: inout DBusMessageIter) -> String {
        guard let p = dbus_message_iter_get_signature(&iter) else { return "" }
        defer { dbus_free(p) }
        return String(cString: p)
    }
}

/// Runs `body` with `text` as a C string, or nil. A name made a C string this
/// way costs nothing, where a short Swift string handed to C as it is gets
/// copied to the heap first.
func withOptionalCString<Result>(_ text: String?, _ body: (UnsafePointer<CChar>?) -> Result) -> Result {
    guard let text else { return body(nil) }
    return text.withCString(body)
}

/// Validation of bus names, interface and member names.
public enum Names {
    public static func isValidBusName(_ s: String) -> Bool {
        !s.utf8.contains(0) && s.withCString { dbus_validate_bus_name($0, nil) != 0 }
    }
    public static func isValidInterface(_ s: String) -> Bool {
        !s.utf8.contains(0) && s.withCString { dbus_validate_interface($0, nil) != 0 }
    }
    public static func isValidMember(_ s: String) -> Bool {
        !s.utf8.contains(0) && s.withCString { dbus_validate_member($0, nil) != 0 }
    }
    public static func isValidErrorName(_ s: String) -> Bool {
        !s.utf8.contains(0) && s.withCString { dbus_validate_error_name($0, nil) != 0 }
    }

    static func checkPath(_ s: String) throws {
        guard ObjectPath.isValid(s) else { throw DBusEncodingError("'\(s)' is not a valid D-Bus object path") }
    }
    static func checkInterface(_ s: String) throws {
        guard isValidInterface(s) else { throw DBusEncodingError("'\(s)' is not a valid D-Bus interface name") }
    }
    static func checkMember(_ s: String) throws {
        guard isValidMember(s) else { throw DBusEncodingError("'\(s)' is not a valid D-Bus member name") }
    }
    static func checkBusName(_ s: String) throws {
        guard isValidBusName(s) else { throw DBusEncodingError("'\(s)' is not a valid D-Bus bus name") }
    }
}
