import Foundation
import PrivateBus
import Testing

/// The README's gdbus and busctl lines, run exactly as written against a host
/// on a private bus: they must work when pasted.
@Suite("README examples", .timeLimit(.minutes(2)))
struct ReadmeTests {
    struct Example: Sendable, CustomStringConvertible {
        var command: String
        /// The "# Call failed: …" line after it, when the example shows an error.
        var expectedError: String?
        /// The output line shown after it (examples in ```text blocks).
        var expectedOutput: String?
        var description: String { command }
    }

    static func examples() throws -> [Example] {
        let text = try String(contentsOf: repositoryRoot.appendingPathComponent("README.md"), encoding: .utf8)
        var examples: [Example] = []
        var inShell = false, inText = false
        for line in text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            if line.hasPrefix("```") {
                inShell = line == "```sh"
                inText = line == "```text"
                continue
            }
            if inText {
                if line.hasPrefix("gdbus call ") {
                    examples.append(Example(command: line))
                } else if !line.isEmpty, let last = examples.last, last.expectedOutput == nil, last.command.hasPrefix("gdbus call ") {
                    examples[examples.count - 1].expectedOutput = line
                }
                continue
            }
            guard inShell else { continue }
            if line.hasPrefix("# Call failed: "), !examples.isEmpty {
                examples[examples.count - 1].expectedError = String(line.dropFirst("# Call failed: ".count))
            } else if (line.hasPrefix("gdbus ") || line.hasPrefix("busctl ")) && !line.contains(" monitor ") {
                examples.append(Example(command: line))
            }
        }
        return examples
    }

    @Test("The README has gdbus and busctl examples")
    func thereAreExamples() throws {
        let examples = try Self.examples()
        #expect(examples.count >= 8)
        #expect(examples.contains { $0.expectedOutput != nil })
        #expect(examples.contains { $0.command.hasPrefix("gdbus call") })
        #expect(examples.contains { $0.command.hasPrefix("busctl --user call") })
    }

    @Test("Each README example works when pasted", arguments: try ReadmeTests.examples())
    func example(_ example: Example) async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        try await fixture.startHost()
        if example.command.contains("/widgets/w1") {
            // The README places these widgets with the Tap Me example app.
            let app = try await AppPeer(fixture, appID: "org.example.TapMe", schemes: ["tap-me-widget"])
            defer { app.close() }
            try await app.registerWidgets(try exampleFile("tap-me/bundle.json"))
            let widget = try await app.connection.addWidget("org.example.TapMe", "TapMeWidget", "systemSmall")
            try await app.setContent(widget, try exampleFile("tap-me/red.json"))
            let result = try await runCommand("/bin/bash", ["-c", example.command], environment: fixture.environment)
            #expect(result.succeeded, "stderr: \(result.stderr)")
            #expect(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == example.expectedOutput)
            return
        }
        if example.command.contains("/activities/a1") {
            // The README starts this activity with the delivery-tracker example app.
            let app = try await AppPeer(fixture, appID: "org.example.Delivery", schemes: ["delivery-tracker"])
            defer { app.close() }
            _ = try await app.startActivity("DeliveryAttributes", try exampleFile("delivery/activity.json"))
            let result = try await runCommand("/bin/bash", ["-c", example.command], environment: fixture.environment)
            #expect(result.succeeded, "stderr: \(result.stderr)")
            #expect(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == example.expectedOutput)
            return
        }
        if example.command.contains("org.example.EmojiRangers") {
            // The README runs the Emoji Rangers example app first.
            let record = try fixture.installEmojiRangers()
            let renderer = try await fixture.connect()
            defer { renderer.close() }
            try await fixture.launchEmojiRangers(renderer, record: record)
        }
        let result = try await runCommand("/bin/bash", ["-c", example.command], environment: fixture.environment)
        if let expected = example.expectedError {
            #expect(!result.succeeded)
            #expect(result.stderr.contains(expected), "stderr: \(result.stderr)")
        } else if let expected = example.expectedOutput {
            #expect(result.succeeded, "stderr: \(result.stderr)")
            #expect(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == expected)
        } else {
            #expect(result.succeeded, "stderr: \(result.stderr)")
            #expect(!result.stdout.isEmpty || example.command.contains("RegisterApp") || example.command.contains("Reload"))
        }
    }
}

/// The project's reference is `docs/`: every citation of it points at a file
/// and a heading that exist, and nothing cites a file outside the repository.
@Suite("Citations of docs/")
struct DocsCitationTests {
    /// GitHub's anchor for a heading: lowercased, punctuation dropped, spaces as dashes.
    static func anchor(_ heading: String) -> String {
        String(heading.lowercased().compactMap { c -> Character? in
            if c == " " { return "-" }
            return c.isLetter || c.isNumber || c == "-" || c == "_" ? c : nil
        })
    }

    static func texts() throws -> [(String, String)] {
        let root = repositoryRoot.path
        var files = ["README.md"]
        for dir in ["Sources", "Tests", "docs", "dbus", "examples", "packaging"] {
            let enumerator = FileManager.default.enumerator(atPath: root + "/" + dir)
            while let path = enumerator?.nextObject() as? String {
                if [".swift", ".md", ".xml", ".py", ".desktop"].contains(where: path.hasSuffix) { files.append(dir + "/" + path) }
            }
        }
        return try files.map { ($0, try String(contentsOfFile: root + "/" + $0, encoding: .utf8)) }
    }

    @Test("every docs/<file>.md#<heading> cited in code, tests and docs exists")
    func citationsResolve() throws {
        let root = repositoryRoot.path
        var cited = 0
        for (file, text) in try Self.texts() {
            for match in text.matches(of: #/docs/([a-z-]+\.md)(#[a-z0-9_-]+)?/#) {
                cited += 1
                let target = root + "/docs/" + match.1
                guard let doc = try? String(contentsOfFile: target, encoding: .utf8) else {
                    Issue.record("\(file) cites docs/\(match.1), which does not exist")
                    continue
                }
                guard let wanted = match.2.map({ String($0.dropFirst()) }) else { continue }
                let anchors = doc.split(separator: "\n").filter { $0.hasPrefix("#") }.map {
                    Self.anchor(String($0.drop { $0 == "#" }.trimmingCharacters(in: .whitespaces)))
                }
                #expect(anchors.contains(wanted), "\(file) cites docs/\(match.1)#\(wanted); its headings are \(anchors)")
            }
        }
        #expect(cited > 40, "the code cites docs/ throughout (\(cited) citations)")
    }

    @Test("no file cites the specification the project was built from")
    func standsAlone() throws {
        for (file, text) in try Self.texts() where file != "Tests/WidgetHostServiceTests/ReadmeTests.swift" {
            #expect(!text.contains("CONTRACT"), "\(file) cites a file outside the repository")
        }
    }
}
