import Foundation
import Testing

@testable import WidgetHostCore

@Suite("JSON text")
struct JSONTextTests {
    /// What Foundation's general decoder makes of `text`, for comparison.
    static func foundation(_ text: String) throws -> JSONValue {
        try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
    }

    @Test("The parser reads what Foundation's decoder reads, value for value")
    func agreesWithFoundation() throws {
        let documents = [
            #"{"type":"vstack","children":[{"type":"text","text":"Hi","size":12.5},{"type":"image","name":"x"}]}"#,
            #"[1, -1, 0, -0, 1.0, 1e2, 1E-2, 2.5e+3, 9223372036854775807, -9223372036854775808, 9223372036854775808, 123456789012345678901234, 0.1]"#,
            #"{"s":"a\"b\\c\/d\b\f\n\r\t\u0000\u001f\u00e9\u20AC\ud83d\ude00 é😀"}"#,
            " \t\r\n{ \"a\" : [ true , false , null ] } \n",
            #""just a string""#, "42", "true", "null", "[]", "{}", "[[[[]]]]",
            #"{"":"empty key","\u0075rl":"escaped key"}"#,
        ]
        for text in documents {
            let (value, duplicates) = try JSONValue.decode(text)
            #expect(value == (try Self.foundation(text)), "\(text)")
            #expect(duplicates.isEmpty)
        }
    }

    @Test("Text that is not JSON is refused with where and what, Foundation agreeing it is not JSON")
    func refused() throws {
        let cases: [(String, String)] = [
            ("{\"a\":1,}", "line 1, column 8: a ',' before '}': remove the trailing comma"),
            ("[1,2,]", "line 1, column 6: a ',' before ']': remove the trailing comma"),
            ("{\"a\" 1}", "line 1, column 6: expected ':' after the key \"a\", found '1'"),
            ("{a:1}", "line 1, column 2: expected a key in double quotes, found 'a'"),
            ("[01]", "line 1, column 3: a number must not start with 0 unless it is 0 (found a leading zero)"),
            ("[1.]", "line 1, column 4: a '.' in a number must be followed by digits"),
            ("[-]", "line 1, column 3: a '-' must be followed by digits"),
            ("[1e]", "line 1, column 4: an exponent in a number must have digits"),
            ("1E400", "line 1, column 1: the number 1E400 is too large for a double"),
            (#""\ud800""#, "line 1, column 2: \\uD800 is half of a surrogate pair, and the other half does not follow"),
            (#""\udc00""#, "line 1, column 2: \\uDC00 is the second half of a surrogate pair without the first"),
            (#""\x""#, "line 1, column 2: '\\x' is not a JSON escape; use \\\" \\\\ \\/ \\b \\f \\n \\r \\t or \\uXXXX"),
            ("\"a\u{01}b\"", "line 1, column 3: a control character (U+0001) inside a string; write it as an escape such as \\n or \\u00XX"),
            ("\"open", "line 1, column 6: the text ends inside a string; close it with '\"'"),
            ("{} x", "line 1, column 4: unexpected 'x' after the value; a document holds one value"),
            ("nul", "line 1, column 1: expected a value (an object, array, string, number, true, false or null), found 'n'"),
            ("NaN", "line 1, column 1: expected a value (an object, array, string, number, true, false or null), found 'N'"),
            ("", "line 1, column 1: the text ends where a value should be"),
            ("{\n  \"a\": [1,\n  2 3]}", "line 3, column 5: expected ',' or ']' after a value in an array, found '3'"),
        ]
        for (text, message) in cases {
            #expect(throws: JSONSyntaxError.self, "\(text)") { try JSONValue.decode(text) }
            do {
                _ = try JSONValue.decode(text)
            } catch {
                #expect(error.description == message, "\(text)")
            }
            let trailingComma = message.contains("trailing comma")
            if !trailingComma { #expect(throws: (any Error).self, "Foundation refuses \(text) too") { try Self.foundation(text) } }
        }
        #expect(try JSONValue.decode("{\"a\":[1,2,],}", lenient: true).value == .object(["a": .array([.integer(1), .integer(2)])]))
    }

    @Test("Nesting deeper than 512 levels is refused, not a crash; 512 is read")
    func depth() throws {
        let deep = String(repeating: "[", count: 512) + String(repeating: "]", count: 512)
        #expect(throws: Never.self) { try JSONValue.decode(deep) }
        let deeper = String(repeating: "[", count: 513) + String(repeating: "]", count: 513)
        #expect(throws: JSONSyntaxError(line: 1, column: 513, problem: "the text nests deeper than 512 levels")) { try JSONValue.decode(deeper) }
    }

    @Test("Of a key given twice the first value counts, and every repeat is listed where it is")
    func duplicates() throws {
        let (value, duplicates) = try JSONValue.decode(#"{"a":1,"a":{"b":1,"b":2},"c":[{"d":0,"d":1}]}"#)
        #expect(value == .object(["a": .integer(1), "c": .array([.object(["d": .integer(0)])])]))
        #expect(duplicates == [JSONDuplicateKey(path: "$", key: "a"), JSONDuplicateKey(path: "$.a", key: "b"), JSONDuplicateKey(path: "$.c[0]", key: "d")])
        #expect(value == (try Self.foundation(#"{"a":1,"a":{"b":1,"b":2},"c":[{"d":0,"d":1}]}"#)))
    }

    @Test("What the writer writes reads back as the same value, through this parser and Foundation's")
    func roundTrip() throws {
        var generator = SystemRandomNumberGenerator()
        func random(_ depth: Int) -> JSONValue {
            switch Int.random(in: 0..<(depth > 3 ? 5 : 7), using: &generator) {
            case 0: return .null
            case 1: return .bool(Bool.random(using: &generator))
            case 2: return .integer(Int64.random(in: .min ... .max, using: &generator))
            case 3: return .number(Double.random(in: -1e6...1e6, using: &generator) + 0.5)
            case 4:
                let scalars = (0..<Int.random(in: 0..<12, using: &generator)).map { _ in
                    [Unicode.Scalar(UInt8.random(in: 0...0x7F, using: &generator)), "é", "\u{20AC}", "😀", "\"", "\\", "/", "\u{2028}"].randomElement(using: &generator)!
                }
                return .string(String(String.UnicodeScalarView(scalars)))
            case 5: return .array((0..<Int.random(in: 0..<5, using: &generator)).map { _ in random(depth + 1) })
            default:
                var fields: [String: JSONValue] = [:]
                for n in 0..<Int.random(in: 0..<5, using: &generator) { fields["k\(n)\u{1}\"é"] = random(depth + 1) }
                return .object(fields)
            }
        }
        for _ in 0..<500 {
            let value = random(0)
            for text in [value.jsonText, value.stableJSONText(), value.stableJSONText(pretty: true)] {
                #expect(try JSONValue.decode(text).value == value, "\(text)")
                #expect(try Self.foundation(text) == value, "\(text)")
            }
        }
        #expect(JSONValue.string("a\u{1}\n\"\\/é").jsonText == #""a\u0001\n\"\\/é""#)
        #expect(JSONValue.number(.nan).jsonText == "null")
    }

    @Test("Stable text sorts keys, writes empty containers as [] and {} and a number that is not finite as null")
    func stableText() {
        #expect(JSONValue.array([]).stableJSONText(pretty: true) == "[]")
        #expect(JSONValue.object([:]).stableJSONText(pretty: true) == "{}")
        let value = JSONValue.object([
            "b": .array([.integer(1), .array([]), .object([:])]), "a": .number(.infinity), "c": .object(["z": .null, "y": .string("/")]),
        ])
        #expect(value.stableJSONText() == #"{"a":null,"b":[1,[],{}],"c":{"y":"/","z":null}}"#)
        #expect(
            value.stableJSONText(pretty: true) == """
                {
                  "a": null,
                  "b": [
                    1,
                    [],
                    {}
                  ],
                  "c": {
                    "y": "/",
                    "z": null
                  }
                }
                """)
    }

    @Test("Journal records in each shape the host writes read back as the values they hold, and are written back the same")
    func records() throws {
        let widget = try StoredWidget(
            durableJSON: #"{"id":"w1","appID":"org.example.A","kind":"k\"","family":"systemSmall","configuration":{"s":{"s":"x\n"},"o":{"o":"/p"},"b":{"b":true},"x":{"x":-7},"t":{"t":18446744073709551615},"d":{"d":0.25},"a":{"element":"s","array":[{"s":"1"},{"s":"2"}]},"m":{"dict":{"k":{"x":1}}},"v":{"other":"(ii)"}},"content":"{\"type\":\"text\"}"}"#)
        #expect(widget.kind == "k\"" && widget.content == #"{"type":"text"}"#)
        #expect(widget.configuration == [
            "s": .string("x\n"), "o": .objectPath("/p"), "b": .bool(true), "x": .int(-7), "t": .uint(.max), "d": .double(0.25),
            "a": .strings(["1", "2"]), "m": .dict(["k": .int(1)]), "v": .other(signature: "(ii)"),
        ])
        let bare = try StoredWidget(durableJSON: #"{"id":"w2","appID":"a.B","kind":"k","family":"systemLarge","configuration":{}}"#)
        #expect(bare.content == nil && bare.configuration.isEmpty)
        let activity = try StoredActivity(
            durableJSON: #"{"id":"a1","appID":"a.B","attributesType":"T","content":"{}","attributes":{"n":{"x":1}},"state":{},"staleDate":5,"relevance":0.5,"startedAt":1,"endedAt":2,"removeAt":3}"#)
        #expect(activity.staleDate == 5 && activity.endedAt == 2 && activity.removeAt == 3 && activity.relevance == 0.5)
        let running = try StoredActivity(
            durableJSON: #"{"id":"a2","appID":"a.B","attributesType":"T","content":"{}","attributes":{},"state":{},"relevance":0,"startedAt":1}"#)
        #expect(running.staleDate == nil && running.endedAt == nil && running.removeAt == nil)
        let timeline = try StoredTimeline(
            durableJSON: #"{"widgetID":"w1","entries":[{"at":1,"content":"{}"},{"at":2,"content":"[]"}],"policy":"atEnd","reloadAt":0,"receivedAt":9}"#)
        #expect(timeline.entries.map(\.at) == [1, 2] && timeline.policy == "atEnd" && timeline.receivedAt == 9)
        let records: [StateRecord] = [
            .bundle(appID: "a.B", json: #"{"widgets":[]}"#), .bundleRemoved(appID: "a.B"), .widget(widget), .widget(bare),
            .widgetRemoved(id: "w1"), .activity(activity), .activity(running), .activityRemoved(id: "a1"), .timeline(timeline),
            .minted(widget: "w9", activity: "a0"),
        ]
        for record in records {
            let text = try record.jsonText()
            #expect(try StateRecord(jsonText: text) == record, "\(text)")
        }
        #expect(try StateRecord.bundleRemoved(appID: "a.B").jsonText() == #"{"bundleRemoved":{"appID":"a.B"}}"#)
        #expect(try StateRecord.widget(bare).jsonText() == #"{"widget":{"_0":{"id":"w2","appID":"a.B","kind":"k","family":"systemLarge","configuration":{}}}}"#)

        var broken = widget
        broken.configuration["nan"] = .double(.nan)
        #expect(throws: JSONWriter.NotFinite.self) { try StateRecord.widget(broken).jsonText() }
        #expect(throws: StateDirectoryError.self) { try StateFile.line(.widget(broken)) }
    }
}
