import DBus
import Testing

/// `Message(demarshalling:)` reads a whole message from its wire bytes, as a
/// connection reads one from a peer: what it accepts libdbus has validated,
/// and anything else throws.
@Suite("Messages read from their wire bytes")
struct DemarshalTests {
    /// The wire bytes of `message`, with serial 1: libdbus marshals an unsent
    /// message with serial 0, which no peer sends and no reader takes.
    static func wire(_ message: Message) -> [UInt8] {
        var bytes = message.marshalled
        bytes[8] = 1  // the serial's low byte, in the fixed header (little-endian on this machine)
        return bytes
    }

    @Test("a message read from its bytes has the same header and arguments, for values of every type")
    func roundTrip() throws {
        for value in sampleValues {
            let bytes = Self.wire(try Message.signal(path: "/a/b", interface: "org.example.I", member: "S", arguments: [.string("x"), value]))
            let message = try Message(demarshalling: bytes)
            #expect(message.kind == .signal && message.path == "/a/b" && message.interface == "org.example.I" && message.member == "S")
            #expect(message.serial == 1)
            #expect(message.signature == "s" + value.signature)
            // Compared as bytes: a NaN is not equal to itself.
            #expect(message.marshalled == bytes, "\(value)")
        }
    }

    @Test("bytes that are not a whole, valid message throw")
    func invalid() throws {
        let bytes = Self.wire(try Message.signal(path: "/a", interface: "org.example.I", member: "S", arguments: [.string("text")]))
        var badType = bytes
        badType[1] = 0  // message type 0 is invalid
        var badString = bytes
        badString[bytes.count - 2] = 0  // a NUL inside the string
        var unsent = bytes
        unsent[8] = 0
        for sample in [[], [UInt8(ascii: "l")], Array(repeating: 0, count: 64), Array(bytes.dropLast()), bytes + [0], badType, badString, unsent] {
            #expect(throws: DBusError.self, "\(sample)") { try Message(demarshalling: sample) }
        }
    }
}
