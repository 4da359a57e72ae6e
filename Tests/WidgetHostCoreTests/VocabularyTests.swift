import Testing
@testable import WidgetHostCore

/// The lint's checks of the rendering vocabulary (docs/vocabulary.md).
@Suite("The rendering vocabulary")
struct VocabularyTests {
    func findings(_ json: String) throws -> [LintFinding] {
        try ContentLint.lint(json: json, family: .systemMedium, policy: .current)
    }

    @Test("A tree in the vocabulary has no findings: every type, key and binding of the docs")
    func clean() throws {
        let tree = #"""
            {"type":"vstack","spacing":6,"alignment":"leading","padding":10,"background":{"light":"#fff","dark":"#1c1c1e"},"label":"All",
             "cornerRadius":12,"opacity":0.9,"children":[
              {"type":"hstack","children":[{"type":"image","icon":"mail-unread-symbolic","size":16},{"type":"spacer","minLength":4},
                {"type":"image","src":"data:image/png;base64,AA=="}]},
              {"type":"zstack","alignment":"top","children":[{"type":"color","color":"rgba(0, 0, 0, 0.5)"},{"type":"divider"}]},
              {"type":"text","text":"Soon","bind":"state.eta","format":"In {} min","fontSize":13,"fontWeight":"semibold","lineLimit":2,"color":"red"},
              {"type":"link","id":"l","url":"x-app://a","children":[{"type":"text","text":"Open","foreground":"#0a60d0"}]},
              {"type":"button","id":"b","action":"go","parameter":{"any":["thing"]}},
              {"type":"toggle","id":"t","action":"flip","isOn":true},
              {"type":"progress","value":0.5},{"type":"gauge","value":3,"min":0,"max":10}]}
            """#
        #expect(try findings(tree) == [])
    }

    @Test("An unknown type is a warning that says how renderers draw it, with a suggestion for a near miss")
    func unknownType() throws {
        let found = try findings(#"{"type":"vstak","children":[{"type":"sparkline"}]}"#)
        #expect(found.map(\.code) == [.unknownType, .unknownType])
        #expect(found.allSatisfy { $0.severity == .warning })
        #expect(found[0].message.contains("'vstak'") && found[0].message.contains("did you mean 'vstack'?"))
        #expect(found[0].message.contains("draw its children as a vstack"))
        #expect(!found[1].message.contains("did you mean"))
    }

    @Test("An unknown key is named, with the type, and a near miss suggested; keys of an unknown type are not judged")
    func unknownKey() throws {
        let found = try findings(#"{"type":"text","id":"eta","text":"x","colour":"red","systemName":"box.truck.fill"}"#)
        #expect(found.map(\.code) == [.unknownKey, .unknownKey])
        #expect(found[0].message.contains("text 'eta' has the key 'colour'") && found[0].message.contains("did you mean 'color'?"))
        #expect(found[1].message.contains("'systemName'"))
        #expect(try findings(#"{"type":"chart","series":[1,2]}"#).map(\.code) == [.unknownType])
        // A key of another type is unknown here: url belongs to link.
        #expect(try findings(#"{"type":"text","text":"x","url":"a:b"}"#).map(\.code) == [.unknownKey])
    }

    @Test(
        "Values the vocabulary cannot draw are invalid-value warnings",
        arguments: [
            (#"{"type":"text","text":"x","fontSize":"big"}"#, "'fontSize' must be a number, not a string"),
            (#"{"type":"text","text":"x","fontWeight":"heavyy"}"#, "'fontWeight' must be one of ultralight"),
            (#"{"type":"vstack","opacity":1.5}"#, "'opacity' must be from 0 to 1, not 1.5"),
            (#"{"type":"vstack","background":"not a colour"}"#, "'background' is not a colour"),
            (##"{"type":"vstack","background":{"light":"#fff","dim":"#000"}}"##, "'background' must be a colour or {\"light\""),
            (##"{"type":"color","color":"#12345"}"##, "'color' is not a colour"),
            (#"{"type":"image","icon":5}"#, "'icon' must be a string, not a number"),
            (#"{"type":"hstack","alignment":"middle"}"#, "'alignment' must be one of leading"),
        ])
    func invalidValues(_ json: String, _ message: String) throws {
        let found = try findings(json)
        #expect(found.map(\.code) == [.invalidValue], "\(found)")
        #expect(found.first?.message.contains(message) == true, "\(found.first?.message ?? "")")
    }

    @Test(
        "Bindings must name a state or attributes key, format must have one {}, and a bound text needs a text to fall back on",
        arguments: [
            (#"{"type":"text","text":"x","bind":"eta"}"#, "bind to \"state.KEY\" or \"attributes.KEY\""),
            (#"{"type":"text","text":"x","bind":"props.eta"}"#, "binds 'props.eta'"),
            (#"{"type":"text","text":"x","bind":"state."}"#, "binds 'state.'"),
            (#"{"type":"text","text":"x","bind":"state.eta","format":"ETA"}"#, "has 0 '{}'"),
            (#"{"type":"text","text":"x","bind":"state.eta","format":"{} of {}"}"#, "has 2 '{}'"),
            (#"{"type":"text","bind":"state.eta"}"#, "has no 'text' to show"),
            (#"{"type":"text","text":"x","format":"{} min"}"#, "a 'format' but no 'bind'"),
        ])
    func bindings(_ json: String, _ message: String) throws {
        let found = try findings(json)
        #expect(found.map(\.code) == [.invalidBinding], "\(found)")
        #expect(found.first?.message.contains(message) == true, "\(found.first?.message ?? "")")
    }

    @Test("bind on anything but text is an unknown key there, not a binding")
    func bindOutsideText() throws {
        #expect(try findings(#"{"type":"image","icon":"x","bind":"state.icon"}"#).map(\.code) == [.unknownKey])
    }

    @Test("The vocabulary's findings come in depth-first order with the tap rules', after the errors")
    func order() throws {
        let found = try findings(#"{"type":"vstack","bogus":1,"children":[{"type":"link","url":"x:y"},{"type":"box"},{"id":"a","type":"text"},{"id":"a","type":"text"}]}"#)
        #expect(found.map(\.code) == [.duplicateID, .unknownKey, .linkWithoutID, .unknownType])
    }

    @Test("Trees built with ViewNode's vocabulary builders and modifiers lint clean and carry the documented keys")
    func swiftBuilders() throws {
        let card = ViewNode.color(.adaptive(light: "#d6ebff", dark: "#173049"), widgetURL: "x-app://hero", [
            .vstack([
                .text("🐳", id: "avatar").font(size: 40),
                .text("Spouty").font(size: 16, weight: .bold).foreground("#1c1c1e"),
                .progress(0.72, id: "health"), .gauge(35, in: 0...100),
                .hstack([.image(icon: "mail-unread-symbolic", size: 16), .spacer(minLength: 4), .image(src: "/tmp/a.png")]).alignment("top"),
                .divider, .zstack([.text(bind: "state.eta", format: "{} min", placeholder: "soon")]),
            ]).spacing(4).padding(10).background("white").cornerRadius(12).opacity(0.9),
        ]).label("Spouty, 72% health")
        #expect(try findings(card.json) == [])
        let tree = try ViewTree.parse(card.json)
        #expect(tree.root.fields["color"] == .object(["light": .string("#d6ebff"), "dark": .string("#173049")]))
        #expect(tree.root.fields["label"] == .string("Spouty, 72% health"))
        let bound = tree.elements.first { $0.fields["bind"] != nil }
        #expect(bound?.fields["format"] == .string("{} min") && bound?.fields["text"] == .string("soon"))
        #expect(tree.elements.first { $0.type == "gauge" }?.fields["max"]?.numberValue == 100)
        #expect(ViewNode.progress(0.5).fields["min"] == nil, "the default range is left out")
    }

    @Test("Suggestions are at most two edits away")
    func suggestions() {
        #expect(Vocabulary.editDistance("colour", "color") == 1)
        #expect(Vocabulary.editDistance("", "abc") == 3)
        #expect(Vocabulary.suggestion("fontsize", among: ["fontSize", "size"]) == "; did you mean 'fontSize'?")
        #expect(Vocabulary.suggestion("zzzzzz", among: ["fontSize"]) == "")
    }
}
