import Foundation
import PrivateBus
import Testing

/// The README's first quick-start command, run as a new user on a machine
/// without a display or a session bus runs it: it shows its steps, exits 0
/// and leaves no process and no temporary folder behind.
@Suite("scripts/demo", .timeLimit(.minutes(3)))
struct DemoTests {
    static let lastLine = "The demo stopped everything it started and removed its files."

    @Test("scripts/demo shows a tap end to end, exits 0 and leaves nothing behind")
    func demo() async throws {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("widgethost-demo-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let status = scratch.appendingPathExtension("status")
        defer { try? FileManager.default.removeItem(at: status) }
        var environment = ProcessInfo.processInfo.environment
        for name in ["DISPLAY", "WAYLAND_DISPLAY", "DBUS_SESSION_BUS_ADDRESS", "DBUS_STARTER_ADDRESS", "DBUS_STARTER_BUS_TYPE"] {
            environment.removeValue(forKey: name)
        }
        environment["TMPDIR"] = scratch.path  // where mktemp makes the demo's folder
        environment["WIDGETHOST_BIN_DIR"] = buildDirectory  // the programs this test run built
        // Only the demo and what it starts carry the mark, not the shell that notes its status.
        let mark = UUID().uuidString
        let script = #"WIDGETHOST_DEMO_MARK="$2" "$0"; echo $? > "$1""#

        let run = Task {
            try await runCommand(
                "/bin/bash", ["-c", script, repositoryRoot.path + "/scripts/demo", status.path, mark], environment: environment,
                timeout: 150)
        }
        // Once the demo has exited, whatever still carries its mark was left behind:
        // note it and end it (a process left holding the demo's output would also
        // keep the command from finishing).
        _ = await eventually(timeout: 150) { FileManager.default.fileExists(atPath: status.path) }
        let left = processesMarked("WIDGETHOST_DEMO_MARK", mark)
        for line in left { kill(pid_t(line.prefix { $0.isNumber })!, SIGKILL) }
        let result = try await run.value
        let exitStatus = (try? String(contentsOf: status, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)

        #expect(exitStatus == "0" && result.succeeded, "exit status \(exitStatus ?? "none"); \(result)")
        let lines = result.stdout.split(separator: "\n").map(String.init)
        #expect(lines.last == Self.lastLine, "the demo's last lines:\n\(lines.suffix(5).joined(separator: "\n"))\nstderr: \(result.stderr)")
        #expect(left.isEmpty, "the demo left these running: \(left)")
        let kept = (try? FileManager.default.contentsOfDirectory(atPath: scratch.path)) ?? []
        #expect(kept.isEmpty, "the demo left \(kept) in its TMPDIR")

        // What the demo shows along the way: the app received the tap with its token,
        // the timeline changed the widget by itself, the restart kept the widgets,
        // and the board was drawn on a virtual display.
        for shown in [
            "No session bus here: the demo starts a private one.",
            "  app: Tap Me opened tap-me-widget://show-red",
            "  app:   (activation token demo-token)",
            "  /org/widgethost/Host1/widgets/w5 open-url app_id=\"org.example.TapMe\" url=\"tap-me-widget://show-red\" via=\"link\"",
            "After the action the host reloaded the widget: 100%",
            "w6  org.example.EmojiRangers  EmojiRangerWidget  systemSmall   628 bytes",
            "Saved a screenshot of the board: \(repositoryRoot.path)/.build/demo/board.png",
        ] {
            #expect(lines.contains(shown), "the demo did not print \(shown)")
        }
        let health = lines.drop { !$0.hasPrefix("Spouty's health") }.dropFirst().prefix(3)
        #expect(health.map { $0.trimmingCharacters(in: .whitespaces) } == ["40%", "60%", "80%"], "\(health)")
    }
}
