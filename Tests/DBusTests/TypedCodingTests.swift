import Testing

@testable import DBus

/// What generated code reads and writes messages with: `MessageReader` and
/// `MessageWriter`, value by value, no `DBusValue` tree in between; and
/// `GetManagedObjects`, written with the same writer as its objects are
/// walked, never built as values first: what a client reads must be what the
/// reply built from values was, to the byte.
@Suite("Typed reading and writing")
struct TypedCodingTests {
    @Test("the writer writes every type byte for byte as Message.append does, typed or as a value in the layout of GetManagedObjects, and the reader reads it back")
    func sameBytes() throws {
        func signal(_ arguments: [DBusValue] = []) throws -> Message {
            try Message.signal(path: "/", interface: "org.example.I", member: "S", arguments: arguments)
        }
        for value in sampleValues {
            let tree = try signal([.byte(1), value])
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

            // The value alone, then inside the layout GetManagedObjects writes — a{sv} in
            // a{sa{sv}} in a{oa{sa{sv}}} — in the first of two objects, so the second
            // starts wherever the value left the body.
            let objects = ["/o", "/p"]
            let nested = DBusValue.dictionary(
                key: "o", value: "a{sa{sv}}",
                objects.map { .init(.objectPath($0), .dictionary(key: "s", value: "a{sv}", [.init(.string("org.example.I"), .vardict(["P": value]))])) })
            let written = try signal()
            func write() throws -> Int {
                try written.write { writer in
                    try writer.append(value: value)
                    try writer.appendArray(of: "{oa{sa{sv}}}") { entries in
                        for object in objects {
                            try entries.appendDictEntry { entry in
                                try entry.append(objectPath: object)
                                try entry.appendArray(of: "{sa{sv}}") { interfaces in
                                    try interfaces.appendDictEntry { properties in
                                        try properties.append("org.example.I")
                                        try properties.append(value: .vardict(["P": value]))
                                    }
                                }
                            }
                        }
                    }
                }
            }
            // What is too deep in the layout is refused as Message.append refuses it.
            guard let expected = try? signal([value, nested]) else {
                #expect(throws: DBusEncodingError.self, "\(value.signature)") { try write() }
                continue
            }
            #expect(try write() == expected.bodyLength, "\(value.signature)")
            #expect(written.marshalled == expected.marshalled, "\(value.signature)")
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
        refused("an entry with a third value") {
            try $0.appendArray(of: "{sv}") { try $0.appendDictEntry { try $0.append("key"); try $0.appendVariant(.byte(1)); try $0.append("third") } }
        }
        refused("a dictionary entry in an array of strings") { try $0.appendArray(of: "s") { try $0.appendDictEntry { try $0.append("key") } } }
        refused("a dictionary whose key is a variant") { try $0.appendArray(of: "{vs}") { _ in } }
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
        // Variants written typed, one in the other: 64 is the deepest a value may be nested.
        func variants(_ count: Int, _ writer: inout MessageWriter) throws {
            guard count > 0 else { return try writer.append(UInt8(0)) }
            try writer.appendVariant(count > 1 ? "v" : "y") { try variants(count - 1, &$0) }
        }
        refused("65 variants written typed, one in the other") { try variants(65, &$0) }
        _ = try Message.methodCall(destination: nil, path: "/", interface: nil, member: "M") { try variants(64, &$0) }
    }

    @Test("an array over 64 MiB is LimitsExceeded, its elements written typed or as values")
    func arrayLimit() throws {
        let fourMiB = String(repeating: "x", count: 4 << 20)
        // 17 strings of 4 MiB: 68 MiB in one array.
        let ways: [(String, (inout MessageWriter) throws -> Void)] = [
            ("typed", { try $0.append(fourMiB) }),
            ("as values", { try $0.append(value: .string(fourMiB)) }),
        ]
        for (way, write) in ways {
            do {
                _ = try Message.signal(path: "/", interface: "org.example.I", member: "S") { writer in
                    try writer.appendArray(of: "s") { for _ in 0..<17 { try write(&$0) } }
                }
                Issue.record("a 68 MiB array was written \(way)")
            } catch let error as DBusError {
                #expect(error.name == DBusError.limitsExceededName)
                #expect(error.message.contains("at most 67108864 bytes in one array"), "\(way): \(error.message)")
            }
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

    @Test("GetManagedObjects lists what the reply built from values listed, to the byte: every object below the manager, by path")
    func managedObjectsUnchanged() async throws {
        try await withBus { fixture in
            let server = try await fixture.connect("server")
            let client = try await fixture.connect("client")
            let manager = "/org/widgethost/Test/Walked"
            server.addObjectManager(at: manager)
            let both = try interfaces(
                """
                <node>
                  <interface name="org.widgethost.Test.Handlers">
                    <property name="Leaf" type="s" access="read"/>
                    <property name="Hidden" type="s" access="write"/>
                    <property name="Any" type="v" access="read"/>
                  </interface>
                  <interface name="org.widgethost.Test.ReadAll">
                    <property name="Path" type="o" access="read"/>
                    <property name="Count" type="t" access="readwrite"/>
                  </interface>
                </node>
                """)
            @Sendable func leaf(_ path: String) -> String { String(path.split(separator: "/").last ?? "") }
            // A value of some type for each object, picked by its path's length
            // (not a NaN, which no value equals, so that the replies' values compare too).
            let samples = sampleValues.filter { $0 == $0 }
            @Sendable func any(_ path: String) -> DBusValue { samples[path.utf8.count % samples.count] }
            var handlers = ExportedInterface(both[0])
            handlers.property("Leaf", PropertyHandler(getAt: { .string(leaf($0)) }))
            handlers.property("Hidden", PropertyHandler(get: { .string("") }, set: { _ in }))
            handlers.property("Any", PropertyHandler(getAt: { any($0) }))
            var readAll = ExportedInterface(both[1])
            readAll.property("Path", PropertyHandler(getAt: { .objectPath($0) }))
            readAll.property("Count", PropertyHandler(get: { .uint64(0) }, set: { _ in }))
            readAll.readAll { path in [.objectPath(path), .uint64(UInt64(path.utf8.count))] }

            // Objects under several parents, whose paths interleave in path order
            // (a, a/x, a/x/y, a/x0, a0), the manager's own object and ones outside it.
            let below = ["a", "a0", "a/x", "a/x/y", "b", "a/x0", "z/deep/er", "w10", "w9", "w100"].map { "\(manager)/\($0)" }
            try server.export([handlers, readAll], at: Array(below.prefix(5)))
            for path in below.dropFirst(5) { try server.export([readAll], at: path) }
            try server.export([handlers], at: manager)
            try server.export([handlers], at: manager + "Sibling/o")
            try server.export([readAll], at: "/elsewhere")

            func properties(_ path: String) -> DBusValue {
                // In declared order, as the service reads them.
                let handled = DBusValue.dictionary(
                    key: "s", value: "v", [.init(.string("Leaf"), .variant(.string(leaf(path)))), .init(.string("Any"), .variant(any(path)))])
                let read = DBusValue.dictionary(
                    key: "s", value: "v",
                    [.init(.string("Path"), .variant(.objectPath(path))), .init(.string("Count"), .variant(.uint64(UInt64(path.utf8.count))))])
                let withHandlers = below.prefix(5).contains(path)
                return .dictionary(
                    key: "s", value: "a{sv}",
                    (withHandlers ? [.init(.string("org.widgethost.Test.Handlers"), handled)] : [])
                        + [.init(.string("org.widgethost.Test.ReadAll"), read)])
            }
            let expected = DBusValue.dictionary(
                key: "o", value: "a{sa{sv}}", below.sorted().map { .init(.objectPath($0), properties($0)) })
            let destination = try #require(server.uniqueName)
            let reply = try await client.call(
                Message.methodCall(
                    destination: destination, path: manager, interface: StandardInterfaces.objectManager,
                    member: StandardInterfaces.getManagedObjects))
            #expect(reply.arguments() == [expected])
            let built = try Message.signal(path: "/", interface: "org.example.I", member: "S", arguments: [expected])
            #expect(Self.body(reply) == Self.body(built), "the bytes of the reply built from values")
            guard case .dictionary(_, _, let entries)? = reply.arguments().first else { return }
            #expect(entries.map(\.key) == below.sorted().map { .objectPath($0) }, "by path, nothing outside the manager nor the manager itself")
        }
    }

    @Test("what a service gives back after a large GetManagedObjects runs after a reply of that size, not after a smaller one")
    func afterLargeReply() async throws {
        try await withBus { fixture in
            let server = try await fixture.connect("server")
            let client = try await fixture.connect("client")
            let manager = "/org/widgethost/Test/Large"
            server.addObjectManager(at: manager)
            let runs = Counter()
            server.afterLargeReply(ofAtLeast: 4096) { runs.increment() }
            var item = ExportedInterface(
                try interface(#"<node><interface name="org.widgethost.Test.Text"><property name="Text" type="s" access="read"/></interface></node>"#))
            item.property("Text", PropertyHandler(get: { .string(String(repeating: "t", count: 1000)) }))
            let destination = try #require(server.uniqueName)
            func managedObjects() async throws {
                _ = try await client.call(
                    destination: destination, path: manager, interface: StandardInterfaces.objectManager, member: StandardInterfaces.getManagedObjects)
            }
            // Three objects: about 3,100 bytes.
            for n in 1...3 { try server.export([item], at: "\(manager)/o\(n)") }
            try await managedObjects()
            #expect(runs.count == 0)
            // Five: about 5,200 bytes.
            for n in 4...5 { try server.export([item], at: "\(manager)/o\(n)") }
            try await managedObjects()
            // It runs on the server's thread just after the reply is queued.
            for _ in 0..<100 where runs.count == 0 { try await Task.sleep(for: .milliseconds(10)) }
            #expect(runs.count == 1)
        }
    }

    /// The body of `message`: its last `bodyLength` bytes on the wire.
    static func body(_ message: Message) -> [UInt8] {
        Array(message.marshalled.suffix(message.bodyLength))
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
