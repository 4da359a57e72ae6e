import DBus
import Testing

@Suite("Encoding errors are caught before anything is sent")
struct EncodingErrorTests {
    /// Values no D-Bus message may carry, each with why.
    static let badValues: [(String, DBusValue)] = [
        ("a string with NUL", .string("before\0after")),
        ("a NUL inside a nested string", .structure([.int32(1), .variant(.strings(["fine", "not\0fine"]))])),
        ("an object path without the leading slash", .objectPath("relative/path")),
        ("an object path with an empty element", .objectPath("/a//b")),
        ("an object path with a trailing slash", .objectPath("/a/b/")),
        ("an object path with a dash", .objectPath("/a-b")),
        ("an empty object path", .objectPath("")),
        ("an object path inside an array", .array(element: "o", [.objectPath("/ok"), .objectPath("/not ok")])),
        ("a malformed signature value", .signature("a{vs}")),
        ("an unclosed struct signature value", .signature("(ii")),
        ("an array whose element disagrees with its type", .array(element: "i", [.int32(1), .string("two")])),
        ("an array of strings holding an int", .array(element: "s", [.int32(1)])),
        ("an array of structs holding a different struct", .array(element: "(ii)", [.structure([.int32(1), .string("x")])])),
        ("an array of a{sv} holding a{si}", .array(element: "a{sv}", [.dictionary(key: "s", value: "i", [])])),
        ("an array type that is two types", .array(element: "ii", [])),
        ("an array type that is empty", .array(element: "", [])),
        ("an array type that is not a type", .array(element: "z", [])),
        ("a dictionary with a container key", .dictionary(key: "as", value: "i", [])),
        ("a dictionary with a variant key", .dictionary(key: "v", value: "i", [])),
        ("a dictionary whose key disagrees", .dictionary(key: "s", value: "v", [.init(.int32(1), .variant(.bool(true)))])),
        ("a dictionary whose value disagrees", .dictionary(key: "s", value: "v", [.init(.string("k"), .bool(true))])),
        ("an empty struct", .structure([])),
        ("a variant holding a bad array", .variant(.array(element: "u", [.int32(1)]))),
        ("a signature over 255 bytes", .structure(Array(repeating: .int32(1), count: 300))),
        ("33 nested arrays", nestedArrays(33, .int32(0))),
        ("33 nested structs", nestedStructs(33, .int32(0))),
        ("an array of 32-deep arrays", .array(element: String(repeating: "a", count: 32) + "i", [])),
        ("65 nested variants", nestedVariants(65, .int32(0))),
        ("32 arrays around a variant holding 33 more", nestedArrays(32, .variant(nestedArrays(33, .byte(0))))),
    ]

    @Test("Message.methodCall throws for every malformed value")
    func methodCallThrows() throws {
        for (why, value) in Self.badValues {
            #expect(throws: DBusEncodingError.self, "\(why)") {
                _ = try Message.methodCall(destination: nil, path: "/", interface: nil, member: "M", arguments: [.int32(1), value])
            }
            #expect(throws: DBusEncodingError.self, "\(why) in a signal") {
                _ = try Message.signal(path: "/", interface: "org.example.I", member: "S", arguments: [value])
            }
        }
    }

    @Test("the whole body's signature is limited to 255 bytes, not just each value's")
    func bodySignatureLimit() async throws {
        // Three structs of 85 bytes each: 255 in all, the most a message may carry.
        let wide = DBusValue.structure(Array(repeating: .byte(1), count: 83))
        #expect(wide.signature.utf8.count == 85)
        #expect(throws: DBusEncodingError.self) {
            _ = try Message.methodCall(destination: nil, path: "/", interface: nil, member: "M", arguments: [wide, wide, wide, .byte(0)])
        }
        let message = try Message.methodCall(destination: nil, path: "/", interface: nil, member: "M", arguments: [wide, wide])
        #expect(throws: DBusEncodingError.self) { try message.append([wide, .byte(0)]) }
        #expect(message.signature.utf8.count == 170)

        // Exactly 255 bytes is accepted by the bus and arrives intact.
        try await withBus { fixture in
            let sender = try await fixture.connect("sender")
            let receiver = try await fixture.connect("receiver")
            let recorder = Recorder(try await receiver.signals(MatchRule(interface: "org.widgethost.Test.Wide")))
            let signal = try Message.signal(path: "/wide", interface: "org.widgethost.Test.Wide", member: "Full", arguments: [wide, wide, wide])
            #expect(signal.signature.utf8.count == 255)
            try sender.send(signal)
            let received = try await recorder.wait(count: 1)
            #expect(received[0].arguments() == [wide, wide, wide])
            #expect(sender.isConnected)
        }
    }

    @Test("a closed or invalid file descriptor is refused before libdbus sees it")
    func badFileDescriptor() throws {
        let message = try Message.methodCall(destination: nil, path: "/", interface: nil, member: "M", arguments: [.int32(7)])
        for fd: Int32 in [-1, 987_654] {
            #expect(throws: DBusEncodingError.self) { try message.append([.string("first"), .unixFD(fd)]) }
            #expect(throws: DBusEncodingError.self) { try message.append([.variant(.array(element: "h", [.unixFD(fd)]))]) }
        }
        #expect(message.signature == "i")
    }

    @Test("a failed append leaves the message as it was")
    func appendIsAtomic() throws {
        let message = try Message.methodCall(destination: nil, path: "/", interface: nil, member: "M", arguments: [.int32(7)])
        #expect(throws: DBusEncodingError.self) {
            try message.append([.string("fine"), .uint64(1), .objectPath("bad")])
        }
        #expect(message.signature == "i")
        #expect(message.arguments() == [.int32(7)])
        try message.append([.string("fine")])
        #expect(message.signature == "is")
    }

    @Test("malformed header fields are refused")
    func badHeaders() throws {
        let cases: [(String, () throws -> Message)] = [
            ("path", { try Message.methodCall(destination: nil, path: "no/slash", interface: nil, member: "M") }),
            ("member with a dot", { try Message.methodCall(destination: nil, path: "/", interface: nil, member: "a.b") }),
            ("empty member", { try Message.methodCall(destination: nil, path: "/", interface: nil, member: "") }),
            ("interface without a dot", { try Message.methodCall(destination: nil, path: "/", interface: "nodot", member: "M") }),
            ("destination", { try Message.methodCall(destination: "bad..name", path: "/", interface: nil, member: "M") }),
            ("NUL in a member", { try Message.methodCall(destination: nil, path: "/", interface: nil, member: "M\0x") }),
            ("signal interface", { try Message.signal(path: "/", interface: "1bad.start", member: "S") }),
        ]
        for (why, make) in cases {
            #expect(throws: DBusEncodingError.self, "\(why)") { _ = try make() }
        }
    }

    @Test("Connection.call throws before sending: the handler never runs and the connection stays usable")
    func nothingIsSent() async throws {
        try await withBus { fixture in
            let server = try await fixture.connect("server")
            let client = try await fixture.connect("client")
            let echo = try EchoObject(on: server)
            let destination = try #require(server.uniqueName)

            for (why, value) in Self.badValues {
                do {
                    _ = try await client.call(
                        destination: destination, path: testPath, interface: testInterface, member: "Echo", [.variant(value)])
                    Issue.record("\(why) was sent")
                } catch {
                    #expect(error is DBusEncodingError, "\(why): \(error)")
                }
            }
            // The connection is intact and the handler saw none of the bad calls.
            #expect(client.isConnected)
            let back = try await client.call(
                destination: destination, path: testPath, interface: testInterface, member: "EchoString", [.string("still here")])
            #expect(back == [.string("still here")])
            #expect(echo.calls.count == 1)
        }
    }
}
