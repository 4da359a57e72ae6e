import Foundation
import Testing
@testable import WidgetHostCore

/// The option structs generated from the XML's annotations
/// (docs/interfaces.md#options), read key by key: every declared key of every
/// method, so that a key added to the XML is tested with nothing added here.
@Suite("Method options")
struct MethodOptionsTests {
    /// A value each declared signature takes.
    static func sample(_ signature: String) -> OptionValue {
        switch signature {
        case "s": .string("x")
        case "o": .objectPath("/x")
        case "x": .int(1)
        case "d": .double(0.5)
        case "as": .strings(["x"])
        case "a{sv}": .dict(["k": .int(1)])
        default: .other(signature: signature)
        }
    }

    /// A default as the XML writes it (GVariant text), as a value.
    static func value(ofDefault text: String, _ signature: String) -> OptionValue? {
        switch signature {
        case "s" where text.hasPrefix("'") && text.hasSuffix("'"): .string(String(text.dropFirst().dropLast()))
        case "x": Int64(text).map(OptionValue.int)
        case "d": Double(text).map(OptionValue.double)
        default: nil
        }
    }

    /// Every generated struct with each of its keys.
    static var keys: [(options: any MethodOptions.Type, key: DeclaredOption)] {
        DeclaredOptions.all.flatMap { options in options.declared.map { (options, $0) } }
    }

    @Test("The XML declares options for RegisterApp, OpenURL, the taps and the three Live Activity calls")
    func declared() {
        #expect(Set(DeclaredOptions.all.map { $0.methods }).isSuperset(of: ["RegisterApp", "OpenURL", "Tap and Resolve", "StartActivity", "Update", "End"]))
        #expect(TapOptions.members.count == 4, "Widget.Tap declares them; Widget.Resolve and LiveActivity.Tap and Resolve name them")
        #expect(Self.keys.count >= 21)
    }

    @Test("An unknown key is InvalidArgument naming the method and every key it takes, read before any value")
    func unknownKeys() {
        for options in DeclaredOptions.all {
            expectHostError(.invalidArgument, mentioning: ["unknown option 'nope' for \(options.methods); remove it — its options are \(options.described)"]) {
                try options.init(["nope": .bool(true)])
            }
            // A declared key of the wrong type does not hide the unknown ones.
            let known = options.declared[0].key
            expectHostError(.invalidArgument, mentioning: ["unknown options 'a', 'b' for \(options.methods); remove them"]) {
                try options.init(["b": .bool(true), "a": .bool(true), known: .bool(true)])
            }
            var converted: [String] = []
            _ = try? options.init(["nope": "x", known: "y"]) { (value: String) in
                converted.append(value)
                return .string(value)
            }
            #expect(converted.isEmpty, "\(options.methods) converted \(converted) before refusing the unknown key")
        }
    }

    @Test("Every declared key refuses a value of another type, naming the key, the declared type and the one given")
    func wrongTypes() {
        for (options, option) in Self.keys {
            expectHostError(
                .invalidArgument, mentioning: ["option '\(option.key)' must be \(OptionValue.describe(signature: option.signature)), got b"]
            ) {
                try options.init([option.key: .bool(true)])
            }
        }
    }

    @Test("Every declared key takes a value of its type, and an absent key with a default reads as that default")
    func takes() throws {
        for (options, option) in Self.keys {
            #expect(try Self.differs(options, [option.key: Self.sample(option.signature)]), "\(options.methods) '\(option.key)'")
            if let text = option.defaultValue {
                let value = try #require(Self.value(ofDefault: text, option.signature), "\(option.key)'s default \(text)")
                #expect(try !Self.differs(options, [option.key: value]), "\(options.methods) '\(option.key)' defaults to \(text)")
            }
        }
    }

    /// Whether `values` read otherwise than no values at all.
    static func differs<Options: MethodOptions>(_: Options.Type, _ values: [String: OptionValue]) throws -> Bool {
        try Options(values) != Options([:])
    }

    @Test("An integer key takes every integer type within its declared range, and names the range beyond it")
    func integers() throws {
        let integers = Self.keys.filter { $0.key.signature == "x" }
        #expect(integers.count >= 3)
        for (options, option) in integers {
            let range = option.range ?? Int64.min...Int64.max
            let accepted = "give \(option.unit ?? "an integer") from \(range.lowerBound) to \(range.upperBound)"
            let within = [OptionValue.int(range.lowerBound), .int(range.upperBound)] + (range.upperBound >= 0 ? [.uint(UInt64(range.upperBound))] : [])
            for value in within {
                #expect(throws: Never.self, "\(option.key) = \(value)") { try options.init([option.key: value]) }
            }
            var beyond: [OptionValue] = [.uint(.max)]
            if range.lowerBound > .min { beyond += [.int(range.lowerBound - 1), .int(.min)] }
            if range.upperBound < .max { beyond += [.int(range.upperBound + 1), .uint(UInt64(max(0, range.upperBound)) + 1), .int(.max)] }
            for value in beyond {
                expectHostError(.invalidArgument, mentioning: ["option '\(option.key)' is", "which is out of range; \(accepted)"]) {
                    try options.init([option.key: value])
                }
            }
            expectHostError(.invalidArgument, mentioning: ["option '\(option.key)' must be a 64-bit integer (x), got d"]) {
                try options.init([option.key: .double(1)])
            }
        }
        let dates = integers.filter { $0.key.key.hasSuffix("_date") }
        #expect(dates.count == 3 && dates.allSatisfy { $0.key.range == 0...253_402_300_799 && $0.key.unit == "Unix seconds" })
        expectHostError(
            .invalidArgument, mentioning: ["option 'stale_date' must be a 64-bit integer (x), got d; give Unix seconds from 0 to 253402300799"]
        ) {
            try UpdateActivityOptions(["stale_date": .double(1)])
        }
        #expect(try StartActivityOptions(["stale_date": .uint(5)]).staleDate == 5)
        #expect(try EndActivityOptions(["dismissal_date": .int(7)]).dismissalDate == 7)
    }

    @Test("A number key takes d and every integer type, and must be finite")
    func numbers() throws {
        let numbers = Self.keys.filter { $0.key.signature == "d" }
        #expect(numbers.count >= 2)
        for (options, option) in numbers {
            for value in [OptionValue.int(-3), .uint(2), .double(0.5)] {
                #expect(throws: Never.self, "\(option.key) = \(value)") { try options.init([option.key: value]) }
            }
            for bad in [Double.nan, .infinity, -.infinity] {
                expectHostError(.invalidArgument, mentioning: ["option '\(option.key)' is \(bad); it must be a finite number"]) {
                    try options.init([option.key: .double(bad)])
                }
            }
        }
        #expect(try StartActivityOptions(["relevance": .int(-3)]).relevance == -3)
        #expect(try UpdateActivityOptions(["relevance": .uint(2)]).relevance == 2)
        #expect(try StartActivityOptions([:]).relevance == 0)
    }

    @Test("Each key lands in its own field")
    func fields() throws {
        let tap = try TapOptions(["surface": .string("car"), "activation_token": .string("t")])
        #expect(tap == TapOptions(surface: "car", activationToken: "t"))
        #expect(try TapOptions([:]) == TapOptions(surface: "desktop"))
        let register = try RegisterAppOptions([
            "schemes": .strings(["a"]), "protocol": .string("freedesktop"), "object_path": .objectPath("/o"), "surfaces": .strings(["car"]),
            "live_activity_launch_types": .strings([]), "user_activity_action": .string("go"), "provider_path": .objectPath("/p"),
        ])
        #expect(
            register
                == RegisterAppOptions(
                    schemes: ["a"], protocol: "freedesktop", objectPath: "/o", surfaces: ["car"], liveActivityLaunchTypes: [], userActivityAction: "go",
                    providerPath: "/p"))
        let end = try EndActivityOptions(["content": .string("{}"), "state": .dict(["s": .int(1)])])
        #expect(end == EndActivityOptions(dismissal: "default", content: "{}", state: ["s": .int(1)]))
    }
}
