import Testing
@testable import WidgetHostCore

@Suite("Duplicate JSON keys")
struct DuplicateKeyTests {
    @Test("Every key given twice in one object is found, with where, however it is spelled")
    func found() throws {
        #expect((try JSONValue.decode(#"{"a":1,"b":{"a":2},"c":[{"a":3}]}"#)).duplicateKeys.isEmpty, "the same key in different objects is fine")
        #expect((try JSONValue.decode(#"{"a":"a","b":["a","a"]}"#)).duplicateKeys.isEmpty, "values are not keys")
        #expect(
            (try JSONValue.decode(#"{"a":1,"a":2,"c":[0,{"x":{"k":1," k":2,"k":3}}]}"#)).duplicateKeys
                == [JSONDuplicateKey(path: "$", key: "a"), JSONDuplicateKey(path: "$.c[1].x", key: "k")])
        #expect((try JSONValue.decode(#"{"url":"a","\u0075rl":"b"}"#)).duplicateKeys == [JSONDuplicateKey(path: "$", key: "url")])
        #expect((try JSONValue.decode(#"{"q\"":1,"q\"":2,"e":"}{,:\"["}"#)).duplicateKeys == [JSONDuplicateKey(path: "$", key: "q\"")])
        // In the order they appear: a key given twice before the keys its second value repeats.
        let nested = try JSONValue.decode(#"{"a":{"k":1},"a":{"k":2,"k":3}}"#)
        #expect(nested.duplicateKeys == [JSONDuplicateKey(path: "$", key: "a"), JSONDuplicateKey(path: "$.a", key: "k")])
        #expect(nested.value == .object(["a": .object(["k": .integer(1)])]), "the first value is kept")
    }

    @Test("Content, Live Activity content and bundles with a key given twice are InvalidContent naming it; the lint reports each")
    func refused() throws {
        let twice = #"{"type":"v","widgetURL":"faults://good","widgetURL":"https://evil.example/a"}"#
        #expect(throws: HostError.invalidContent("content: $ has the key 'widgetURL' more than once; parsers disagree on which value counts (renderers keep the last), so give each key once")) {
            try ViewTree.parse(twice)
        }
        let activity = "{" + ["lockScreen", "compactLeading", "compactTrailing", "minimal", "expanded"].map { "\"\($0)\":{\"type\":\"text\"}" }
            .joined(separator: ",") + #","minimal":{"type":"text"}}"#
        #expect(throws: HostError.self) { try ActivityContent.parse(activity) }
        #expect(throws: HostError.self) { try WidgetBundle.parse(#"{"widgets":[],"widgets":[]}"#) }
        let findings = try ContentLint.lint(
            json: #"{"type":"v","a":1,"a":2,"children":[{"type":"t","b":1,"b":2}]}"#, family: .systemSmall, policy: .current)
        #expect(findings.filter { $0.code == .duplicateKey }.map(\.severity) == [.error, .error])
    }
}

@Suite("Bundle limits")
struct BundleLimitTests {
    @Test("Bundles over the byte, kind or parameter limits are LimitExceeded naming the limit; a kind given twice is found in one pass")
    func limits() throws {
        func bundle(kinds: Int, parameters: Int = 0) -> String {
            let parameterList = (0..<parameters).map { #"{"name":"p\#($0)"}"# }.joined(separator: ",")
            let configuration = parameters > 0 ? #","configuration":{"intent":"I","parameters":[\#(parameterList)]}"# : ""
            return #"{"widgets":["# + (0..<kinds).map { #"{"kind":"k\#($0)","families":["systemSmall"]\#(configuration)}"# }.joined(separator: ",") + "]}"
        }
        #expect(try WidgetBundle.parse(bundle(kinds: 32)).kinds.count == 32)
        #expect(throws: HostError.limitExceeded("the bundle has 33 kinds; a bundle may have at most 32")) { try WidgetBundle.parse(bundle(kinds: 33)) }
        #expect(throws: HostError.self) { try WidgetBundle.parse(bundle(kinds: 1, parameters: 33)) }
        let big = bundle(kinds: 100_000)
        #expect(throws: HostError.limitExceeded("the bundle is \(big.utf8.count) bytes; a bundle may have at most 65536 bytes — describe kinds only, and send content with SetContent")) {
            try WidgetBundle.parse(big)
        }
        let twice = #"{"widgets":[{"kind":"a","families":["systemSmall"]},{"kind":"a","families":["systemSmall"]}]}"#
        #expect(throws: HostError.invalidContent("widgets[1].kind 'a' appears twice; each kind must be unique in the bundle")) { try WidgetBundle.parse(twice) }
    }
}
