import Foundation
import Testing
@testable import WidgetHostCore

/// Parses a tree or fails the test.
func tree(_ json: String) throws -> ViewTree {
    do { return try ViewTree.parse(json) } catch { throw error }
}

func errorName(_ body: () throws -> Void) -> HostError.Name? {
    do {
        try body()
        return nil
    } catch let error as HostError {
        return error.name
    } catch {
        return nil
    }
}

@Suite("View trees")
struct ViewTreeTests {
    @Test("Parses elements, keeps unknown keys, finds paths and widgetURLs in pre-order")
    func parse() throws {
        let t = try tree(
            """
            {"type":"vstack","widgetURL":"a://1","children":[
              {"type":"text","id":"t","font":"title"},
              {"type":"link","id":"l","url":"tap-me-widget://show-red","children":[{"type":"image","id":"img","widgetURL":"a://2"}]},
              {"type":"button","id":"b","action":"refresh","parameter":{"n":1}}]}
            """)
        #expect(t.root.type == "vstack")
        #expect(t.widgetURLs == ["a://1", "a://2"])
        #expect(t.path(to: "img")?.map(\.type) == ["vstack", "link", "image"])
        #expect(t.path(to: "nope") == nil)
        #expect(t.elements.first { $0.id == "t" }?.fields["font"] == .string("title"))
        #expect(t.elements.first { $0.id == "b" }?.parameter == .object(["n": .integer(1)]))
    }

    @Test(
        "Invalid content is refused with InvalidContent",
        arguments: [
            "not json", "[]", "{}", "{\"type\":\"\"}", "{\"type\":\"text\",\"id\":3}",
            "{\"type\":\"v\",\"children\":[{\"type\":\"a\",\"id\":\"x\"},{\"type\":\"b\",\"id\":\"x\"}]}",
            "{\"type\":\"link\",\"id\":\"l\"}", "{\"type\":\"link\",\"url\":\"no-scheme\"}",
            "{\"type\":\"text\",\"widgetURL\":\"relative/path\"}", "{\"type\":\"button\",\"id\":\"b\"}",
            "{\"type\":\"v\",\"children\":{}}",
        ])
    func invalid(_ json: String) {
        #expect(errorName { _ = try ViewTree.parse(json) } == .invalidContent)
    }

    @Test("Limits give LimitExceeded")
    func limits() {
        var limits = ViewTreeLimits()
        limits.maxDepth = 3
        #expect(errorName { _ = try ViewTree.parse("{\"type\":\"a\",\"children\":[{\"type\":\"b\",\"children\":[{\"type\":\"c\",\"children\":[{\"type\":\"d\"}]}]}]}", limits: limits) } == .limitExceeded)
        let deep = String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)
        #expect(errorName { _ = try ViewTree.parse(deep) } == .limitExceeded)
        let long = "{\"type\":\"text\",\"widgetURL\":\"a://" + String(repeating: "x", count: 3000) + "\"}"
        #expect(errorName { _ = try ViewTree.parse(long) } == .limitExceeded)
    }
}

@Suite("Widget resolution rules")
struct WidgetRulesTests {
    let app = AppOptions(
        schemes: ["tap-me-widget"], appProtocol: .freedesktop, objectPath: "/org/example/TapMe", surfaces: [.desktop],
        liveActivityLaunchTypes: nil, userActivityAction: nil, providerPath: nil)

    func context(_ family: WidgetFamily, _ json: String?, app: AppOptions? = nil, intent: String? = nil) throws -> WidgetTapContext {
        WidgetTapContext(
            widgetID: "w1", kind: "hero", family: family, configuration: ["hero": .string("spouty")], intent: intent,
            content: try json.map(tree), app: app ?? self.app)
    }

    static let mixed = """
        {"type":"vstack","widgetURL":"tap-me-widget://background","children":[
          {"type":"link","id":"red","url":"tap-me-widget://show-red","children":[{"type":"text","id":"label"}]},
          {"type":"button","id":"go","action":"refresh","children":[{"type":"link","id":"inner","url":"tap-me-widget://inner"}]},
          {"type":"text","id":"plain"}]}
        """

    @Test("Rule control: a control performs its action in interactive families, innermost control wins over an outer link")
    func controls() throws {
        for family in WidgetFamily.allCases {
            let r = try WidgetTapRules.resolve(elementID: "inner", surface: .desktop, policy: .current, context(family, Self.mixed))
            if family.allowsInteractiveControls {
                #expect(r.outcome == .performAction(action: "refresh", parameter: nil), "\(family)")
            } else {
                #expect(r.outcome.name != .performAction, "\(family)")
            }
        }
    }

    @Test("Rule link: links open in link families, per policy", arguments: LinkPolicy.allCases)
    func links(policy: LinkPolicy) throws {
        for family in WidgetFamily.allCases {
            let r = try WidgetTapRules.resolve(elementID: "label", surface: .desktop, policy: policy, context(family, Self.mixed))
            if family.supportsLinks(policy) {
                #expect(r.outcome == .openURL(url: "tap-me-widget://show-red", via: .link), "\(family) \(policy)")
            } else {
                #expect(r.outcome == .openURL(url: "tap-me-widget://background", via: .widgetURL), "\(family) \(policy)")
            }
        }
        #expect(WidgetFamily.systemSmall.supportsLinks(.current) && !WidgetFamily.systemSmall.supportsLinks(.legacy))
        #expect(WidgetFamily.accessoryRectangular.supportsLinks(.current) && !WidgetFamily.accessoryRectangular.supportsLinks(.legacy))
    }

    @Test("Rule widgetURL: the first widgetURL in pre-order, with multiple-widget-urls")
    func widgetURLs() throws {
        let json = """
            {"type":"v","children":[{"type":"a","id":"x","children":[{"type":"b","widgetURL":"tap-me-widget://first"}]},{"type":"c","widgetURL":"other://second"}]}
            """
        let r = try WidgetTapRules.resolve(elementID: "", surface: .desktop, policy: .current, context(.systemSmall, json))
        #expect(r.outcome == .openURL(url: "tap-me-widget://first", via: .widgetURL))
        #expect(r.diagnostics == [.multipleWidgetURLs])
        let single = try WidgetTapRules.resolve(
            elementID: "", surface: .desktop, policy: .current, context(.systemSmall, "{\"type\":\"t\",\"widgetURL\":\"mail:x@y\"}"))
        #expect(single.diagnostics == [.undeclaredScheme])
    }

    @Test("Rule userActivity: no URL continues the user activity, with configuration and intent when configurable")
    func userActivity() throws {
        let r = try WidgetTapRules.resolve(
            elementID: "", surface: .desktop, policy: .current, context(.systemMedium, nil, intent: "SelectHeroIntent"))
        guard case .continueUserActivity(let type, let info) = r.outcome else {
            Issue.record("\(r.outcome)")
            return
        }
        #expect(type == "hero")
        #expect(info["kind"] == .string("hero") && info["family"] == .string("systemMedium") && info["widget_id"] == .string("w1"))
        #expect(info["configuration"] == .dict(["hero": .string("spouty"), "intent": .string("SelectHeroIntent")]))
        let plain = try WidgetTapRules.resolve(elementID: "", surface: .desktop, policy: .current, context(.systemMedium, nil))
        if case .continueUserActivity(_, let info) = plain.outcome { #expect(info["configuration"] == nil) }
    }

    @Test("A toggle sends its parameter as given, or none, and its new state beside it; a button sends no state")
    func toggleSendsItsNewStateBesideItsParameter() throws {
        let json = """
            {"type":"vstack","children":[
              {"type":"toggle","id":"off","action":"light"},
              {"type":"toggle","id":"on","action":"light","isOn":true},
              {"type":"toggle","id":"object","action":"light","isOn":false,"parameter":{"room":"hall","value":"stale"}},
              {"type":"toggle","id":"scalar","action":"light","isOn":true,"parameter":"hall"},
              {"type":"toggle","id":"null","action":"light","isOn":true,"parameter":null},
              {"type":"button","id":"button","action":"light","isOn":true,"parameter":"hall"}]}
            """
        func outcome(_ id: String) throws -> TapOutcome {
            try WidgetTapRules.resolve(elementID: id, surface: .desktop, policy: .current, context(.systemSmall, json)).outcome
        }
        #expect(try outcome("off") == .performAction(action: "light", parameter: nil, toggleIsOn: true))
        #expect(try outcome("on") == .performAction(action: "light", parameter: nil, toggleIsOn: false))
        #expect(try outcome("object") == .performAction(
            action: "light", parameter: .object(["room": .string("hall"), "value": .string("stale")]), toggleIsOn: true))
        #expect(try outcome("scalar") == .performAction(action: "light", parameter: .string("hall"), toggleIsOn: false))
        // null is kept as given; delivered, it is no parameter (docs/delivery.md#parameters).
        #expect(try outcome("null") == .performAction(action: "light", parameter: .null, toggleIsOn: false))
        // A button ignores isOn: it sends its parameter and no state.
        #expect(try outcome("button") == .performAction(action: "light", parameter: .string("hall"), toggleIsOn: nil))
        // isOn must be a boolean.
        #expect(errorName { _ = try tree(#"{"type":"toggle","id":"t","action":"a","isOn":"yes"}"#) } == .invalidContent)
    }

    @Test("Car is checked first; unknown elements are UnknownElement")
    func carAndUnknown() throws {
        let r = try WidgetTapRules.resolve(elementID: "go", surface: .car, policy: .current, context(.systemSmall, Self.mixed))
        #expect(r.outcome == .none(reason: .appDoesNotSupportCar))
        var carApp = app
        carApp.surfaces = [.desktop, .car]
        let ok = try WidgetTapRules.resolve(elementID: "go", surface: .car, policy: .current, context(.systemSmall, Self.mixed, app: carApp))
        #expect(ok.outcome == .performAction(action: "refresh", parameter: nil))
        #expect(errorName { _ = try WidgetTapRules.resolve(elementID: "ghost", surface: .desktop, policy: .current, context(.systemSmall, Self.mixed)) } == .unknownElement)
    }
}

@Suite("The rule table")
struct RuleTableTests {
    /// The rows of the first markdown table after `heading` in docs/widgets.md whose
    /// first cell is code, as cells.
    static func rows(after heading: String, header: String) throws -> [[String]] {
        let docs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../docs/widgets.md")
        let text = try String(contentsOf: docs, encoding: .utf8)
        let section = try #require(text.range(of: heading)).upperBound
        let table = try #require(text.range(of: header, range: section..<text.endIndex)).lowerBound
        return text[table...].split(separator: "\n", omittingEmptySubsequences: false).prefix { $0.hasPrefix("|") }.dropFirst(2).map { line in
            line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
        }
    }

    static func codes(_ cell: String) -> [String] {
        cell.split(separator: "`", omittingEmptySubsequences: false).enumerated().filter { $0.offset % 2 == 1 }.map { String($0.element) }
    }

    @Test("docs/widgets.md lists the rules in the code's order")
    func order() throws {
        let rules = try Self.rows(after: "## Resolution rules", header: "| rule |").map { Self.codes($0[0]).first ?? "" }
        #expect(rules == TapRule.allCases.map(\.rawValue))
    }

    @Test("docs/widgets.md says what each family and presentation honours, as the code does")
    func capabilities() throws {
        let rows = try Self.rows(after: "## Resolution rules", header: "| family or presentation |")
        var seen: [String] = []
        for row in rows {
            for name in Self.codes(row[0]) {
                seen.append(name)
                let documented = (controls: row[1] == "yes", current: row[2] == "yes", legacy: row[3] == "yes")
                if let family = WidgetFamily(rawValue: name) {
                    #expect(family.capabilities(.current) == TapCapabilities(controls: documented.controls, links: documented.current), "\(name)")
                    #expect(family.capabilities(.legacy) == TapCapabilities(controls: documented.controls, links: documented.legacy), "\(name)")
                } else {
                    let presentation = try #require(ActivityPresentation(rawValue: name), "\(name)")
                    #expect(presentation.capabilities == TapCapabilities(controls: documented.controls, links: documented.current), "\(name)")
                    #expect(documented.current == documented.legacy, "\(name): the link policy is for widget families only")
                }
            }
        }
        #expect(Set(seen) == Set(WidgetFamily.allCases.map(\.rawValue) + ActivityPresentation.allCases.map(\.rawValue)))
    }

    @Test("Every diagnostic a tap can give has the lint code of the same name")
    func diagnosticsLint() {
        for diagnostic in TapDiagnostic.allCases { #expect(LintCode(rawValue: diagnostic.rawValue) != nil, "\(diagnostic)") }
    }

    @Test("The lint warns about exactly the elements the rules ignore in a family")
    func lintFollowsRules() throws {
        let t = try tree(WidgetRulesTests.mixed)
        for policy in LinkPolicy.allCases {
            for family in WidgetFamily.allCases {
                let codes = Set(ContentLint.lint(t, family: family, policy: policy).map(\.code))
                #expect(codes.contains(.linkIgnoredInFamily) == !family.supportsLinks(policy), "\(family) \(policy)")
                #expect(codes.contains(.controlIgnoredInFamily) == !family.allowsInteractiveControls, "\(family) \(policy)")
            }
        }
    }
}
