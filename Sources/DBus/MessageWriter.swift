import CDBus

/// Writes a new message's arguments in order, straight from Swift values,
/// with no `DBusValue` built for them: what generated code writes calls,
/// replies and signals with (docs/interfaces.md). A value whose type is only
/// known at run time (a variant's content, the values of an `a{sv}`) is
/// written from its `DBusValue`. A reply of any size is written as it is
/// walked, each container as its content is read: `GetManagedObjects` of a
/// hundred thousand objects exists once, as the message's bytes, never first
/// as a tree of values.
///
/// Every value is checked as ``Message/append(_:)`` checks it — no NUL in a
/// string, a valid object path or signature, D-Bus's limits on arrays, on the
/// body and on its signature — and so is its type wherever a container fixes
/// it (an array's elements, a dictionary entry's key and value, the fields of
/// a structure inside them): libdbus aborts the process on a value of another
/// type there, so the writer throws first. What was written before a throw
/// stays in the message, so a message whose writing threw is dropped, never
/// sent: the factories that take a writer (such as
/// ``Message/methodCall(destination:path:interface:member:writing:)``) do so.
public struct MessageWriter {
    // Holds no reference: the message outlives the writing (``Message/write(_:)``
    // makes the writer and the body uses it only while it runs), and the
    // types below point into strings that outlive their container's writing.
    // Writers are made and passed for every container, so each is a plain value.
    private var iter = DBusMessageIter()
    /// Where the next value starts in the body: the wire format pads each
    /// value to its alignment, and D-Bus's limits are on these offsets.
    private(set) var offset: Int
    /// How deep what is written here is nested.
    private let nesting: Nesting
    /// Bytes of signature that the values written here add to their container's.
    private var signatureLength = 0
    /// Writes the body itself, whose signature is a header field of at most 255 bytes.
    private let isBody: Bool
    /// The types to write here when the container fixes them; nil where the
    /// writer makes the type (the body, a structure of its own).
    private var expected: Expected?

    /// Part of a signature: the types a container holds, in order — once for
    /// a structure's fields or a dictionary entry's key and value, again for
    /// each element of an array.
    private struct Expected {
        /// The types, no more: the bytes of a signature the writing of the container outlives.
        let types: UnsafeBufferPointer<UInt8>
        let repeating: Bool
        var position = 0

        init(_ types: UnsafeBufferPointer<UInt8>, repeating: Bool) {
            self.types = types
            self.repeating = repeating
        }

        /// The types of `range` in these, for a container of one of them.
        func inner(_ range: Range<Int>) -> Expected { Expected(UnsafeBufferPointer(rebasing: types[range]), repeating: false) }

        /// Everything to write has been written (an element is written whole).
        var isComplete: Bool { position == (repeating ? 0 : types.count) }
    }

    /// Runs `body` with `text`'s UTF-8 bytes in one piece (a short string's copied to the stack).
    private static func withBytes<R>(_ text: String, _ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        if let result = try text.utf8.withContiguousStorageIfAvailable(body) { return result }
        var contiguous = text
        contiguous.makeContiguousUTF8()
        return try contiguous.utf8.withContiguousStorageIfAvailable(body)!
    }

    /// How deep a value is nested: in containers and variants alike, as the
    /// D-Bus validator counts them (64 at most), and in the arrays and
    /// structures (dictionary entries counting as both) of its signature (32
    /// of each at most).
    private struct Nesting {
        var depth = 0
        var arrays = 0
        var structs = 0

        func inner(depth: Int = 1, arrays: Int = 0, structs: Int = 0) -> Nesting {
            Nesting(depth: self.depth + depth, arrays: self.arrays + arrays, structs: self.structs + structs)
        }
    }

    /// Writes `message`'s body, which must still be empty.
    init(body message: Message) {
        offset = 0
        nesting = Nesting()
        isBody = true
        dbus_message_iter_init_append(message.raw, &iter)
    }

    /// Writes inside a container that starts at `offset`; the iterator is opened by the caller.
    private init(at offset: Int, nesting: Nesting, expected: Expected?) {
        self.offset = offset
        self.nesting = nesting
        self.expected = expected
        isBody = false
    }

    /// Checks that a value whose type `match` consumes from the types may
    /// come next, and moves past its type; returns where in the types it
    /// lies (nil where the type is free).
    @discardableResult
    private mutating func take(
        _ type: @autoclosure () -> String, _ match: (UnsafeBufferPointer<UInt8>, inout Int) -> Bool
    ) throws -> Range<Int>? {
        guard var expected else { return nil }
        let start = expected.position
        var end = start
        guard start < expected.types.count, match(expected.types, &end), !expected.repeating || end == expected.types.count else {
            throw DBusEncodingError(
                "a value of type '\(type())' cannot go where the container holds '\(String(decoding: expected.types, as: UTF8.self))'")
        }
        expected.position = expected.repeating ? 0 : end
        self.expected = expected
        return start..<end
    }

    /// Takes a value of the basic or variant type `code`.
    private mutating func take(_ code: UInt8) throws {
        guard var expected else { return }
        guard expected.position < expected.types.count, expected.types[expected.position] == code,
            !expected.repeating || expected.types.count == 1
        else {
            throw DBusEncodingError(
                "a value of type '\(UnicodeScalar(code))' cannot go where the container holds '\(String(decoding: expected.types, as: UTF8.self))'")
        }
        expected.position = expected.repeating ? 0 : expected.position + 1
        self.expected = expected
    }

    // MARK: Basic values

    public mutating func append(_ value: String) throws {
        guard !Marshal.containsNUL(value) else { throw DBusEncodingError("a D-Bus string cannot contain a NUL character") }
        try text(value, TypeCode.string, at: Self.align(offset, 4) + 4)
    }

    public mutating func append(objectPath: String) throws {
        guard ObjectPath.isValid(objectPath) else { throw DBusEncodingError("'\(objectPath)' is not a valid D-Bus object path") }
        try text(objectPath, TypeCode.objectPath, at: Self.align(offset, 4) + 4)
    }

    public mutating func append(signature: String) throws {
        guard Signature.isValid(signature) else { throw DBusEncodingError("'\(signature)' is not a valid D-Bus signature") }
        try text(signature, TypeCode.signature, at: offset + 1)
    }

    public mutating func append(_ value: Bool) throws { try basic(dbus_bool_t(value ? 1 : 0), TypeCode.boolean, size: 4) }
    public mutating func append(_ value: UInt8) throws { try basic(value, TypeCode.byte, size: 1) }
    public mutating func append(_ value: Int16) throws { try basic(value, TypeCode.int16, size: 2) }
    public mutating func append(_ value: UInt16) throws { try basic(value, TypeCode.uint16, size: 2) }
    public mutating func append(_ value: Int32) throws { try basic(value, TypeCode.int32, size: 4) }
    public mutating func append(_ value: UInt32) throws { try basic(value, TypeCode.uint32, size: 4) }
    public mutating func append(_ value: Int64) throws { try basic(value, TypeCode.int64, size: 8) }
    public mutating func append(_ value: UInt64) throws { try basic(value, TypeCode.uint64, size: 8) }
    public mutating func append(_ value: Double) throws { try basic(value, TypeCode.double, size: 8) }

    private mutating func basic<T>(_ value: T, _ type: Int32, size: Int) throws {
        try take(UInt8(type))
        try added(signature: 1)
        var value = value
        let appended = withUnsafeMutablePointer(to: &value) { dbus_message_iter_append_basic(&iter, type, $0) != 0 }
        guard appended else { throw DBusError.noMemory }
        offset = Self.align(offset, size) + size
    }

    /// A string, object path or signature whose bytes start at `start`.
    private mutating func text(_ value: String, _ type: Int32, at start: Int) throws {
        try take(UInt8(type))
        let end = start + value.utf8.count + 1
        try Marshal.checkBody(end)
        try added(signature: 1)
        guard Marshal.appendString(value, type, &iter) else { throw DBusError.noMemory }
        offset = end
    }

    // MARK: Trees

    /// Appends a whole value of any type, checked as ``Message/append(_:)`` checks it.
    public mutating func append(value: DBusValue) throws {
        try Marshal.checkType(value)
        try take(value.signature) { value.match($0, &$1) }
        if expected == nil, nesting.arrays + nesting.structs > 0 { try checkNesting(value.signature) }
        let end = try Marshal.check(value, depth: nesting.depth, at: offset)
        try Marshal.checkBody(end)
        try added(signature: value.signatureLength)
        guard Marshal.append(value, &iter) else { throw DBusError.noMemory }
        offset = end
    }

    /// Appends a variant holding `content`.
    public mutating func appendVariant(_ content: DBusValue) throws {
        try Marshal.checkType(content)
        try take(UInt8(ascii: "v"))
        let end = try Marshal.check(content, depth: nesting.depth + 1, at: offset + 1 + content.signatureLength + 1)
        try Marshal.checkBody(end)
        try added(signature: 1)
        guard Marshal.container(TypeCode.variant, content.signature, &iter, { Marshal.append(content, &$0) }) else {
            throw DBusError.noMemory
        }
        offset = end
    }

    /// Appends an `a{sv}`: a `[String: DBusValue]` (its entries in increasing
    /// key order, the same bytes every time, each value in a variant), or a
    /// value that writes its own entries.
    public mutating func appendVardict(_ entries: some VardictWritable) throws {
        try appendArray(of: "{sv}") { try entries.writeEntries(to: &$0) }
    }

    /// Appends one entry of the `a{sv}` this writer writes: `key`, and a
    /// variant of the type `signature`, whose one value `content` writes.
    public mutating func appendEntry(_ key: String, _ signature: String, _ content: (inout MessageWriter) throws -> Void) throws {
        try appendDictEntry { entry in
            try entry.append(key)
            try entry.appendVariant(signature, content)
        }
    }

    /// Appends a variant of the type `signature`, whose one value `content`
    /// writes (checked against the type, as an array's elements are).
    public mutating func appendVariant(_ signature: String, _ content: (inout MessageWriter) throws -> Void) throws {
        guard Signature.isSingleCompleteType(signature) else { throw DBusEncodingError("'\(signature)' is not one complete type") }
        try take(UInt8(ascii: "v"))
        try added(signature: 1)
        // The content's own signature starts afresh; only its depth in the message adds up.
        let start = offset + 1 + signature.utf8.count + 1
        try Self.withBytes(signature) { types in
            _ = try container(
                TypeCode.variant, signature, at: start, nesting: Nesting(depth: nesting.depth + 1), expected: Expected(types, repeating: false),
                content)
        }
    }

    // MARK: Containers

    /// Appends an array whose elements have the type `element`; `body`
    /// writes them. An element type `{..}` makes a dictionary, whose entries
    /// `body` writes with ``appendDictEntry(_:)``, in the order it likes.
    public mutating func appendArray(of element: String, _ body: (inout MessageWriter) throws -> Void) throws {
        guard Signature.isSingleCompleteType("a" + element) else {
            throw DBusEncodingError("'a\(element)' is not one complete type")
        }
        try array(of: element, body)
    }

    /// Appends `dictionary` as a D-Bus dictionary of entries of type `entry`
    /// (`{sv}`, `{ss}`…), in increasing key order (the same bytes every time);
    /// `write` writes each entry's key, then its value.
    public mutating func appendDictionary<Key: Comparable, Value>(
        _ dictionary: [Key: Value], entry: String, _ write: (inout MessageWriter, Key, Value) throws -> Void
    ) throws {
        guard entry.utf8.first == UInt8(ascii: "{") else { throw DBusEncodingError("'\(entry)' is not a dictionary entry type") }
        try appendArray(of: entry) { entries in
            try Self.forEachSorted(dictionary) { key, value in
                try entries.appendDictEntry { try write(&$0, key, value) }
            }
        }
    }

    /// Appends one entry of the dictionary this writer writes (see
    /// ``appendArray(of:_:)``); `body` writes its key, then its value.
    public mutating func appendDictEntry(_ body: (inout MessageWriter) throws -> Void) throws {
        guard expected != nil else { throw DBusEncodingError("a dictionary entry can only be written into a dictionary (an array of '{..}')") }
        let entry = try take("{..}", Self.matchContainer(UInt8(ascii: "{")))!
        let types = expected!.inner((entry.lowerBound + 1)..<(entry.upperBound - 1))
        _ = try container(TypeCode.dictEntry, nil, at: Self.align(offset, 8), nesting: nesting.inner(structs: 1), expected: types, body)
    }

    /// Appends a structure; `body` writes its fields, at least one.
    public mutating func appendStruct(_ body: (inout MessageWriter) throws -> Void) throws {
        let types = try take("(..)", Self.matchContainer(UInt8(ascii: "("))).map { expected!.inner(($0.lowerBound + 1)..<($0.upperBound - 1)) }
        if types == nil, nesting.structs >= 32 { throw DBusEncodingError("structures are nested more than 32 deep") }
        let fields = try container(TypeCode.structure, nil, at: Self.align(offset, 8), nesting: nesting.inner(structs: 1), expected: types, body)
        guard fields > 0 || types != nil else { throw DBusEncodingError("a D-Bus struct needs at least one field") }
        try added(signature: 2 + fields)
    }

    /// Consumes one complete type that opens with `open`: a structure, or a
    /// dictionary entry (its basic key, one complete type, `}`).
    private static func matchContainer(_ open: UInt8) -> (UnsafeBufferPointer<UInt8>, inout Int) -> Bool {
        { bytes, index in
            guard bytes[index] == open else { return false }
            if open == UInt8(ascii: "(") {
                guard let end = Signature.completeTypeEnd(bytes, index, arrayDepth: 0, structDepth: 0) else { return false }
                index = end
                return true
            }
            guard index + 1 < bytes.count, Signature.isBasic(bytes[index + 1]),
                let end = Signature.completeTypeEnd(bytes, index + 2, arrayDepth: 0, structDepth: 0), end < bytes.count,
                bytes[end] == UInt8(ascii: "}")
            else { return false }
            index = end + 1
            return true
        }
    }

    /// Throws unless the complete type `signature`, written where this
    /// writer writes (inside structures of its own making), stays within
    /// D-Bus's 32 arrays and 32 structures: what a container whose type is
    /// fixed holds was checked with the container's type.
    private func checkNesting(_ signature: String) throws {
        var signature = signature
        let valid = signature.withUTF8 { bytes in
            Signature.completeTypeEnd(bytes, 0, arrayDepth: nesting.arrays, structDepth: nesting.structs) == bytes.count
        }
        guard valid else { throw DBusEncodingError("the type '\(signature.prefix(40))' is not one complete type, or nests arrays or structs more than 32 deep") }
    }

    private mutating func array(of element: String, _ body: (inout MessageWriter) throws -> Void) throws {
        try take("a" + element) { bytes, index in
            guard bytes[index] == UInt8(ascii: "a") else { return false }
            index += 1
            for c in element.utf8 {
                guard index < bytes.count, bytes[index] == c else { return false }
                index += 1
            }
            return true
        }
        if expected == nil { try checkNesting("a" + element) }
        // The validator descends into arrays of strings and containers, not into fixed-size ones.
        let fixed = element.utf8.count == 1 && "ybnqiuxtdh".utf8.contains(element.utf8.first!)
        let start = Self.align(Self.align(offset, 4) + 4, Marshal.alignment(of: element))
        try added(signature: 1 + element.utf8.count)
        let inner = nesting.inner(depth: fixed ? 0 : 1, arrays: 1)
        try Self.withBytes(element) { types in
            _ = try container(TypeCode.array, element, at: start, nesting: inner, expected: Expected(types, repeating: true), body)
        }
        _ = try Marshal.arrayEnd(start, offset)
    }

    /// Opens a container whose content starts at `start`, lets `body` write
    /// it and closes it; returns the signature bytes `body` wrote.
    private mutating func container(
        _ type: Int32, _ signature: String?, at start: Int, nesting: Nesting, expected: Expected?,
        _ body: (inout MessageWriter) throws -> Void
    ) throws -> Int {
        guard nesting.depth <= 64 else { throw DBusEncodingError("a value is nested more than 64 containers deep") }
        var inner = MessageWriter(at: start, nesting: nesting, expected: expected)
        let opened =
            if let signature {
                signature.withCString { dbus_message_iter_open_container(&iter, type, $0, &inner.iter) != 0 }
            } else {
                dbus_message_iter_open_container(&iter, type, nil, &inner.iter) != 0
            }
        guard opened else { throw DBusError.noMemory }
        do {
            try body(&inner)
            if let expected = inner.expected, !expected.isComplete {
                throw DBusEncodingError("a container was closed before all the values its type holds were written")
            }
        } catch {
            dbus_message_iter_abandon_container(&iter, &inner.iter)
            throw error
        }
        guard dbus_message_iter_close_container(&iter, &inner.iter) != 0 else { throw DBusError.noMemory }
        offset = inner.offset
        return inner.signatureLength
    }

    /// Counts a value's type into the signature; the body's may take 255 bytes.
    private mutating func added(signature bytes: Int) throws {
        signatureLength += bytes
        guard isBody, signatureLength > 255 else { return }
        throw DBusEncodingError("the arguments' signature would be \(signatureLength) bytes, over the 255-byte limit")
    }

    private static func align(_ offset: Int, _ alignment: Int) -> Int { Marshal.align(offset, alignment) }

    /// Runs `body` on each entry in increasing key order, sorting the
    /// entries' positions on the stack: a dictionary written to a message is
    /// small, and sorting a copy of it would cost two allocations each time.
    static func forEachSorted<Key: Comparable, Value>(_ dictionary: [Key: Value], _ body: (Key, Value) throws -> Void) throws {
        guard dictionary.count > 1 else {
            for (key, value) in dictionary { try body(key, value) }
            return
        }
        try withUnsafeTemporaryAllocation(of: Dictionary<Key, Value>.Index.self, capacity: dictionary.count) { order in
            var count = 0
            var index = dictionary.startIndex
            while index != dictionary.endIndex {
                order.initializeElement(at: count, to: index)
                count += 1
                index = dictionary.index(after: index)
            }
            defer { _ = order.deinitialize() }
            if count <= 32 {
                // Insertion sort: no buffer of its own, and quick at these sizes.
                for next in 1..<count {
                    let moving = order[next]
                    var slot = next
                    while slot > 0, dictionary[moving].key < dictionary[order[slot - 1]].key {
                        order[slot] = order[slot - 1]
                        slot -= 1
                    }
                    order[slot] = moving
                }
            } else {
                var sorting = order
                sorting.sort { dictionary[$0].key < dictionary[$1].key }
            }
            for index in order {
                let (key, value) = dictionary[index]
                try body(key, value)
            }
        }
    }
}

extension Message {
    /// Lets `body` write this new message's arguments, then checks the body's
    /// size against D-Bus's limit; returns the body's length. A throw leaves
    /// a message to drop.
    @discardableResult
    func write(_ body: (inout MessageWriter) throws -> Void) throws -> Int {
        var writer = MessageWriter(body: self)
        try body(&writer)
        // Strings and values of any size stop the writing once they pass the
        // limit; numbers and padding, a few bytes each, are counted here.
        try Marshal.checkBody(writer.offset)
        return writer.offset
    }
}

/// An `a{sv}` that writes its entries straight into a message (with
/// ``MessageWriter/appendEntry(_:_:_:)``, in increasing key order, as a
/// dictionary is written): for one that is only sent, what building it as a
/// `[String: DBusValue]` first — a dictionary, a tree for each one nested in
/// it, a box for each variant — would cost for nothing. Generated proxies
/// take one wherever they take an `a{sv}` (docs/interfaces.md).
public protocol VardictWritable {
    func writeEntries(to writer: inout MessageWriter) throws
}

extension Dictionary: VardictWritable where Key == String, Value == DBusValue {
    public func writeEntries(to writer: inout MessageWriter) throws {
        try MessageWriter.forEachSorted(self) { key, value in
            try writer.appendDictEntry { entry in
                try entry.append(key)
                try entry.appendVariant(value)
            }
        }
    }
}
