import Foundation
import PrivateBus
import Testing
import WidgetHostCore

/// The rendering vocabulary is written down three times — docs/vocabulary.md,
/// the lint (WidgetHostCore's Vocabulary) and widget-board's renderer — and the
/// three must say the same.
@Suite("The vocabulary, documented, linted and drawn alike")
struct VocabularyDocsTests {
    /// The backticked words of each row of the table under `heading`, by the row's first cell.
    static func table(under heading: String) throws -> [String: [String]] {
        let text = try String(contentsOf: repositoryRoot.appendingPathComponent("docs/vocabulary.md"), encoding: .utf8)
        guard let start = text.range(of: "\n## \(heading)\n") else { throw PrivateBusError("docs/vocabulary.md has no '## \(heading)'") }
        var rows: [String: [String]] = [:]
        for line in text[start.upperBound...].split(separator: "\n").map(String.init) {
            if line.hasPrefix("## ") { break }
            guard line.hasPrefix("| `") else { continue }
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            let words = cells.map { $0.split(separator: "`", omittingEmptySubsequences: false).enumerated().filter { $0.offset % 2 == 1 }.map { String($0.element) } }
            for name in words[0] { rows[name] = words.dropFirst().flatMap { $0 } }
        }
        return rows
    }

    @Test("docs/vocabulary.md lists exactly the lint's types, each with its own keys, and every key any element may carry")
    func docsMatchLint() throws {
        let types = try Self.table(under: "Element types")
        #expect(Set(types.keys) == Set(Vocabulary.types.keys))
        for (type, keys) in Vocabulary.types {
            for key in keys.keys {
                #expect(types[type]?.contains(key) == true, "docs/vocabulary.md does not give \(type) its key '\(key)'")
            }
        }
        let common = try Self.table(under: "Keys")
        let structural: Set = ["type", "id", "children", "widgetURL"]
        #expect(Set(common.keys) == Set(Vocabulary.commonKeys.keys).subtracting(structural))
    }

    @Test("widget-board draws exactly the lint's types and presentational keys")
    func boardMatchesLint() async throws {
        let printed = try await runCommand(
            "/usr/bin/python3",
            ["-c", "from widgetboard import vocabulary as v; print(' '.join(sorted(v.TYPES))); print(' '.join(sorted(v.STYLE_KEYS)))"],
            adding: ["PYTHONPATH": repositoryRoot.appendingPathComponent("renderers/gtk").path])
        #expect(printed.succeeded, "\(printed)")
        let lines = printed.stdout.split(separator: "\n").map { Set($0.split(separator: " ").map(String.init)) }
        #expect(lines.first == Set(Vocabulary.types.keys))
        #expect(lines.dropFirst().first == Set(Vocabulary.commonKeys.keys).subtracting(["type", "id", "children", "widgetURL"]))
    }
}
