import Foundation
import PrivateBus
import Testing

/// The README's first quick-start command, run as a new user on a machine
/// without a display or a session bus runs it: it shows its steps, saves its
/// pictures of the board and, where GNOME Shell is installed, of the shell,
/// exits 0 and leaves no process and no temporary folder behind.
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
        let started = Date()
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
        // and the board was drawn on a virtual display, and GNOME Shell on another one.
        let pictures = ["board.png"] + (gnomeShellTestsRun ? ["gnome-shell.png"] : [])
        for picture in pictures {
            let file = repositoryRoot.appendingPathComponent(".build/demo/\(picture)")
            let saved = (try? file.resourceValues(forKeys: [.contentModificationDateKey]))?.contentModificationDate
            #expect(saved.map { $0 >= started.addingTimeInterval(-1) } == true, "the demo saved no \(file.path) (\(saved.map { "\($0)" } ?? "none"))")
            let colours = try await Self.colours(file.path)
            #expect(colours >= 12, "\(file.path) shows \(colours) colours: the widgets are not drawn")
        }
        for shown in [
            "No session bus here: the demo starts a private one.",
            "  app: Tap Me opened tap-me-widget://show-red",
            "  app:   (activation token demo-token)",
            "  /org/widgethost/Host1/widgets/w5 open-url app_id=\"org.example.TapMe\" url=\"tap-me-widget://show-red\" via=\"link\"",
            "After the action the host reloaded the widget: 100%",
            "w6  org.example.EmojiRangers  EmojiRangerWidget  systemSmall   628 bytes",
            "Saved a screenshot of the board: \(repositoryRoot.path)/.build/demo/board.png",
        ] + (gnomeShellTestsRun ? ["Saved a screenshot of GNOME Shell with the extension: \(repositoryRoot.path)/.build/demo/gnome-shell.png"] : []) {
            #expect(lines.contains(shown), "the demo did not print \(shown)")
        }
        // Three of the timeline's entries, a second apart: 40%, 60% and 80% when the readings
        // start within the first entry's second, later ones on a machine slow enough that they
        // do not — the timeline runs on the app's clock from the moment the widget was added.
        let health = lines.drop { !$0.hasPrefix("Spouty's health") }.dropFirst().prefix(3)
            .map { Int($0.trimmingCharacters(in: .whitespaces).dropLast()) ?? -1 }
        #expect(health.count == 3 && health.first.map { $0 >= 40 } == true && zip(health, health.dropFirst()).allSatisfy { $1 == $0 + 20 }, "\(health)")
    }

    /// How many distinct colours a sample of the pixels of a PNG file that
    /// widgetboard/screenshot.py wrote has (8-bit RGB, every row unfiltered);
    /// 0 when it cannot be read.
    static func colours(_ png: String) async throws -> Int {
        let script = """
            import struct, sys, zlib
            data = open(sys.argv[1], "rb").read()
            width, height = struct.unpack(">II", data[16:24])
            chunks, at = [], 8
            while at < len(data):
                length, kind = struct.unpack(">I4s", data[at:at + 8])
                if kind == b"IDAT":
                    chunks.append(data[at + 8:at + 8 + length])
                at += 12 + length
            rows = zlib.decompress(b"".join(chunks))
            stride = 1 + width * 3
            print(len({rows[y * stride + 1 + x * 3:y * stride + 4 + x * 3] for y in range(0, height, 4) for x in range(0, width, 4)}))
            """
        let result = try await runCommand("/usr/bin/python3", ["-c", script, png])
        return result.succeeded ? Int(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0 : 0
    }
}
