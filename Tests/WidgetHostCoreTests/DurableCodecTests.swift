import Foundation
import Testing
@testable import WidgetHostCore

/// The record codecs over generated values: whatever the host can store, it
/// reads back as it was.
@Suite("Durable codecs")
struct DurableCodecTests {
    /// Values tried per test; each seed gives the same values on every run.
    static let seeds: Range<UInt64> = 0..<1_500

    @Test("Option values of every type, nested in arrays and dictionaries, read back as they were written")
    func optionValues() throws {
        for seed in Self.seeds {
            var random = SeededRandom(seed: seed)
            let values = random.options(depth: 3)
            let text = try values.durableJSON()
            #expect(try [String: OptionValue](durableJSON: text) == values, "seed \(seed): \(text)")
        }
    }

    @Test("Stored widgets, Live Activities and timelines read back from their journal lines as they were written")
    func records() throws {
        for seed in Self.seeds {
            var random = SeededRandom(seed: seed)
            for record in [StateRecord.widget(random.widget()), .activity(random.activity()), .timeline(random.timeline())] {
                let line = try StateFile.line(record)
                #expect(line.hasSuffix("\n") && !line.dropLast().contains("\n"), "a record is one line")
                #expect(StateFile.record(Array(line.utf8).dropLast()) == record, "seed \(seed): \(line)")
            }
        }
    }

    @Test("Generated states read back from a snapshot, and from a version 1 snapshot's JSON")
    func states() throws {
        for seed in Self.seeds.prefix(200) {
            var random = SeededRandom(seed: seed)
            var state = DurableState()
            for _ in 0..<random.int(in: 0...4) {
                let widget = random.widget()
                state.apply(.bundle(appID: widget.appID, json: random.string()))
                state.apply(.widget(widget))
                var timeline = random.timeline()
                timeline.widgetID = widget.id
                state.apply(.timeline(timeline))
                state.apply(.activity(random.activity()))
            }
            let (read, reading) = StateFile.readSnapshot(try StateFile.snapshot(state))
            #expect(read == state, "seed \(seed)")
            #expect(reading.notes.isEmpty && reading.damaged.isEmpty)
            #expect(try DurableState(jsonText: state.durableJSON()) == state, "seed \(seed)")
        }
    }

    @Test("Numbers at their extremes keep every bit: whole numbers past what a double holds, and the shortest text of each double")
    func extremes() throws {
        let numbers: [OptionValue] = [
            .int(.min), .int(.max), .int(-1), .uint(.max), .uint(UInt64(Int64.max) + 1), .uint(1 << 53 + 1),
            .double(.greatestFiniteMagnitude), .double(-.greatestFiniteMagnitude), .double(.leastNonzeroMagnitude),
            .double(.leastNormalMagnitude), .double(0.1 + 0.2), .double(9_223_372_036_854_775_808), .double(-9_223_372_036_854_775_808),
            .double(1e16), .double(123_456_789.125),
        ]
        for number in numbers {
            let read = try OptionValue(durableJSON: number.durableJSON())
            #expect(read == number)
            if case .double(let wrote) = number, case .double(let back) = read { #expect(wrote.bitPattern == back.bitPattern) }
        }
    }

    @Test("A record of another shape is refused, naming where and what: a member missing or twice the type, a number out of range, nesting too deep")
    func refusals() throws {
        func problem(_ json: String) -> String? {
            do {
                _ = try StateRecord(jsonText: json)
                return nil
            } catch let error as StateFormatError {
                return error.description
            } catch {
                return "\(error)"
            }
        }
        let widget = #"{"id":"w1","appID":"a","kind":"K","family":"systemSmall","configuration":{"n":%@}}"#
        func option(_ value: String) -> String { #"{"widget":{"_0":"# + widget.replacingOccurrences(of: "%@", with: value) + "}}" }
        #expect(problem(option(#"{"x":1}"#)) == nil)
        #expect(problem(option(#"{"t":18446744073709551616}"#))?.hasPrefix("$.widget._0.configuration.n.t: expected a whole number from 0 to 18446744073709551615") == true)
        #expect(problem(option(#"{"t":-1}"#))?.hasPrefix("$.widget._0.configuration.n.t: expected a whole number") == true)
        #expect(problem(option(#"{"x":1.5}"#)) == "$.widget._0.configuration.n.x: expected a whole number, found a number with a fraction or too large")
        #expect(problem(option(#"{"s":"a","x":1}"#))?.hasSuffix("it has s, x") == true)
        #expect(problem(option(#"{}"#))?.hasSuffix("it has none") == true)
        #expect(problem(option(#"{"array":[]}"#)) == "$.widget._0.configuration.n: the member 'element' is missing: an array says the signature of its items")
        #expect(problem(option(#"{"b":1}"#)) == "$.widget._0.configuration.n.b: expected true or false, found a number")
        #expect(problem(option(#"{"dict":[]}"#)) == "$.widget._0.configuration.n.dict: expected an object, found an array")
        #expect(problem(option(#"{"element":"v","array":[{"s":"a"},{"s":7}]}"#)) == "$.widget._0.configuration.n.array[1].s: expected a string, found a number")
        let deep = String(repeating: #"{"dict":{"k":"#, count: 600) + #"{"x":1}"# + String(repeating: "}}", count: 600)
        #expect(problem(option(deep))?.contains("nests deeper than 512 levels") == true)
        #expect(problem(#"{"widget":{"_0":{"id":"w1"}}}"#) == "$.widget._0: the member 'appID' is missing")
        #expect(problem(#"{"widgetRemoved":{"id":"w1"},"minted":{"widget":"w1","activity":"a0"}}"#) == "$: a record is an object with exactly one member, its kind")
        #expect(problem(#"{"gadget":{}}"#) == "$.gadget: 'gadget' is not a kind of record")
        #expect(problem(#"{"widgetRemoved":{"id":"w1"}} x"#)?.contains("after the value") == true)
        // Members the host does not know are stepped over: a later host may add some.
        #expect(try StateRecord(jsonText: #"{"widgetRemoved":{"id":"w1","why":[1,{"a":null}]}}"#) == .widgetRemoved(id: "w1"))
    }
}

/// SplitMix64: the same values from the same seed, on every run and machine.
struct SeededRandom: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func int(in range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &self) }

    mutating func chance(_ percent: Int) -> Bool { int(in: 1...100) <= percent }

    /// Text that JSON escapes (quotes, backslashes, every control character)
    /// and that it does not: every UTF-8 length, a line separator, a byte order mark.
    static let scalars: [Unicode.Scalar] =
        (0x00...0x1F).map { Unicode.Scalar(UInt8($0)) } + "\"\\/ azAZ09~\u{7F}é中🧩\u{2028}\u{FEFF}\u{10FFFF}".unicodeScalars

    mutating func string() -> String {
        var text = String.UnicodeScalarView()
        for _ in 0..<int(in: 0...12) { text.append(Self.scalars.randomElement(using: &self)!) }
        return String(text)
    }

    mutating func int64() -> Int64 { chance(30) ? [Int64.min, .max, 0, -1, 1].randomElement(using: &self)! : Int64(bitPattern: next()) }

    mutating func uint64() -> UInt64 { chance(30) ? [UInt64.max, UInt64(Int64.max), UInt64(Int64.max) + 1, 0].randomElement(using: &self)! : next() }

    /// A finite double: its bits at random, or one of the extremes.
    mutating func double() -> Double {
        if chance(30) {
            return [0, -0.0, .greatestFiniteMagnitude, -.greatestFiniteMagnitude, .leastNonzeroMagnitude, .leastNormalMagnitude, 1e16, 0.1]
                .randomElement(using: &self)!
        }
        while true {
            let double = Double(bitPattern: next())
            if double.isFinite { return double }
        }
    }

    mutating func option(depth: Int) -> OptionValue {
        switch int(in: 0...(depth > 0 ? 9 : 7)) {
        case 0: .string(string())
        case 1: .objectPath("/" + string())
        case 2: .bool(chance(50))
        case 3: .int(int64())
        case 4: .uint(uint64())
        case 5, 6: .double(double())
        case 7: .other(signature: string())
        case 8: .array(elementSignature: string(), (0..<int(in: 0...4)).map { _ in option(depth: depth - 1) })
        default: .dict(options(depth: depth - 1))
        }
    }

    mutating func options(depth: Int) -> [String: OptionValue] {
        var options: [String: OptionValue] = [:]
        for _ in 0..<int(in: 0...5) { options[string()] = option(depth: depth) }
        return options
    }

    mutating func date() -> Int64? { chance(30) ? nil : int64() }

    mutating func widget() -> StoredWidget {
        StoredWidget(
            id: "w\(int(in: 1...1_000_000))", appID: string(), kind: string(), family: .systemSmall, configuration: options(depth: 2),
            content: chance(20) ? nil : string())
    }

    mutating func activity() -> StoredActivity {
        var activity = StoredActivity()
        (activity.id, activity.appID, activity.attributesType, activity.content) = ("a\(int(in: 1...1_000_000))", string(), string(), string())
        (activity.attributes, activity.state, activity.relevance) = (options(depth: 2), options(depth: 2), double())
        (activity.staleDate, activity.startedAt, activity.endedAt, activity.removeAt) = (date(), int64(), date(), date())
        return activity
    }

    mutating func timeline() -> StoredTimeline {
        var timeline = StoredTimeline()
        (timeline.widgetID, timeline.policy, timeline.reloadAt, timeline.receivedAt) = ("w\(int(in: 1...1_000_000))", string(), int64(), int64())
        timeline.entries = (0..<int(in: 0...3)).map { _ in StoredTimeline.Entry(at: int64(), content: string()) }
        return timeline
    }
}
