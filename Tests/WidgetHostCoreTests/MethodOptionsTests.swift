import Foundation
import Testing
@testable import WidgetHostCore

@Suite("Method options")
struct MethodOptionsTests {
    @Test("Every method's options are read one way: unknown keys and wrong types name what to send")
    func oneReader() throws {
        let methods: [(MethodOptions.Declared, String)] = [
            (MethodOptions.registerApp, "RegisterApp"), (MethodOptions.tap, "Tap"), (MethodOptions.openURL, "OpenURL"),
            (MethodOptions.startActivity, "StartActivity"), (MethodOptions.updateActivity, "Update"), (MethodOptions.endActivity, "End"),
        ]
        for (declared, method) in methods {
            expectHostError(.invalidArgument, mentioning: ["unknown option 'nope' for \(method)", MethodOptions.describe(declared)]) {
                try MethodOptions(["nope": .bool(true)], declared: declared, method: method)
            }
        }
        let options = try MethodOptions(
            ["surface": .int(3), "activation_token": .string("t")], declared: MethodOptions.tap, method: "Tap")
        #expect(try options.string("activation_token") == "t")
        expectHostError(.invalidArgument, mentioning: ["option 'surface' must be a string (s), got x"]) { try options.string("surface") }
    }

    @Test("Numbers and dates take any integer; numbers must be finite")
    func numbers() throws {
        let options = try MethodOptions(
            ["relevance": .double(.infinity), "stale_date": .uint(5), "state": .int(1)], declared: MethodOptions.updateActivity,
            method: "Update")
        #expect(try options.date("stale_date") == Date(timeIntervalSince1970: 5))
        expectHostError(.invalidArgument, mentioning: ["option 'relevance' is inf", "finite"]) { try options.number("relevance") }
        expectHostError(.invalidArgument, mentioning: ["option 'state' must be a dictionary (a{sv}), got x"]) { try options.dictionary("state") }
    }

    @Test("A date is Unix seconds from 1970 to the end of the year 9999, given as any integer; beyond, InvalidArgument names the key and the range")
    func dateRange() throws {
        let ends: [(OptionValue, Date?)] = [
            (.int(0), Date(timeIntervalSince1970: 0)), (.int(253_402_300_799), Date(timeIntervalSince1970: 253_402_300_799)),
            (.uint(253_402_300_799), Date(timeIntervalSince1970: 253_402_300_799)),
            (.int(-1), nil), (.int(253_402_300_800), nil), (.int(.min), nil), (.int(.max), nil), (.uint(.max), nil),
        ]
        for (value, date) in ends {
            let options = try MethodOptions(["stale_date": value], declared: MethodOptions.updateActivity, method: "Update")
            if let date {
                #expect(try options.date("stale_date") == date)
            } else {
                expectHostError(.invalidArgument, mentioning: ["option 'stale_date' is", "from 0 to 253402300799"]) { try options.date("stale_date") }
            }
        }
        let double = try MethodOptions(["stale_date": .double(1)], declared: MethodOptions.updateActivity, method: "Update")
        expectHostError(.invalidArgument, mentioning: ["option 'stale_date' must be a 64-bit integer (x), got d"]) { try double.date("stale_date") }
    }
}
