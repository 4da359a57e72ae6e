import DBus
import Foundation
import PrivateBus
import Testing
import VirtualDesktop

/// `widget-host bar` (docs/bars.md), the line status bars show: the most
/// relevant Live Activity, printed once at the start and again only when what it
/// shows changes, through the host's restarts; and its click command,
/// `widget-host tap-activity most-relevant`, which opens the app.
@Suite("widget-host bar", .serialized, .timeLimit(.minutes(2)))
struct BarTests {
    static let waybarNone = #"{"alt":"","class":[],"text":"","tooltip":""}"#

    @Test("widget-host bar follows the most relevant Live Activity — started, updated (its state alone too), stale, outranked, ended, the host gone and back — and prints nothing while nothing it shows changes")
    func follows() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        try await fixture.startHost()
        let bars = try BarProcesses(fixture)
        defer { bars.stop() }
        try await bars.expect(waybar: Self.waybarNone, text: "", "with no activity, an empty line")

        let app = try await AppPeer(fixture, appID: "org.example.Delivery", schemes: ["delivery-tracker"])
        defer { app.close() }
        let delivery = try await app.startDelivery(options: ["relevance": .double(5)])
        let tooltip = "Arriving in 10 min Track on map Call courier"
        try await bars.expect(
            waybar: #"{"alt":"active","class":["active"],"text":"Delivery 10 min","tooltip":"\#(tooltip)"}"#, text: "Delivery 10 min",
            json: [
                "id": "a1", "app_id": "org.example.Delivery", "state": "active", "text": "Delivery 10 min", "leading": "Delivery",
                "trailing": "10 min", "tooltip": tooltip, "class": ["active"],
            ], "a started activity: its compact presentations' words (the leading icon's label), bound to its state")

        // An Update of the state alone redraws what binds to it.
        try await app.updateActivity(delivery, state: ["eta_minutes": .int64(9)])
        try await bars.expect(
            waybar: #"{"alt":"active","class":["active"],"text":"Delivery 9 min","tooltip":"Arriving in 9 min Track on map Call courier"}"#,
            text: "Delivery 9 min", "a state-only Update")

        // What changes nothing the bar shows prints nothing: the relevance of the only activity,
        // a widget's content, and time passing (no timer).
        try await app.update(delivery, ["relevance": .double(6)])
        try await app.registerWidgets(#"{"widgets":[{"kind":"K","families":["systemSmall"]}]}"#)
        let widget = try await app.connection.addWidget("org.example.Delivery", "K", "systemSmall")
        try await app.setContent(widget, #"{"type":"text","text":"not an activity"}"#)
        try await bars.expectNothingNew(for: 2.5)

        // A more relevant activity takes the bar; when it goes, the first comes back.
        let bare = #"{"type":"text","text":"Goal!"}"#
        let score = try await app.startActivity(
            "Score", #"{"lockScreen":\#(bare),"compactLeading":\#(bare),"compactTrailing":{"type":"text","bind":"state.score","text":"-"},"minimal":\#(bare),"expanded":\#(bare)}"#,
            ["state": .vardict(["score": .string("2–1")]), "relevance": .double(10)])
        try await bars.expect(waybar: #"{"alt":"active","class":["active"],"text":"Goal! 2–1","tooltip":"Goal!"}"#, text: "Goal! 2–1", "a more relevant activity")
        try await app.end(score, ["dismissal": .string("immediate")])
        try await bars.expect(
            waybar: #"{"alt":"active","class":["active"],"text":"Delivery 9 min","tooltip":"Arriving in 9 min Track on map Call courier"}"#,
            text: "Delivery 9 min", "the first activity again, once the other is removed")

        // Stale at its stale date: the class says so (the text, the same, prints no new line).
        try await app.update(delivery, ["stale_date": .int64(Int64(Date().timeIntervalSince1970) + 1)])
        try await bars.expect(
            waybar: #"{"alt":"stale","class":["stale"],"text":"Delivery 9 min","tooltip":"Arriving in 9 min Track on map Call courier"}"#,
            text: nil, "stale once its stale date passed")

        try await app.end(delivery, ["state": .vardict(["eta_minutes": .int64(0)])])
        try await bars.expect(
            waybar: #"{"alt":"ended","class":["ended"],"text":"Delivery 0 min","tooltip":"Arriving in 0 min Track on map Call courier"}"#,
            text: "Delivery 0 min", "ended, with its final state")

        // The host goes: an empty line; it comes back with the ended activity it keeps.
        await fixture.stopHost()
        try await bars.expect(waybar: Self.waybarNone, text: "", "the host gone")
        try await fixture.startHost()
        try await bars.expect(
            waybar: #"{"alt":"ended","class":["ended"],"text":"Delivery 0 min","tooltip":"Arriving in 0 min Track on map Call courier"}"#,
            text: "Delivery 0 min", "the host back")
        try await bars.expectNothingNew(for: 1)
    }

    @Test("The bar's click command, widget-host tap-activity most-relevant compactTrailing, opens the app at the activity's URL with the token given; with no activity it says there is none")
    func clickOpensTheApp() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        try await fixture.startHost()
        let none = try await fixture.cli(["tap-activity", "most-relevant", "compactTrailing"])
        #expect(none.status == 1 && none.stderr.contains("no Live Activity runs, so there is none to tap"), "\(none)")

        let app = try await AppPeer(fixture, appID: "org.example.Delivery", schemes: ["delivery-tracker"])
        defer { app.close() }
        try await app.startDelivery(options: ["relevance": .double(1)])
        let other = #"{"type":"text","text":"x"}"#
        _ = try await app.startActivity(
            "Other", #"{"widgetURL":"delivery-tracker://other","lockScreen":\#(other),"compactLeading":\#(other),"compactTrailing":\#(other),"minimal":\#(other),"expanded":\#(other)}"#)
        // The click command of the bars' snippets, as a bar runs it: through the shell.
        let click = try BarSnippets.clickCommand()
        let tapped = try await runCommand(
            "/bin/sh", ["-c", click + " --token token-from-the-bar"],
            environment: fixture.environment.merging(["PATH": buildDirectory + ":/usr/bin:/bin"]) { _, new in new })
        #expect(tapped.succeeded && tapped.stdout.hasPrefix("open-url "), "\(tapped)")
        let opened = app.calls.filter { $0.member == "OpenURL" }
        #expect(opened.map { $0.args[0] } == [.string("delivery-tracker://order/1234")], "the most relevant activity's URL: \(opened)")
        let platform = opened.first?.args[1].stringKeyedEntries?.mapValues(\.unwrapped)
        #expect(platform?["activation-token"] == .string("token-from-the-bar"), "\(String(describing: platform))")
        let source = platform?["org.widgethost.source"]?.stringKeyedEntries?.mapValues(\.unwrapped)
        #expect(source?["activity_id"] == .string("a1") && source?["presentation"] == .string("compactTrailing"), "\(String(describing: source))")
    }
}

/// `widget-host bar` in each format, on the fixture's bus, read line by line.
struct BarProcesses {
    let waybar: Launched, json: Launched, text: Launched

    init(_ fixture: HostFixture) throws {
        func bar(_ format: String) throws -> Launched { try fixture.launch(buildDirectory + "/widget-host", ["bar", "--format", format]) }
        (waybar, json, text) = (try bar("waybar"), try bar("json"), try bar("text"))
    }

    static func lines(_ process: Launched) -> [String] {
        process.printed().split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
    }

    var printed: String { "waybar: \(Self.lines(waybar))\njson: \(Self.lines(json))\ntext: \(Self.lines(text))" }

    /// Waits until the waybar bar's last line is `waybar` (and the text bar's `text`, unless nil:
    /// a change it does not show) and checks that the json bar printed as many lines as the waybar
    /// one, its last with the fields of `json` when given, and that each line is new.
    func expect(waybar expected: String, text: String?, json: [String: Any]? = nil, _ what: String) async throws {
        let seen = await eventually(timeout: 10) {
            Self.lines(waybar).last == expected && (text == nil || Self.lines(self.text).last == text)
                && Self.lines(self.json).count == Self.lines(waybar).count
        }
        #expect(seen, "\(what): \(printed)")
        let lines = Self.lines(waybar)
        #expect(zip(lines, lines.dropFirst()).allSatisfy { $0 != $1 }, "\(what): a line repeats the one before: \(lines)")
        let last = Self.lines(self.json).last.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(last?["text"] as? String == Self.field(expected, "text"), "\(what): \(printed)")
        if let json {
            for (key, value) in json {
                #expect("\(last?[key] ?? "nil")" == "\(value)", "\(what): json's \(key): \(printed)")
            }
        }
    }

    /// A waybar line's field, as the json line gives it (Pango markup undone).
    static func field(_ line: String, _ key: String) -> String? {
        (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?[key] as? String
    }

    /// Nothing more is printed for `seconds`.
    func expectNothingNew(for seconds: Double) async throws {
        let before = (Self.lines(waybar).count, Self.lines(json).count, Self.lines(text).count)
        try await Task.sleep(for: .seconds(seconds))
        let after = (Self.lines(waybar).count, Self.lines(json).count, Self.lines(text).count)
        #expect(before == after, "nothing changed, yet the bars printed: \(printed)")
    }

    func stop() {
        for process in [waybar, json, text] { endProcess(process.process) }
    }
}

/// The bars' configuration snippets (examples/bars/, docs/bars.md).
enum BarSnippets {
    static let folder = repositoryRoot.appendingPathComponent("examples/bars")

    /// The click command the Waybar snippet runs.
    static func clickCommand() throws -> String {
        let config = try String(contentsOf: folder.appendingPathComponent("waybar/config.jsonc"), encoding: .utf8)
        let line = config.split(separator: "\n").first { $0.contains("\"on-click\"") }
        guard let command = line?.split(separator: "\"").dropFirst(3).first else {
            throw PrivateBusError("examples/bars/waybar/config.jsonc has no on-click command")
        }
        return String(command)
    }
}

extension AppPeer {
    /// Starts the delivery example's Live Activity for order 1234, `eta` minutes away; returns its path.
    @discardableResult
    func startDelivery(eta: Int64 = 10, options: [String: DBusValue] = [:]) async throws -> String {
        try await startActivity(
            "DeliveryAttributes", try exampleFile("delivery/activity.json"),
            options.merging(["attributes": .vardict(["order": .string("1234")]), "state": .vardict(["eta_minutes": .int64(eta)])]) { given, _ in given })
    }

    /// `LiveActivity.Update` of `activity` with `options`, its content kept.
    func update(_ activity: String, _ options: [String: DBusValue]) async throws {
        _ = try await connection.call(
            destination: "org.widgethost.Host1", path: activity, interface: "org.widgethost.Host1.LiveActivity", member: "Update",
            [.string(""), .vardict(options)])
    }

    /// `LiveActivity.End` of `activity` with `options`.
    func end(_ activity: String, _ options: [String: DBusValue]) async throws {
        _ = try await connection.call(
            destination: "org.widgethost.Host1", path: activity, interface: "org.widgethost.Host1.LiveActivity", member: "End",
            [.vardict(options)])
    }
}

/// Whether a bar's tests run: when it is installed, and always in CI (CI=true), where a missing
/// bar fails them instead of skipping.
func barInstalled(_ executable: String) -> Bool {
    FileManager.default.isExecutableFile(atPath: executable) || ProcessInfo.processInfo.environment["CI"] == "true"
}

/// Each bar's snippet of docs/bars.md (examples/bars/), checked as far as its bar is in Debian:
/// its commands, its quotation in the page, and its bar loading it next to a host.
@Suite("Status bars' snippets", .serialized, .timeLimit(.minutes(2)))
struct BarSnippetTests {
    static let bar = "widget-host bar --format"
    static let click = "widget-host tap-activity most-relevant compactTrailing"

    /// Every snippet, with the format its bar command asks for.
    static let snippets: [(file: String, format: String)] = [
        ("waybar/config.jsonc", "waybar"), ("eww/eww.yuck", "json"), ("ags/config.js", "json"), ("quickshell/LiveActivity.qml", "json"),
        ("polybar/config.ini", "text"), ("i3blocks/config", "text"), ("yambar/config.yml", "text"),
    ]

    static func text(_ file: String) throws -> String {
        try String(contentsOf: BarSnippets.folder.appendingPathComponent(file), encoding: .utf8)
    }

    /// The snippet's commands, each as its words (Quickshell gives them as lists of strings).
    static func commands(_ text: String) -> [String] {
        let lists = text.matches(of: /\[("widget-host"(?:, "[^"]*")*)\]/).map {
            $0.1.split(separator: ", ").map { $0.trimmingCharacters(in: CharacterSet(charactersIn: "\"")) }.joined(separator: " ")
        }
        let lines = text.matches(of: /widget-host [a-z-]+(?: [a-zA-Z-]+)*/).map { String($0.0) }
        return lists + lines
    }

    @Test("Each snippet runs the bar in its format and the click command, and no other widget-host command", arguments: snippets)
    func commands(file: String, format: String) throws {
        let commands = Set(Self.commands(try Self.text(file)))
        #expect(commands == ["\(Self.bar) \(format)", Self.click], "examples/bars/\(file) runs \(commands)")
    }

    @Test("docs/bars.md quotes every file of examples/bars verbatim")
    func quoted() throws {
        let page = try String(contentsOf: repositoryRoot.appendingPathComponent("docs/bars.md"), encoding: .utf8)
        let files = FileManager.default.enumerator(atPath: BarSnippets.folder.path)?.compactMap { $0 as? String }
            .filter { !$0.hasSuffix("/") && !FileManager.default.isDirectory(BarSnippets.folder.appendingPathComponent($0)) } ?? []
        #expect(Set(files) == Set(Self.snippets.map(\.file) + ["waybar/style.css"]), "\(files)")
        for file in files {
            #expect(page.contains("\n" + (try Self.text(file)) + "```\n"), "docs/bars.md does not quote examples/bars/\(file) as it is")
        }
    }

    @Test("yambar accepts its snippet (and refuses one with a key it does not know), whose script prints yambar's tags",
        .enabled(if: barInstalled("/usr/bin/yambar"), "yambar is not installed (apt-get install yambar)"))
    func yambar() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        let config = try Self.text("yambar/config.yml")
        let checked = try await runCommand("/usr/bin/yambar", ["--validate", "-c", BarSnippets.folder.appendingPathComponent("yambar/config.yml").path])
        #expect(checked.succeeded, "\(checked)")
        let broken = fixture.root.appendingPathComponent("yambar.yml")
        try config.replacingOccurrences(of: "on-click", with: "on-clik").write(to: broken, atomically: true, encoding: .utf8)
        let refused = try await runCommand("/usr/bin/yambar", ["--validate", "-c", broken.path])
        #expect(!refused.succeeded && refused.stderr.contains("on-clik"), "\(refused)")

        // The script, as yambar runs it: /bin/sh -c and the line after it.
        let script = try #require(config.split(separator: "\n").first { $0.contains("\(Self.bar) text |") }.map {
            String($0.trimmingCharacters(in: .whitespaces).dropFirst(2))
        })
        try await fixture.startHost()
        let app = try await AppPeer(fixture, appID: "org.example.Delivery", schemes: ["delivery-tracker"])
        defer { app.close() }
        let running = try fixture.launch("/bin/sh", ["-c", script], environment: ["PATH": buildDirectory + ":/usr/bin:/bin"])
        defer { endProcessTree(running.process) }
        #expect(await eventually { running.printed() == "text|string|\n\n" }, "\(running.printed())")
        try await app.startDelivery()
        #expect(await eventually { running.printed() == "text|string|\n\ntext|string|Delivery 10 min\n\n" }, "\(running.printed())")
    }

    @Test("i3blocks shows the activity in its status line, and a space with none; a click on the second block, as i3bar writes it, opens the app at the activity's URL",
        .enabled(if: barInstalled("/usr/bin/i3blocks"), "i3blocks is not installed (apt-get install i3blocks)"))
    func i3blocks() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        try await fixture.startHost()
        let app = try await AppPeer(fixture, appID: "org.example.Delivery", schemes: ["delivery-tracker"])
        defer { app.close() }
        let delivery = try await app.startDelivery()

        // i3blocks reads i3bar's clicks from its standard input, and prints i3bar's protocol.
        let output = fixture.root.appendingPathComponent("i3blocks.out")
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        let clicks = Pipe()
        let i3blocks = Process()
        i3blocks.executableURL = URL(fileURLWithPath: "/usr/bin/i3blocks")
        i3blocks.arguments = ["-c", BarSnippets.folder.appendingPathComponent("i3blocks/config").path]
        i3blocks.environment = fixture.environment.merging(["PATH": buildDirectory + ":/usr/bin:/bin"]) { _, new in new }
        i3blocks.standardInput = clicks
        i3blocks.standardOutput = try FileHandle(forWritingTo: output)
        i3blocks.standardError = i3blocks.standardOutput
        try PrivateBus.withCleanSignalMask { try i3blocks.run() }
        defer { endProcessTree(i3blocks) }
        func printed() -> String { (try? String(contentsOf: output, encoding: .utf8)) ?? "" }
        #expect(await eventually { printed().contains(#""full_text":"Delivery 10 min","name":"live-activity""#) }, "\(printed())")

        clicks.fileHandleForWriting.write(Data("[\n{\"name\":\"live-activity-open\",\"instance\":\"\",\"button\":1,\"x\":1,\"y\":1}\n".utf8))
        #expect(await eventually { app.calls.contains { $0.member == "OpenURL" } }, "\(printed())")
        #expect(app.calls.filter { $0.member == "OpenURL" }.map { $0.args[0] } == [.string("delivery-tracker://order/1234")])

        // i3blocks 1.4 would keep the text on an empty line: the snippet makes it a space.
        try await app.end(delivery, ["dismissal": .string("immediate")])
        #expect(await eventually { printed().contains(#""full_text":" ","name":"live-activity""#) }, "\(printed())")
    }

    @Test("Waybar loads its snippet in a headless sway, and its module shows the most relevant activity's text as it changes, and hides with none",
        .enabled(if: barInstalled("/usr/bin/waybar") && barInstalled("/usr/bin/sway"), "waybar or sway is not installed (apt-get install waybar sway)"))
    func waybar() async throws {
        // sway refuses to run as root: as root the test runs it, and what talks to it, as nobody.
        let user = getuid() == 0 ? "nobody" : nil
        let fixture = try await HostFixture.make(busUsers: user.map { [$0] } ?? [])
        defer { fixture.stop() }
        try await fixture.startHost()
        let app = try await AppPeer(fixture, appID: "org.example.Delivery", schemes: ["delivery-tracker"])
        defer { app.close() }
        let delivery = try await app.startDelivery()

        let sway = try await SwaySession.start(fixture, user: user)
        defer { sway.stop() }
        let waybar = try sway.launch("/usr/bin/waybar", ["-c", try sway.copy("waybar/config.jsonc"), "-s", try sway.copy("waybar/style.css")])
        defer { endProcessTree(waybar.process) }
        // Found as soon as it is in the tree; laid out at its width a frame later.
        var label = try JSONDecoder().decode(
            ScreenElement.self, from: Data(try await sway.drive(["find", "Delivery 10 min", "--role", "label", "--timeout", "20"]).utf8))
        for _ in 0..<50 where label.width <= 20 {
            try await Task.sleep(for: .milliseconds(100))
            label = try JSONDecoder().decode(
                ScreenElement.self, from: Data(try await sway.drive(["find", "Delivery 10 min", "--role", "label"]).utf8))
        }
        #expect(label.y < 40 && label.width > 20, "the module is in the bar at the top: \(label)\nwaybar: \(waybar.printed())")

        try await app.updateActivity(delivery, state: ["eta_minutes": .int64(9)])
        try await sway.drive(["find", "Delivery 9 min", "--role", "label", "--timeout", "10"])
        try await app.end(delivery, ["dismissal": .string("immediate")])
        try await sway.drive(["gone", "Delivery 9 min", "--timeout", "10"])
        #expect(waybar.process.isRunning, "waybar: \(waybar.printed())")
    }
}

/// sway, headless (no screen, no input devices: wlroots' headless backend), as
/// `user` (nil: this account) with a runtime folder and a home of that user's,
/// and the AT-SPI bus of that user on the fixture's bus; what runs in it runs as
/// `user` too, so that AT-SPI (whose peers accept only their own account) reads it.
final class SwaySession: @unchecked Sendable {
    let fixture: HostFixture
    let user: String?
    let runtime: URL
    let home: URL
    let sway: Launched
    let accessibility: Launched
    let display: String

    private init(fixture: HostFixture, user: String?, runtime: URL, home: URL, sway: Launched, accessibility: Launched, display: String) {
        (self.fixture, self.user, self.runtime, self.home, self.sway, self.accessibility, self.display) =
            (fixture, user, runtime, home, sway, accessibility, display)
    }

    static func start(_ fixture: HostFixture, user: String?) async throws -> SwaySession {
        let runtime = fixture.root.appendingPathComponent("sway-runtime")
        let home = fixture.root.appendingPathComponent("sway-home")
        for folder in [runtime, home] {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: folder.path)
            if let user { try FileManager.default.setAttributes([.ownerAccountName: user], ofItemAtPath: folder.path) }
        }
        if user != nil {
            // The other account reaches the bus's socket and these folders only through folders it may enter.
            var folder = fixture.root
            while folder.path != "/" {
                let mode = (try FileManager.default.attributesOfItem(atPath: folder.path)[.posixPermissions] as? Int) ?? 0
                guard mode & 0o001 != 0 else {
                    throw PrivateBusError("\(folder.path) is closed to other accounts (mode \(String(mode, radix: 8))), so sway cannot run as another user below it: give it o+x, as scripts/test does with its TMPDIR")
                }
                folder.deleteLastPathComponent()
            }
        }
        let config = fixture.root.appendingPathComponent("sway.conf")
        try "xwayland disable\noutput HEADLESS-1 mode 1280x800\n".write(to: config, atomically: true, encoding: .utf8)
        let sway = try launch(
            fixture, user: user, runtime: runtime, home: home, "/usr/bin/sway", ["-c", config.path],
            ["WLR_BACKENDS": "headless", "WLR_LIBINPUT_NO_DEVICES": "1", "WLR_RENDERER": "pixman"])
        var display: String?
        _ = await eventually(timeout: 20) {
            display = (try? FileManager.default.contentsOfDirectory(atPath: runtime.path))?.first { $0.hasPrefix("wayland-") && !$0.hasSuffix(".lock") }
            return display != nil || !sway.process.isRunning
        }
        guard let display else {
            endProcessTree(sway.process)
            throw PrivateBusError("sway did not start: \(sway.printed().suffix(3000))")
        }
        let accessibility = try launch(fixture, user: user, runtime: runtime, home: home, "/usr/libexec/at-spi-bus-launcher", [], [:])
        let session = SwaySession(fixture: fixture, user: user, runtime: runtime, home: home, sway: sway, accessibility: accessibility, display: display)
        let connection = try await fixture.connect()
        defer { connection.close() }
        guard await eventually(timeout: 20, { (try? await connection.nameOwner("org.a11y.Bus")) != nil }) else {
            session.stop()
            throw PrivateBusError("the AT-SPI bus did not start (\(accessibility.process.isRunning ? "running" : "exit status \(accessibility.process.terminationStatus)")): \(accessibility.printed().suffix(3000))")
        }
        return session
    }

    /// `executable` as `user` in the session's folders, on the fixture's bus.
    private static func launch(
        _ fixture: HostFixture, user: String?, runtime: URL, home: URL, _ executable: String, _ arguments: [String], _ environment: [String: String]
    ) throws -> Launched {
        let (program, words) = invocation(user: user, runtime: runtime, home: home, executable, arguments, environment)
        return try fixture.launch(program, words)
    }

    /// The program and arguments that run `executable` as `user`, with the session's folders
    /// and `environment` (the rest of the caller's environment is kept).
    private static func invocation(
        user: String?, runtime: URL, home: URL, _ executable: String, _ arguments: [String], _ environment: [String: String]
    ) -> (String, [String]) {
        let settings = environment.merging([
            "HOME": home.path, "XDG_RUNTIME_DIR": runtime.path, "PATH": buildDirectory + ":/usr/bin:/bin",
            // The machine's settings schemas, icons and fonts, after the test's desktop entries.
            "XDG_DATA_DIRS": runtime.deletingLastPathComponent().appendingPathComponent("sysdata").path + ":/usr/share",
            "XDG_CONFIG_HOME": home.appendingPathComponent(".config").path, "XDG_CACHE_HOME": home.appendingPathComponent(".cache").path,
        ]) { given, _ in given }.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        guard let user else { return ("/usr/bin/env", settings + [executable] + arguments) }
        // setpriv execs the program itself (runuser would stay between, a parent the program outlives).
        let group = getpwnam(user).map { String($0.pointee.pw_gid) } ?? user
        return ("/usr/bin/setpriv", ["--reuid", user, "--regid", group, "--clear-groups", "/usr/bin/env"]
            + settings + [executable] + arguments)
    }

    /// A Wayland client of the session's sway.
    func launch(_ executable: String, _ arguments: [String]) throws -> Launched {
        try Self.launch(fixture, user: user, runtime: runtime, home: home, executable, arguments, ["WAYLAND_DISPLAY": display, "GDK_BACKEND": "wayland"])
    }

    /// Copies examples/bars/`file` where the session's user reads it; returns the copy's path.
    func copy(_ file: String) throws -> String {
        let copy = fixture.root.appendingPathComponent("bars/\(file)")
        try FileManager.default.createDirectory(at: copy.deletingLastPathComponent(), withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: BarSnippets.folder.appendingPathComponent(file), to: copy)
        return copy.path
    }

    /// Runs Tests/Fixtures/board/drive.py in Waybar's accessible tree, as the session's user;
    /// fails the test with what it printed when it fails.
    @discardableResult
    func drive(_ arguments: [String]) async throws -> String {
        let script = fixture.root.appendingPathComponent("drive.py")
        if !FileManager.default.fileExists(atPath: script.path) {
            try FileManager.default.copyItem(at: repositoryRoot.appendingPathComponent("Tests/Fixtures/board/drive.py"), to: script)
        }
        let (program, words) = Self.invocation(
            user: user, runtime: runtime, home: home, "/usr/bin/python3", [script.path, "--app", "waybar"] + arguments, [:])
        let result = try await runCommand(program, words, environment: fixture.environment, timeout: 60)
        guard result.succeeded else {
            Issue.record("drive.py \(arguments.joined(separator: " ")) failed: \(result)")
            throw PrivateBusError("drive.py failed")
        }
        return result.stdout
    }

    func stop() {
        endProcessTree(accessibility.process)
        endProcessTree(sway.process)
    }
}

/// Ends `process` and every process it started (a shell's pipeline, a bar's blocks), children first.
func endProcessTree(_ process: Process) {
    for child in descendants(of: process.processIdentifier) { kill(child, SIGTERM) }
    endProcess(process)
}

/// The processes below `pid`, deepest last, as /proc says.
func descendants(of pid: Int32) -> [Int32] {
    let pids = (try? FileManager.default.contentsOfDirectory(atPath: "/proc"))?.compactMap(Int32.init) ?? []
    var parents: [Int32: [Int32]] = [:]
    for candidate in pids {
        // /proc/PID/stat: "PID (COMMAND) STATE PPID ...", the command possibly holding spaces.
        guard let stat = try? String(contentsOfFile: "/proc/\(candidate)/stat", encoding: .utf8),
            let end = stat.lastIndex(of: ")"), let parent = stat[stat.index(after: end)...].split(separator: " ").dropFirst().first.flatMap({ Int32($0) })
        else { continue }
        parents[parent, default: []].append(candidate)
    }
    var found: [Int32] = []
    var queue = [pid]
    while let next = queue.popLast() {
        let children = parents[next] ?? []
        found += children
        queue += children
    }
    return found
}

extension FileManager {
    func isDirectory(_ url: URL) -> Bool {
        var directory: ObjCBool = false
        return fileExists(atPath: url.path, isDirectory: &directory) && directory.boolValue
    }
}
