import Foundation
import Testing
@testable import WidgetHostCore

/// Sizes are worked out by hand below; each was also checked against the body
/// length libdbus gives a message with the same arguments.
@Suite("D-Bus wire size of option values")
struct WireSizeTests {
    func size(_ dictionaries: [[String: OptionValue]]) -> Int? {
        OptionValue.serializedSize(ofDictionaries: dictionaries)
    }

    @Test("Empty dictionaries: a 4-byte length, then padding to the 8-byte alignment of dict entries")
    func empty() {
        #expect(size([]) == 0)
        #expect(size([[:]]) == 8)
        // 0..4 length, 4..8 padding; 8..12 length, 12..16 padding.
        #expect(size([[:], [:]]) == 16)
    }

    @Test("A string value: {\"a\": <\"b\">}")
    func stringValue() {
        // 0 length, 4 pad → 8; key "a": 4+1+1 → 14; signature "s": 1+1+1 → 17;
        // align 4 → 20; "b": 4+1+1 → 26.
        #expect(size([["a": .string("b")]]) == 26)
        // The second dictionary starts at align4(26) = 28: length → 32 (already 8-aligned);
        // key "c" → 38; signature "b" → 41; align 4 → 44; boolean → 48.
        #expect(size([["a": .string("b")], ["c": .bool(true)]]) == 48)
        // Multi-byte UTF-8 counts in bytes: "é" is 2 bytes.
        #expect(size([["a": .string("é")]]) == 27)
    }

    @Test("Integers in a variant are 8-byte x or t, aligned to 8")
    func integers() {
        // 8; key → 14; signature "x" → 17; align 8 → 24; 8 bytes → 32.
        #expect(size([["a": .int(1)]]) == 32)
        #expect(size([["a": .uint(1)]]) == 32)
        #expect(size([["a": .double(1.5)]]) == 32)
    }

    @Test("Arrays: length, padding to the element alignment (even when empty), elements")
    func arrays() {
        // 8; key "k" → 14; signature "as" (1+2+1) → 18; align 4 → 20; length → 24;
        // "x": 4+1+1 → 30; align 4 → 32; "yz": 4+2+1 → 39.
        #expect(size([["k": .strings(["x", "yz"])]]) == 39)
        // 8; key → 14; "ai" → 18; align → 20; length → 24; two int32 → 32.
        #expect(size([["n": .array(elementSignature: "i", [.int(1), .int(2)])]]) == 32)
        // 8; key → 14; "at" → 18; align → 20; length → 24; padding to 8 is already met → 24.
        #expect(size([["t": .array(elementSignature: "t", [])]]) == 24)
        // {"b": <ay [7]>, "h": <an [1, 1]>}: "b": 8 → 14 → 18 → 20 → 24 → 25;
        // "h": align 8 → 32 → 38 → 42 → 44 → 48 → 50 → 52.
        #expect(size([["b": .array(elementSignature: "y", [.int(7)]), "h": .array(elementSignature: "n", [.int(1), .int(1)])]]) == 52)
        // An array of variants: each item carries its own signature.
        // 8; key → 14; "av" → 18; align → 20; length → 24; <"a">: sig → 27, align → 28, → 34;
        // <x 2>: sig 34 → 37, align 8 → 40, → 48.
        #expect(size([["v": .array(elementSignature: "v", [.string("a"), .int(2)])]]) == 48)
    }

    @Test("Nested dictionaries and a mixed pair")
    func nested() {
        // 8; key "d" → 14; "a{sv}" (1+5+1) → 21; align 4 → 24; length → 28; padding → 32.
        #expect(size([["d": .dict([:])]]) == 32)
        let first: [String: OptionValue] = ["o": .objectPath("/a"), "y": .double(1.5), "zz": .uint(5)]
        let second: [String: OptionValue] = [
            "list": .array(elementSignature: "a{sv}", [.dict([:])]), "nested": .dict(["q": .bool(false)]),
        ]
        // first: 8; "o" 14 → 17 → 20 → 27; "y" 32 → 38 → 41 → 48 → 56; "zz" 56 → 63 → 66 → 72 → 80.
        // second at 80: length → 84, padding → 88; "list" → 97; "aa{sv}" → 105; align → 108; length → 112;
        // the empty a{sv}: length → 116, padding → 120; "nested" → 131; "a{sv}" → 138; align → 140;
        // length → 144; "q" → 150; "b" → 153; align → 156; boolean → 160.
        #expect(size([first, second]) == 160)
        #expect(LiveActivityStore.payloadSize(attributes: first, state: second) == 160)
    }

    @Test("marshalledEnd pads from the given offset")
    func offsets() {
        #expect(OptionValue.string("ab").marshalledEnd(as: "s", from: 1) == 11)
        #expect(OptionValue.int(1).marshalledEnd(as: "x", from: 1) == 16)
        #expect(OptionValue.int(1).marshalledEnd(as: "n", from: 1) == 4)
        #expect(OptionValue.int(1).marshalledEnd(as: "y", from: 3) == 4)
        #expect(OptionValue.int(1).marshalledEnd(as: "i", from: 5) == 12)
        // A variant: signature "x" (3 bytes) from 0, then the value 8-aligned.
        #expect(OptionValue.int(1).marshalledEnd(as: "v", from: 0) == 16)
        #expect(OptionValue.bool(true).marshalledEnd(as: "v", from: 1) == 8)
    }

    @Test("Values that cannot be marshalled have no size")
    func unmarshallable() {
        #expect(size([["x": .other(signature: "(ii)")]]) == nil)
        #expect(size([[:], ["x": .dict(["deep": .other(signature: "h")])]]) == nil)
        #expect(OptionValue.array(elementSignature: "s", [.int(1)]).marshalledEnd(as: "as", from: 0) == nil)
        #expect(OptionValue.array(elementSignature: "ii", []).marshalledEnd(as: "aii", from: 0) == nil)
        #expect(OptionValue.uint(1).marshalledEnd(as: "x", from: 0) == nil)
        #expect(OptionValue.int(1).marshalledEnd(as: "t", from: 0) == nil)
        #expect(OptionValue.string("a").marshalledEnd(as: "o", from: 0) == nil)
        #expect(OptionValue.dict([:]).unmarshallablePart(as: "v") == nil)
        #expect(OptionValue.dict(["a": .strings(["x"]), "b": .array(elementSignature: "(ii)", [.other(signature: "(ii)")])])
            .unmarshallablePart(as: "v") == "(ii)")
        // An empty array of structs has a size even though no struct can be held.
        #expect(OptionValue.array(elementSignature: "(ii)", []).marshalledEnd(as: "v", from: 0) == 16)
    }

    @Test(
        "unmarshallablePart is nil exactly when the value is marshallable",
        arguments: [
            (OptionValue.string("a"), "v"), (.int(1), "i"), (.uint(1), "x"), (.other(signature: "(ii)"), "v"),
            (.array(elementSignature: "ii", []), "v"), (.array(elementSignature: "s", [.int(1)]), "v"),
            (.array(elementSignature: "v", [.string("a"), .other(signature: "g")]), "v"), (.dict(["a": .strings([])]), "a{sv}"),
            (.dict(["a": .strings([])]), "as"), (.strings(["a"]), "ai"),
        ])
    func partAgreesWithMarshallable(_ value: OptionValue, _ signature: String) {
        #expect((value.unmarshallablePart(as: signature) == nil) == value.isMarshallable(as: signature))
    }

    @Test(
        "Single complete types",
        arguments: [
            ("s", true), ("as", true), ("a{sv}", true), ("(ii)", true), ("a(sa{sv})", true), ("aas", true), ("v", true),
            ("", false), ("ii", false), ("a", false), ("(", false), ("()", false), ("a{vs}", false), ("{sv}", false),
            ("a{sv", false), ("(i", false), ("z", false),
        ])
    func completeTypes(_ signature: String, _ valid: Bool) {
        #expect(OptionValue.isSingleCompleteType(signature) == valid)
    }
}
