import Testing

@testable import DBus

/// What generated code reads and writes messages with: `MessageReader` and
/// `MessageWriter`, value by value, no `DBusValue` tree in between.
@Suite("Typed reading and writing")
struct TypedCodingTests {
    @Test("the writer writes every type byte for byte as Message.append does, and the reader reads it back")
    func sameBytes() throws {
        for value in sampleValues {
            let tree = try Message.signal(path: "/", interface: "org.example.I", member: "S", arguments: [.byte(1), value])
            let typed = try Message.signal(path: "/", interface: "org.example.I", member: "S") { writer in
                try writer.append(UInt8(1))
                try writeTyped(value, &writer)
            }
            #expect(typed.marshalled == tree.marshalled, "\(value.signature)")
            var reader = MessageReader(typed)
            #expect(try reader.readByte() == 1)
            let read = try readTyped(value.signature, &reader)
            #expect(bitwiseEqual(read, value), "\(value.signature): read back \(read)")
            #expect(reader.isAtEnd)
        }
    }

    @Test("a{sv} is written from a Swift dictionary in key order and read back as one, the variants unwrapped")
    func vardict() throws {
        let entries: [String: DBusValue] = ["zebra": .int32(1), "apple": .string("a"), "mango": .vardict(["inner": .bool(true)]), "kiwi": .strings([])]
        let typed = try Message.signal(path: "/", interface: "org.example.I", member: "S") { try $0.appendVardict(entries) }
        let tree = try Message.signal(path: "/", interface: "org.example.I", member: "S", arguments: [.vardict(entries)])
        #expect(typed.marshalled == tree.marshalled)
        var reader = MessageReader(typed)
        #expect(try reader.readVardict() == entries)
        // A dictionary of another type is refused, not misread.
        var other = MessageReader(try Message.signal(path: "/", interface: "org.example.I", member: "S", arguments: [.strings(["a"])]))
        #expect(throws: DBusError.self) { try other.readVardict() }
    }

    @Test("an a{sv} that writes its own entries is the same bytes as the dictionary, and a variant is checked against the type it declares")
    func writtenEntries() throws {
        struct Context: VardictWritable {
            func writeEntries(to writer: inout MessageWriter) throws {
                try writer.appendEntry("deadline", "x") { try $0.append(Int64(12)) }
                try writer.appendEntry("source", "a{sv}") { try $0.appendVardict(["kind": .string("K"), "id": .string("w1")]) }
            }
        }
        let entries: [String: DBusValue] = ["deadline": .int64(12), "source": .vardict(["kind": .string("K"), "id": .string("w1")])]
        let written = try Message.signal(path: "/", interface: "org.example.I", member: "S") { try $0.appendVardict(Context()) }
        let tree = try Message.signal(path: "/", interface: "org.example.I", member: "S", arguments: [.vardict(entries)])
        #expect(written.marshalled == tree.marshalled)
        func refused(_ why: String, _ body: (inout MessageWriter) throws -> Void) {
            #expect(throws: DBusEncodingError.self, "\(why)") {
                _ = try Message.signal(path: "/", interface: "org.example.I", member: "S") { try $0.appendArray(of: "{sv}", body) }
            }
        }
        refused("an int32 in a variant of type s") { try $0.appendEntry("k", "s") { try $0.append(Int32(1)) } }
        refused("a variant of type s left empty") { try $0.appendEntry("k", "s") { _ in } }
        refused("two values in a variant") { try $0.appendEntry("k", "s") { try $0.append("a"); try $0.append("b") } }
        refused("a variant type that is two types") { try $0.appendEntry("k", "ss") { try $0.append("a"); try $0.append("b") } }
    }

    @Test("reading a type other than the one in the message throws InvalidArgs, and so does reading past the end")
    func wrongType() throws {
        var reader = MessageReader(try Message.signal(path: "/", interface: "org.example.I", member: "S", arguments: [.int32(3)]))
        let error = try #require(throws: DBusError.self) { try reader.readString() }
        #expect(error.name == DBusError.invalidArgsName)
        #expect(try reader.readInt32() == 3)
        #expect(throws: DBusError.self) { try reader.readInt32() }
    }

    @Test("the writer refuses what Message.append refuses, and a value of a type its container does not hold, instead of libdbus aborting")
    func refusals() throws {
        func refused(_ why: String, _ body: (inout MessageWriter) throws -> Void) {
            #expect(throws: DBusEncodingError.self, "\(why)") {
                _ = try Message.methodCall(destination: nil, path: "/", interface: nil, member: "M", writing: body)
            }
        }
        for (why, value) in EncodingErrorTests.badValues {
            refused(why) { try $0.append(value: value) }
            refused("\(why), written typed") { try writeTyped(value, &$0) }
        }
        refused("an int32 in an array of strings") { try $0.appendArray(of: "s") { try $0.append(Int32(1)) } }
        refused("a string where a dictionary entry's key is a uint32") {
            try $0.appendArray(of: "{uv}") { try $0.appendDictEntry { try $0.append("key") } }
        }
        refused("an entry missing its value") { try $0.appendArray(of: "{sv}") { try $0.appendDictEntry { try $0.append("key") } } }
        refused("a structure in an array missing a field") { try $0.appendArray(of: "(si)") { try $0.appendStruct { try $0.append("only") } } }
        refused("a structure in an array with a field too many") {
            try $0.appendArray(of: "(s)") { try $0.appendStruct { try $0.append("one"); try $0.append("two") } }
        }
        refused("a dictionary entry outside a dictionary") { try $0.appendDictEntry { try $0.append("key"); try $0.appendVariant(.int32(1)) } }
        refused("an empty structure") { try $0.appendStruct { _ in } }
        refused("an array whose element type is two types") { try $0.appendArray(of: "ii") { _ in } }
        refused("a body signature over 255 bytes") { writer in
            for _ in 0..<3 { try writer.appendStruct { for _ in 0..<83 { try $0.append(UInt8(1)) } } }
            try writer.append(UInt8(0))
        }
        // The most a body signature may hold: three structures of 85 bytes.
        _ = try Message.methodCall(destination: nil, path: "/", interface: nil, member: "M") { writer in
            for _ in 0..<3 { try writer.appendStruct { for _ in 0..<83 { try $0.append(UInt8(1)) } } }
        }
    }

    @Test("an array over 64 MiB written typed is LimitsExceeded")
    func arrayLimit() throws {
        let fourMiB = String(repeating: "x", count: 4 << 20)
        do {
            _ = try Message.signal(path: "/", interface: "org.example.I", member: "S") { writer in
                try writer.appendArray(of: "s") { for _ in 0..<17 { try $0.append(fourMiB) } }
            }
            Issue.record("a 68 MiB array was written")
        } catch let error as DBusError {
            #expect(error.name == DBusError.limitsExceededName)
            #expect(error.message.contains("at most 67108864 bytes in one array"), "\(error.message)")
        }
    }

    @Test("a body over 128 MiB is LimitsExceeded as soon as a string or a value passes the limit, before the rest is written")
    func bodyLimit() throws {
        let fourMiB = String(repeating: "x", count: 4 << 20)
        // Arrays of 60 MiB, within the array limit: the third passes the body's, written typed, as a value or in a variant.
        let sixtyMiB = DBusValue.strings(Array(repeating: fourMiB, count: 15))
        let ways: [(String, (inout MessageWriter) throws -> Void)] = [
            ("typed", { try $0.appendArray(of: "s") { for _ in 0..<15 { try $0.append(fourMiB) } } }),
            ("as a value", { try $0.append(value: sixtyMiB) }),
            ("in a variant", { try $0.appendVariant(sixtyMiB) }),
        ]
        for (way, write) in ways {
            var written = 0
            do {
                _ = try Message.signal(path: "/", interface: "org.example.I", member: "S") { writer in
                    for _ in 0..<5 {
                        written += 1
                        try write(&writer)
                    }
                }
                Issue.record("a 300 MiB body was written \(way)")
            } catch let error as DBusError {
                #expect(error.name == DBusError.limitsExceededName)
                #expect(error.message.contains("at most 134217728 bytes in one message"), "\(error.message)")
            }
            #expect(written == 3, "\(way): the writing stopped at the array that passed the limit")
        }
        // Two strings end a byte short of the limit; a number after them, counted once the body is written, passes it.
        let first = String(repeating: "x", count: 60 << 20)
        let secondStart = Marshal.align(4 + first.utf8.count + 1, 4) + 4
        let second = String(repeating: "y", count: MessageLimits.maxBodyBytes - 1 - secondStart - 1)
        let fits = try Message.signal(path: "/", interface: "org.example.I", member: "S") { writer in
            try writer.append(first)
            try writer.append(second)
            try writer.append(UInt8(1))
        }
        #expect(fits.bodyLength == MessageLimits.maxBodyBytes)
        #expect(throws: DBusError.limitsExceeded(
            "the message body would be \(MessageLimits.maxBodyBytes + 8) bytes; D-Bus allows at most 134217728 bytes in one message")) {
            _ = try Message.signal(path: "/", interface: "org.example.I", member: "S") { writer in
                try writer.append(first)
                try writer.append(second)
                try writer.append(UInt64(1))
            }
        }
    }

    @Test("a method bound with .reading reads its arguments typed within the connection's limits and answers typed")
    func readingHandler() async throws {
        try await withBus { fixture in
            let server = try await fixture.connect("server")
            let client = try await fixture.connect("client")
            server.setDecodingLimits(
                DecodingLimits(maxContainerEntries: 4, maxDictionaryBytes: 32, errorName: "org.example.Error.TooMuch"))
            var exported = ExportedInterface(
                try interface(
                    """
                    <node><interface name="\(testInterface)">
                      <method name="Take">
                        <arg name="items" type="as" direction="in"/><arg name="options" type="a{sv}" direction="in"/>
                        <arg name="count" type="u" direction="out"/><arg name="options" type="a{sv}" direction="out"/>
                      </method>
                    </interface></node>
                    """))
            let runs = Counter()
            exported.method(
                "Take",
                .reading { call, arguments, reply in
                    var items: [String] = []
                    try arguments.readArray { items.append(try $0.readString()) }
                    let options = try arguments.readVardict()
                    runs.increment()
                    // The tree is still there for a handler that asks for it.
                    #expect(call.arguments == [.strings(items), .vardict(options)])
                    reply.succeed { writer in
                        try writer.append(UInt32(items.count))
                        try writer.appendVardict(options)
                    }
                })
            try server.export([exported], at: testPath)
            let destination = try #require(server.uniqueName)
            func take(_ items: [String], _ options: [String: DBusValue]) async throws -> [DBusValue] {
                try await client.call(
                    destination: destination, path: testPath, interface: testInterface, member: "Take", [.strings(items), .vardict(options)])
            }

            #expect(try await take(["a", "b", "c", "d"], ["k": .string("v")]) == [.uint32(4), .vardict(["k": .string("v")])])
            let entries = await expectDBusError("org.example.Error.TooMuch") { _ = try await take(["a", "b", "c", "d", "e"], [:]) }
            #expect(entries?.message.contains("more than 4 entries") == true, "\(String(describing: entries))")
            let bytes = await expectDBusError("org.example.Error.TooMuch") {
                _ = try await take([], ["key": .string(String(repeating: "x", count: 40))])
            }
            #expect(bytes?.message.contains("more than 32 bytes") == true, "\(String(describing: bytes))")
            #expect(runs.count == 1, "a handler ran for a call over the limits")
        }
    }
}

/// Writes `value` with the writer's typed calls, container by container, as generated code does.
func writeTyped(_ value: DBusValue, _ writer: inout MessageWriter) throws {
    switch value {
    case .byte(let v): try writer.append(v)
    case .bool(let v): try writer.append(v)
    case .int16(let v): try writer.append(v)
    case .uint16(let v): try writer.append(v)
    case .int32(let v): try writer.append(v)
    case .uint32(let v): try writer.append(v)
    case .int64(let v): try writer.append(v)
    case .uint64(let v): try writer.append(v)
    case .double(let v): try writer.append(v)
    case .string(let v): try writer.append(v)
    case .objectPath(let v): try writer.append(objectPath: v)
    case .signature(let v): try writer.append(signature: v)
    case .unixFD: try writer.append(value: value)
    case .array(let element, let items):
        try writer.appendArray(of: element) { writer in for item in items { try writeTyped(item, &writer) } }
    case .dictionary(let key, let type, let entries):
        try writer.appendArray(of: "{\(key)\(type)}") { writer in
            for entry in entries {
                try writer.appendDictEntry { entryWriter in
                    try writeTyped(entry.key, &entryWriter)
                    try writeTyped(entry.value, &entryWriter)
                }
            }
        }
    case .structure(let fields):
        try writer.appendStruct { writer in for field in fields { try writeTyped(field, &writer) } }
    case .variant(let content): try writer.appendVariant(content)
    }
}

/// Reads a value of the single complete type `signature` with the reader's typed calls.
func readTyped(_ signature: String, _ reader: inout MessageReader) throws -> DBusValue {
    switch signature.first {
    case "y": return .byte(try reader.readByte())
    case "b": return .bool(try reader.readBool())
    case "n": return .int16(try reader.readInt16())
    case "q": return .uint16(try reader.readUInt16())
    case "i": return .int32(try reader.readInt32())
    case "u": return .uint32(try reader.readUInt32())
    case "x": return .int64(try reader.readInt64())
    case "t": return .uint64(try reader.readUInt64())
    case "d": return .double(try reader.readDouble())
    case "s": return .string(try reader.readString())
    case "o": return .objectPath(try reader.readObjectPath())
    case "g": return .signature(try reader.readSignature())
    case "v": return .variant(try reader.readVariant())
    case "a" where signature.dropFirst().first == "{":
        let key = String(signature.dropFirst(2).prefix(1)), type = String(signature.dropFirst(3).dropLast())
        var entries: [DBusValue.DictEntry] = []
        try reader.readDictionary { entry in
            let k = try readTyped(key, &entry)
            entries.append(.init(k, try readTyped(type, &entry)))
        }
        return .dictionary(key: key, value: type, entries)
    case "a":
        let element = String(signature.dropFirst())
        var items: [DBusValue] = []
        try reader.readArray { items.append(try readTyped(element, &$0)) }
        return .array(element: element, items)
    case "(":
        let fields = Signature.split(String(signature.dropFirst().dropLast())) ?? []
        return try reader.readStruct { fieldReader in .structure(try fields.map { try readTyped($0, &fieldReader) }) }
    default:
        return try reader.readValue()
    }
}
