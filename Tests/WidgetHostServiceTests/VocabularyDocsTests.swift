import Foundation
import PrivateBus
import Testing
import WidgetHostCore

/// The rendering vocabulary is declared once, in vocabulary/vocabulary.json
/// (docs/vocabulary.md#the-declaration); the lint's tables are generated from
/// it, docs/vocabulary.md's tables are written from it, and widget-board reads
/// it. Each must hold exactly what it declares. (The GNOME Shell extension's
/// module made from it is checked by GnomeShellTests.modules.)
@Suite("The vocabulary, declared once: linted, documented and drawn alike")
struct VocabularyDocsTests {
    static let declarationFile = repositoryRoot.appendingPathComponent("vocabulary/vocabulary.json")

    static func declaration() throws -> [String: Any] {
        guard let object = try JSONSerialization.jsonObject(with: Data(contentsOf: declarationFile)) as? [String: Any] else {
            throw PrivateBusError("vocabulary/vocabulary.json is not a JSON object")
        }
        return object
    }

    /// The lint's value for a declared key (nil for a kind the lint has no case for).
    static func value(_ spec: Any?) -> Vocabulary.Value? {
        let spec = spec as? [String: Any] ?? [:]
        switch spec["kind"] as? String {
        case "number": return .number
        case "fraction": return .fraction
        case "string": return .string
        case "colour": return .colour
        case "any": return .any
        case "oneOf": return .oneOf(names(spec["choices"]))
        default: return nil
        }
    }

    /// The names of a declared `[[name, meaning], …]` list, in order.
    static func names(_ pairs: Any?) -> [String] { (pairs as? [[Any]] ?? []).compactMap { $0.first as? String } }

    static func keys(_ keys: Any?) -> [String: Vocabulary.Value?] { (keys as? [String: Any] ?? [:]).mapValues(value) }

    @Test("The lint's tables are the declaration's: every type, key, kind, one-of list and binding scope, and its families are WidgetFamily's")
    func lintIsDeclared() throws {
        let declared = try Self.declaration()
        #expect(Vocabulary.version == declared["version"] as? Int)
        #expect(Self.keys(declared["keys"]) == Vocabulary.commonKeys.mapValues { $0 })
        let types = declared["types"] as? [String: [String: Any]] ?? [:]
        #expect(types.mapValues { Self.keys($0["keys"]) } == Vocabulary.types.mapValues { $0.mapValues { $0 } })
        let common = declared["keys"] as? [String: [String: Any]] ?? [:]
        #expect(ViewNode.FontWeight.allCases.map(\.rawValue) == Self.names(common["fontWeight"]?["choices"]))
        #expect(Vocabulary.bindingScopes == Self.names((declared["binding"] as? [String: Any])?["scopes"]))
        #expect(Vocabulary.colourVariants == declared["colourVariants"] as? [String])
        let families = declared["families"] as? [String: Any] ?? [:]
        #expect(Set(families.keys) == Set(WidgetFamily.allCases.map(\.rawValue)))
    }

    @Test("docs/vocabulary.md's tables are what scripts/vocabulary-docs writes from the declaration")
    func docsAreDeclared() async throws {
        let check = try await runCommand(
            "/usr/bin/python3", [repositoryRoot.appendingPathComponent("scripts/vocabulary-docs").path, "--check"])
        #expect(check.succeeded, "\(check)")
    }

    /// What widget-board's vocabulary module holds, as JSON, imported from `folder`.
    static func board(in folder: URL) async throws -> CommandResult {
        let script = """
            import json
            from widgetboard import vocabulary as v
            print(json.dumps({
                "types": sorted(v.TYPES),
                "drawn": sorted(t for t in v.TYPES if hasattr(v.Renderer, "make_" + t)),
                "style": sorted(v.STYLE_KEYS),
                "tappable": sorted(v.TAPPABLE),
                "families": v.FAMILY_SIZES,
                "monochrome": sorted(v.MONOCHROME),
                "roles": v.ROLES,
                "defaults": {t: {k: v.default(t, k) for k in list(v.DECLARATION["keys"]) + list(s["keys"])}
                             for t, s in v.DECLARATION["types"].items()},
            }))
            """
        return try await runCommand("/usr/bin/python3", ["-c", script], adding: ["PYTHONPATH": folder.path])
    }

    @Test("widget-board draws exactly the declared types, keys, roles, defaults and family sizes, from a checkout and as the package installs it")
    func boardIsDeclared() async throws {
        let declared = try Self.declaration()
        let types = declared["types"] as? [String: [String: Any]] ?? [:]
        let common = declared["keys"] as? [String: [String: Any]] ?? [:]
        let families = declared["families"] as? [String: [String: Any]] ?? [:]
        var roles = types.compactMapValues { $0["role"] as? String }
        roles["widget"] = (declared["widget"] as? [String: Any])?["role"] as? String
        let defaults = types.mapValues { type in
            common.merging(type["keys"] as? [String: [String: Any]] ?? [:]) { _, own in own }.mapValues { $0["default"] as? Double }
        }

        // As the package lays it out (packaging/build-deb): the modules, and the declaration beside them.
        let installed = FileManager.default.temporaryDirectory.appendingPathComponent("widgethost-board-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: installed) }
        let modules = installed.appendingPathComponent("widgetboard")
        try FileManager.default.createDirectory(at: modules, withIntermediateDirectories: true)
        let source = repositoryRoot.appendingPathComponent("renderers/gtk/widgetboard")
        for name in try FileManager.default.contentsOfDirectory(atPath: source.path) where name.hasSuffix(".py") {
            try FileManager.default.copyItem(at: source.appendingPathComponent(name), to: modules.appendingPathComponent(name))
        }
        let missing = try await Self.board(in: installed)
        #expect(!missing.succeeded && missing.stderr.contains("DeclarationMissing") && missing.stderr.contains("install vocabulary/vocabulary.json"),
            "without its declaration the board says where to put it: \(missing)")
        try FileManager.default.copyItem(at: Self.declarationFile, to: modules.appendingPathComponent("vocabulary.json"))

        for folder in [repositoryRoot.appendingPathComponent("renderers/gtk"), installed] {
            let printed = try await Self.board(in: folder)
            #expect(printed.succeeded, "\(printed)")
            let board = try JSONSerialization.jsonObject(with: Data(printed.stdout.utf8)) as? [String: Any] ?? [:]
            #expect(board["types"] as? [String] == types.keys.sorted())
            #expect(board["drawn"] as? [String] == types.keys.sorted(), "each declared type has a make_ method of its own")
            #expect(board["style"] as? [String] == common.filter { $0.value["host"] as? Bool != true }.keys.sorted())
            #expect(board["tappable"] as? [String] == types.filter { $0.value["tappable"] as? Bool == true }.keys.sorted())
            #expect(board["families"] as? [String: [Int]] == families.mapValues { $0["size"] as? [Int] ?? [] })
            #expect(board["monochrome"] as? [String] == families.filter { $0.value["monochrome"] as? Bool == true }.keys.sorted())
            #expect(board["roles"] as? [String: String] == roles)
            let drawnDefaults = (board["defaults"] as? [String: [String: Any]] ?? [:]).mapValues { $0.mapValues { $0 as? Double } }
            #expect(drawnDefaults == defaults)
        }
    }
}
