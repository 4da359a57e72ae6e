import CDBus

/// Reads a message's arguments in order, straight into Swift values, with no
/// `DBusValue` built for them: what generated code reads a method's
/// arguments, a reply or a signal with (docs/interfaces.md). Values whose
/// type is only known at run time — a variant's content, the values of an
/// `a{sv}`, a type without a Swift form — are read as `DBusValue` trees.
///
/// Each read checks the type at the reader's position and throws
/// `InvalidArgs` on another; arrays and dictionaries are read within the
/// reader's ``DecodingLimits``, as ``Message/arguments(within:)`` reads them,
/// and throw ``DecodingLimitExceeded`` past them.
public struct MessageReader {
    /// The message the iterator reads: held, so its memory outlives the reading.
    private let message: Message
    private var iter: DBusMessageIter
    private let limits: DecodingLimits

    /// Reads `message`'s arguments from the first.
    public init(_ message: Message, limits: DecodingLimits = .none) {
        self.message = message
        self.limits = limits
        iter = DBusMessageIter()
        // An empty body leaves the iterator at its end, where every read throws.
        _ = dbus_message_iter_init(message.raw, &iter)
    }

    /// Reads inside the container at `parent`'s position.
    private init(inside parent: inout MessageReader) {
        message = parent.message
        limits = parent.limits
        iter = DBusMessageIter()
        dbus_message_iter_recurse(&parent.iter, &iter)
    }

    /// True once every value has been read.
    public var isAtEnd: Bool { currentType == TypeCode.invalid }

    private var currentType: Int32 {
        var iter = iter
        return dbus_message_iter_get_arg_type(&iter)
    }

    // MARK: Basic values

    public mutating func readString() throws -> String { try text(TypeCode.string, "s") }
    public mutating func readObjectPath() throws -> String { try text(TypeCode.objectPath, "o") }
    public mutating func readSignature() throws -> String { try text(TypeCode.signature, "g") }
    public mutating func readBool() throws -> Bool { try basic(TypeCode.boolean, "b", dbus_bool_t(0)) != 0 }
    public mutating func readByte() throws -> UInt8 { try basic(TypeCode.byte, "y", UInt8(0)) }
    public mutating func readInt16() throws -> Int16 { try basic(TypeCode.int16, "n", Int16(0)) }
    public mutating func readUInt16() throws -> UInt16 { try basic(TypeCode.uint16, "q", UInt16(0)) }
    public mutating func readInt32() throws -> Int32 { try basic(TypeCode.int32, "i", Int32(0)) }
    public mutating func readUInt32() throws -> UInt32 { try basic(TypeCode.uint32, "u", UInt32(0)) }
    public mutating func readInt64() throws -> Int64 { try basic(TypeCode.int64, "x", Int64(0)) }
    public mutating func readUInt64() throws -> UInt64 { try basic(TypeCode.uint64, "t", UInt64(0)) }
    public mutating func readDouble() throws -> Double { try basic(TypeCode.double, "d", Double(0)) }

    private mutating func basic<T>(_ type: Int32, _ signature: String, _ initial: T) throws -> T {
        try expect(type, signature)
        defer { dbus_message_iter_next(&iter) }
        return Marshal.basic(&iter, initial)
    }

    private mutating func text(_ type: Int32, _ signature: String) throws -> String {
        try expect(type, signature)
        defer { dbus_message_iter_next(&iter) }
        return Marshal.string(&iter)
    }

    private mutating func expect(_ type: Int32, _ signature: String) throws {
        let found = currentType
        guard found != type else { return }
        throw DBusError.invalidArgs(
            found == TypeCode.invalid
                ? "a value of type '\(signature)' is missing: the arguments end before it"
                : "a value of type '\(signature)' was expected, not one of type '\(UnicodeScalar(UInt8(truncatingIfNeeded: found)))'")
    }

    // MARK: Trees

    /// The value at the reader's position as a tree, whatever its type.
    public mutating func readValue() throws -> DBusValue {
        guard !isAtEnd else { throw DBusError.invalidArgs("a value is missing: the arguments end before it") }
        var reader = Marshal.BoundedReader(limits: limits)
        defer { dbus_message_iter_next(&iter) }
        return try reader.read(&iter)
    }

    /// The content of the variant at the reader's position.
    public mutating func readVariant() throws -> DBusValue {
        try expect(TypeCode.variant, "v")
        guard case .variant(let content) = try readValue() else { preconditionFailure("a variant read as another type") }
        return content
    }

    /// The `a{sv}` at the reader's position, each value the content of its
    /// variant; a key given twice keeps its last value. Weighed as
    /// ``Message/arguments(within:)`` weighs it.
    public mutating func readVardict() throws -> [String: DBusValue] {
        try expectDictionary("a{sv}")
        var weighing = Marshal.BoundedReader(limits: limits)
        var result: [String: DBusValue] = [:]
        try readEntries { count, entry in
            try weighing.count(count)
            let key = try entry.readString()
            weighing.bytes += key.utf8.count
            try entry.expect(TypeCode.variant, "v")
            var variant = MessageReader(inside: &entry)
            result[key] = try weighing.read(&variant.iter)
            dbus_message_iter_next(&entry.iter)
            try weighing.weigh(since: 0)
        }
        return result
    }

    // MARK: Containers

    /// Calls `element` once for each element of the array at the reader's
    /// position, with a reader at the element, which it must read.
    public mutating func readArray(_ element: (inout MessageReader) throws -> Void) throws {
        try expect(TypeCode.array, "a")
        var inner = MessageReader(inside: &self)
        let bounds = Marshal.BoundedReader(limits: limits)
        var count = 0
        while !inner.isAtEnd {
            count += 1
            try bounds.count(count)
            try element(&inner)
        }
        dbus_message_iter_next(&iter)
    }

    /// Calls `entry` once for each entry of the dictionary (`a{..}`) at the
    /// reader's position, with a reader at the entry's key, then its value,
    /// which it must read.
    public mutating func readDictionary(_ entry: (inout MessageReader) throws -> Void) throws {
        try expectDictionary("a{..}")
        let bounds = Marshal.BoundedReader(limits: limits)
        try readEntries { count, reader in
            try bounds.count(count)
            try entry(&reader)
        }
    }

    /// The structure at the reader's position, as `fields` reads it from a reader at its first field.
    public mutating func readStruct<T>(_ fields: (inout MessageReader) throws -> T) throws -> T {
        try expect(TypeCode.structure, "(..)")
        var inner = MessageReader(inside: &self)
        defer { dbus_message_iter_next(&iter) }
        return try fields(&inner)
    }

    private mutating func expectDictionary(_ signature: String) throws {
        try expect(TypeCode.array, signature)
        guard dbus_message_iter_get_element_type(&iter) == TypeCode.dictEntry else {
            throw DBusError.invalidArgs("a dictionary of type '\(signature)' was expected, not an array of another type")
        }
    }

    /// Runs `body` with the number of each entry of the dictionary at the
    /// reader's position and a reader inside it.
    private mutating func readEntries(_ body: (Int, inout MessageReader) throws -> Void) throws {
        var entries = MessageReader(inside: &self)
        var count = 0
        while entries.currentType == TypeCode.dictEntry {
            count += 1
            var entry = MessageReader(inside: &entries)
            try body(count, &entry)
            dbus_message_iter_next(&entries.iter)
        }
        dbus_message_iter_next(&iter)
    }
}

extension Message {
    /// Whether the message names an interface.
    public var hasInterface: Bool { dbus_message_get_interface(raw) != nil }

    /// Whether the message's interface is `interface`, compared in place.
    public func hasInterface(_ interface: String) -> Bool {
        interface.withCString { dbus_message_has_interface(raw, $0) != 0 }
    }

    /// Whether the body's signature is `signature`, compared in place.
    public func hasSignature(_ signature: String) -> Bool {
        signature.withCString { dbus_message_has_signature(raw, $0) != 0 }
    }
}
