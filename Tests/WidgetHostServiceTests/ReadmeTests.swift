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
