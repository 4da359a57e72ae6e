import FuzzSupport
import WidgetHostCore

// View-tree JSON, as SetContent, LintContent, a timeline entry and a Live
// Activity take it from an app: the JSON parser and writer, the tree's
// validation under the limits and as stored content, the lint, and the
// resolution of a tap on each element of an accepted tree.

Fuzzer.run { input in
    let text = input.text
    if let (value, _) = try? JSONValue.decode(text, lenient: true) {
        // What the writer makes of a parsed value, the parser reads again.
        Fuzzer.expect((try? JSONValue.decode(value.jsonText)) != nil, "the compact text of a parsed value does not parse")
        Fuzzer.expect((try? JSONValue.decode(value.stableJSONText(pretty: true))) != nil, "the stable text of a parsed value does not parse")
    }
    for limits in [ViewTreeLimits(), .stored] {
        guard let tree = try? ViewTree.parse(text, limits: limits) else { continue }
        // A tree once accepted is read back as stored content, and as its root.
        Fuzzer.expect((try? ViewTree.parse(tree.json, limits: .stored)) != nil, "an accepted tree does not read back as stored content")
        let root = tree.root
        let ids = [""] + root.elements.compactMap(\.id).prefix(8)
        for family in WidgetFamily.allCases {
            _ = ContentLint.lint(tree, family: family, policy: .current, schemes: ["https"])
            let widget = WidgetTapContext(
                widgetID: "w1", kind: "fuzz", family: family, configuration: ["city": .string("Paris")], intent: "SelectCity",
                content: tree, app: AppOptions(defaultsFor: "org.example.Fuzz"))
            for id in ids { _ = try? WidgetTapRules.resolve(elementID: id, surface: .desktop, policy: .legacy, widget) }
        }
    }
    _ = try? ContentLint.lint(json: text, family: .systemMedium, policy: .current, schemes: ["https"])
    _ = try? ActivityContent.parse(text)
    _ = try? ActivityContent.parse(text, stored: true)
}
