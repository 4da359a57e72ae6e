import Testing
@testable import WidgetHostCore

@Suite("Duplicate JSON keys")
struct DuplicateKeyTests {
    @Test("Every key given twice in one object is found, with where, however it is spelled")
    func found() {
        #expect(JSONValue.duplicateKeys(in: #"{"a":1,"b":{"a":2},"c":[{"a":3}]}"#).isEmpty, "the same key in different objects is fine")
        #expect(JSONValue.duplicateKeys(in: #"{"a":"a","b":["a","a"]}"#).isEmpty, "values are not keys")
        #expect(
            JSONValue.duplicateKeys(in: #"{"a":1,"a":2,"c":[0,{"x":{"k":1," k":2,"k":3}}]}"#)
                == [JSONDuplicateKey(path: "$", key: "a"), JSONDuplicateKey(path: "$.c[1].x", key: "k")])
        #expect(JSONValue.duplicateKeys(in: #"{"url":"a","\u0075rl":"b"}"#) == [JSONDuplicateKey(path: "$", key: "url")])
        #expect(JSONValue.duplicateKeys(in: #"{"q\"":1,"q\"":2,"e":"}{,:\"["}"#) == [JSONDuplicateKey(path: "$", key: "q\"")])
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
        #expect(findings.filter { $0.code == "duplicate-key" }.map(\.severity) == ["error", "error"])
    }
}
