import DBus
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `depth` arrays around `leaf`: `a…a<leaf>`, each holding one element.
func nestedArrays(_ depth: Int, _ leaf: DBusValue) -> DBusValue {
    var value = leaf
    for _ in 0..<depth { value = .array(element: value.signature, [value]) }
    return value
}

/// `depth` structs around `leaf`, each with a second field so levels differ.
func nestedStructs(_ depth: Int, _ leaf: DBusValue) -> DBusValue {
    var value = leaf
    for level in 0..<depth { value = .structure([value, .uint16(UInt16(level))]) }
    return value
}

/// `depth` variants around `leaf`.
func nestedVariants(_ depth: Int, _ leaf: DBusValue) -> DBusValue {
    var value = leaf
    for _ in 0..<depth { value = .variant(value) }
    return value
}

/// Values of every type, with the extremes of each.
let sampleValues: [DBusValue] = {
    var values: [DBusValue] = [
        .byte(0), .byte(255),
        .bool(true), .bool(false),
        .int16(.min), .int16(.max), .int16(-1),
        .uint16(0), .uint16(.max),
        .int32(.min), .int32(.max), .int32(0),
        .uint32(.max), .uint32(1),
        .int64(.min), .int64(.max), .int64(-1),
        .uint64(.max), .uint64(0),
        .double(.nan), .double(Double(bitPattern: 0x7ff8_0000_dead_beef)), .double(-.nan),
        .double(-0.0), .double(0.0), .double(.infinity), .double(-.infinity), .double(.pi),
        .double(.leastNonzeroMagnitude), .double(.greatestFiniteMagnitude), .double(-1e-300),
        .string(""), .string("plain ascii"), .string("héllo wörld ✓ 日本語 🎉 \u{1F468}\u{200D}\u{1F469}\u{200D}\u{1F467}"),
        .string("e\u{301} vs \u{E9}"), .string("tab\tnewline\nquote\"apos'amp&lt<gt>"),
        .string(String(repeating: "0123456789abcdef", count: 4096)),
        .objectPath("/"), .objectPath("/org/widgethost/Some_Path/x9"),
        .signature(""), .signature("a{oa{sa{sv}}}(ybnqiuxtdsogh)av"),
        // Empty arrays of every kind.
        .array(element: "y", []), .array(element: "b", []), .array(element: "n", []), .array(element: "q", []),
        .array(element: "i", []), .array(element: "u", []), .array(element: "x", []), .array(element: "t", []),
        .array(element: "d", []), .array(element: "s", []), .array(element: "o", []), .array(element: "g", []),
        .array(element: "h", []), .array(element: "v", []), .array(element: "(ii)", []), .array(element: "a{sv}", []),
        .array(element: "as", []), .array(element: "aay", []),
        .dictionary(key: "s", value: "v", []), .dictionary(key: "i", value: "s", []),
        .dictionary(key: "o", value: "a{sa{sv}}", []),
        // Arrays with content.
        .array(element: "y", (0...255).map { .byte(UInt8($0)) }),
        .array(element: "b", [.bool(true), .bool(false), .bool(true)]),
        .array(element: "n", [.int16(.min), .int16(0), .int16(.max)]),
        .array(element: "q", [.uint16(.max), .uint16(1)]),
        .array(element: "i", [.int32(.min), .int32(-1), .int32(.max)]),
        .array(element: "u", [.uint32(.max)]),
        .array(element: "x", [.int64(.min), .int64(.max)]),
        .array(element: "t", [.uint64(.max), .uint64(0)]),
        .array(element: "d", [.double(.nan), .double(-0.0), .double(1.5)]),
        .strings(["", "a", "ünïcödé", "🎉"]),
        .array(element: "o", [.objectPath("/"), .objectPath("/a/b")]),
        .array(element: "g", [.signature(""), .signature("a{sv}")]),
        .array(element: "(ii)", [.structure([.int32(1), .int32(2)]), .structure([.int32(-3), .int32(.max)])]),
        .array(element: "aa{sv}", [.array(element: "a{sv}", []), .array(element: "a{sv}", [.vardict(["k": .int32(1)])])]),
        .array(element: "as", [.strings([]), .strings(["x"]), .strings(["y", "z"])]),
        .array(element: "v", [.variant(.int32(1)), .variant(.string("two")), .variant(.variant(.bool(true))), .variant(.strings([]))]),
        // Dictionaries.
        .vardict([
            "byte": .byte(7), "string": .string("s"), "nested": .vardict(["deeper": .array(element: "d", [.double(2.5)])]),
            "empty": .strings([]), "path": .objectPath("/p"),
        ]),
        .dictionary(key: "i", value: "s", [.init(.int32(1), .string("one")), .init(.int32(-2), .string("minus two")), .init(.int32(.max), .string(""))]),
        .dictionary(
            key: "o", value: "a{sa{sv}}",
            [
                .init(
                    .objectPath("/org/example/One"),
                    .dictionary(
                        key: "s", value: "a{sv}",
                        [
                            .init(.string("org.example.A"), .vardict(["Name": .string("one"), "Count": .uint32(3)])),
                            .init(.string("org.example.B"), .vardict([:])),
                        ])),
                .init(.objectPath("/org/example/Two"), .dictionary(key: "s", value: "a{sv}", [])),
            ]),
        .dictionary(key: "y", value: "ay", [.init(.byte(0), .array(element: "y", [.byte(1)]))]),
        .dictionary(key: "t", value: "(sd)", [.init(.uint64(.max), .structure([.string("max"), .double(.nan)]))]),
        .dictionary(key: "g", value: "b", [.init(.signature("a{sv}"), .bool(true))]),
        .dictionary(key: "d", value: "x", [.init(.double(-0.0), .int64(.min))]),
        // Structs, nested.
        .structure([.int32(1)]),
        .structure([
            .byte(1), .bool(true), .int16(-2), .uint16(3), .int32(-4), .uint32(5), .int64(-6), .uint64(7), .double(8.5),
            .string("nine"), .objectPath("/ten"), .signature("(i)"),
        ]),
        .structure([.structure([.int32(1), .structure([.string("a"), .array(element: "d", [.double(.pi)])])]), .structure([.variant(.structure([.bool(false)]))])]),
        .array(element: "(sa{sv}av)", [.structure([.string("x"), .vardict(["a": .int32(1)]), .array(element: "v", [.variant(.string("v"))])])]),
        // Variants of variants.
        .variant(.int32(42)), .variant(.variant(.variant(.string("three deep")))), .variant(.strings(["in", "variant"])),
        .variant(.vardict(["v": .variant(.variant(.uint64(.max)))])),
        // Deep nesting, up to the protocol's limits: 32 arrays, 32 structs.
        nestedArrays(32, .int32(32)),
        nestedStructs(32, .string("bottom")),
        // With the variant Echo adds, 64 variants: the deepest nesting a message may carry.
        nestedVariants(63, .byte(63)),
        nestedArrays(16, nestedStructs(16, .variant(nestedArrays(8, .string("mixed"))))),
    ]
    values.append(.array(element: "v", [nestedVariants(10, .array(element: "(iv)", [.structure([.int32(1), .variant(.vardict([:]))])]))]))
    return values
}()

/// A pipe with `text` written into it; returns the read end.
func pipeHolding(_ text: String) throws -> (read: Int32, write: Int32) {
    var fds: [Int32] = [-1, -1]
    guard pipe(&fds) == 0 else { throw DBusEncodingError("pipe failed: errno \(errno)") }
    let written = text.withCString { write(fds[1], $0, strlen($0)) }
    guard written == text.utf8.count else { throw DBusEncodingError("short write") }
    return (fds[0], fds[1])
}

/// Reads what is currently in a pipe (non-blocking after the first byte is there).
func readAvailable(_ fd: Int32, expecting count: Int) -> String {
    var buffer = [UInt8](repeating: 0, count: count)
    var got = 0
    while got < count {
        let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress! + got, count - got) }
        if n <= 0 { break }
        got += n
    }
    return String(decoding: buffer.prefix(got), as: UTF8.self)
}

@Suite("Type round trips through the bus")
struct TypeRoundTripTests {
    @Test("every type survives Echo(v) and a method typed for it, bit for bit")
    func everyType() async throws {
        try await withBus { fixture in
            let server = try await fixture.connect("server")
            let client = try await fixture.connect("client")
            let echo = try EchoObject(on: server, typedSignatures: sampleValues.map(\.signature))
            let destination = try #require(server.uniqueName)

            for value in sampleValues {
                // Through a variant.
                let viaVariant = try await client.call(
                    destination: destination, path: testPath, interface: testInterface, member: "Echo", [.variant(value)])
                #expect(viaVariant.count == 1)
                if case .variant(let back)? = viaVariant.first {
                    #expect(bitwiseEqual(back, value), "Echo(v) changed \(value.signature): sent \(value), got \(back)")
                } else {
                    Issue.record("Echo(v) answered \(viaVariant) for \(value.signature)")
                }
                // Through the method declared with the value's own type.
                let method = try #require(echo.typedMethods[value.signature])
                let typed = try await client.call(
                    destination: destination, path: testPath, interface: testInterface, member: method, [value])
                #expect(typed.count == 1)
                #expect(typed.first.map { bitwiseEqual($0, value) } == true, "\(method)(\(value.signature)) sent \(value), got \(typed)")
            }
            #expect(echo.calls.count == 2 * sampleValues.count)
        }
    }

    @Test("every basic type at its extremes, in one call of thirteen arguments")
    func allBasicsAtOnce() async throws {
        try await withBus { fixture in
            let server = try await fixture.connect("server")
            let client = try await fixture.connect("client")
            _ = try EchoObject(on: server)
            let destination = try #require(server.uniqueName)
            let (readEnd, writeEnd) = try pipeHolding("thirteen")
            defer {
                close(readEnd)
                close(writeEnd)
            }
            let minimums: [DBusValue] = [
                .byte(0), .bool(false), .int16(.min), .uint16(0), .int32(.min), .uint32(0), .int64(.min), .uint64(0),
                .double(-.infinity), .string(""), .objectPath("/"), .signature(""), .unixFD(readEnd),
            ]
            let maximums: [DBusValue] = [
                .byte(.max), .bool(true), .int16(.max), .uint16(.max), .int32(.max), .uint32(.max), .int64(.max), .uint64(.max),
                .double(.nan), .string("\u{10FFFF}\u{7F}\u{1}"), .objectPath("/Z/z/_/9"), .signature("a{sv}"), .unixFD(readEnd),
            ]
            for arguments in [minimums, maximums] {
                let back = try await client.call(
                    destination: destination, path: testPath, interface: testInterface, member: "EchoAll", arguments)
                #expect(back.map(\.signature).joined() == EchoObject.basics)
                for (sent, got) in zip(arguments.dropLast(), back.dropLast()) {
                    #expect(bitwiseEqual(sent, got), "sent \(sent), got \(got)")
                }
                // The descriptor comes back as a new number for the same pipe.
                guard case .unixFD(let fd)? = back.last else {
                    Issue.record("no fd in \(back)")
                    continue
                }
                #expect(fd >= 0 && fd != readEnd)
                #expect(fcntl(fd, F_GETFD) != -1)
                close(fd)
            }
            // NaN's payload is kept: compare bit patterns, not values.
            let nan = Double(bitPattern: 0x7ff8_0000_0000_1234)
            let back = try await client.call(
                destination: destination, path: testPath, interface: testInterface, member: "Echo", [.variant(.double(nan))])
            guard case .variant(.double(let d))? = back.first else {
                Issue.record("Echo(NaN) answered \(back)")
                return
            }
            #expect(d.isNaN)
            #expect(d.bitPattern == nan.bitPattern)
        }
    }

    @Test("messages many times the socket buffer cross intact, several at once")
    func largeMessages() async throws {
        try await withBus { fixture in
            let server = try await fixture.connect("server")
            let client = try await fixture.connect("client")
            _ = try EchoObject(on: server, typedSignatures: ["ay"])
            let destination = try #require(server.uniqueName)
            let bytes = DBusValue.array(element: "y", (0..<300_000).map { .byte(UInt8(truncatingIfNeeded: $0 &* 31)) })
            try await withThrowingTaskGroup(of: Void.self) { group in
                for i in 0..<4 {
                    group.addTask {
                        // 4 MiB strings, different per lane so a mix-up would show.
                        let text = String(repeating: "lane \(i) ✓ ", count: 4 << 20 / 12)
                        let back = try await client.call(
                            destination: destination, path: testPath, interface: testInterface, member: "EchoString", [.string(text)])
                        #expect(back == [.string(text)])
                    }
                }
                group.addTask {
                    let back = try await client.call(
                        destination: destination, path: testPath, interface: testInterface, member: "Typed0", [bytes])
                    #expect(back == [bytes])
                }
                try await group.waitForAll()
            }
        }
    }

    @Test("a unix fd crosses the bus: the received descriptor reads what was written to the pipe")
    func unixFileDescriptors() async throws {
        try await withBus { fixture in
            let server = try await fixture.connect("server")
            let client = try await fixture.connect("client")
            let echo = try EchoObject(on: server, typedSignatures: ["h", "ah", "(sh)"])
            let destination = try #require(server.uniqueName)

            // Plain h.
            do {
                let text = "written before the call \(UUID())"
                let (readEnd, writeEnd) = try pipeHolding(text)
                let back = try await client.call(
                    destination: destination, path: testPath, interface: testInterface, member: echo.typedMethods["h"]!,
                    [.unixFD(readEnd)])
                close(readEnd)
                guard case .unixFD(let received)? = back.first else {
                    Issue.record("no fd in \(back)")
                    close(writeEnd)
                    return
                }
                #expect(received != readEnd)
                #expect(readAvailable(received, expecting: text.utf8.count) == text)
                // Still the same pipe: more writes arrive on the received descriptor.
                _ = "more".withCString { write(writeEnd, $0, 4) }
                #expect(readAvailable(received, expecting: 4) == "more")
                close(writeEnd)
                close(received)
            }
            // h inside a variant, an array and a struct.
            let pipes = try (0..<3).map { try pipeHolding("pipe \($0)") }
            defer { for p in pipes { close(p.read); close(p.write) } }
            let cases: [(String, DBusValue)] = [
                ("v", .variant(.unixFD(pipes[0].read))),
                ("ah", .array(element: "h", [.unixFD(pipes[1].read)])),
                ("(sh)", .structure([.string("label"), .unixFD(pipes[2].read)])),
            ]
            for (index, (signature, value)) in cases.enumerated() {
                let member = signature == "v" ? "Echo" : echo.typedMethods[signature]!
                let back = try await client.call(destination: destination, path: testPath, interface: testInterface, member: member, [value])
                let fds = back.flatMap(fileDescriptors(in:))
                #expect(fds.count == 1, "\(signature): \(back)")
                for fd in fds {
                    #expect(readAvailable(fd, expecting: "pipe \(index)".utf8.count) == "pipe \(index)")
                    close(fd)
                }
            }
        }
    }

    @Test("a method that declares no descriptor refuses a call carrying one, unread, before its handler runs")
    func undeclaredDescriptors() async throws {
        try await withBus { fixture in
            let server = try await fixture.connect("server")
            let client = try await fixture.connect("client")
            let echo = try EchoObject(on: server)
            let destination = try #require(server.uniqueName)
            let (readEnd, writeEnd) = try pipeHolding("unread")
            defer { close(readEnd); close(writeEnd) }
            do {
                _ = try await client.call(
                    destination: destination, path: testPath, interface: testInterface, member: "EchoString", [.unixFD(readEnd)])
                Issue.record("EchoString took a descriptor")
            } catch let error as DBusError {
                #expect(error.name == DBusError.invalidArgsName)
                #expect(error.message == "\(testInterface).EchoString takes no unix file descriptors, but the call carried some (type 'h'); send the call without them — they were closed unread")
            }
            #expect(echo.calls.count == 0)
        }
    }
}

