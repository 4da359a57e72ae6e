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
}
