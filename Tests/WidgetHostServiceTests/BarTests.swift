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

    @Test("Waybar loads its snippet in a headless sway: its module shows the most relevant activity's text as it changes, a click on it opens the app at the activity's URL, and it hides with none",
        .enabled(if: barInstalled("/usr/bin/waybar") && barInstalled("/usr/bin/sway"), "waybar or sway is not installed (apt-get install waybar sway)"))
    func waybar() async throws {
        try await Self.inSway { sway, tapMe in
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

            // A click in the middle of the label: Waybar runs the snippet's on-click.
            try await sway.click(x: label.x + label.width / 2, y: label.y + label.height / 2)
            await tapMe.expectOpened("a click on Waybar's module", waybar.printed())

            try await tapMe.app.updateActivity(tapMe.activity, state: ["eta_minutes": .int64(9)])
            try await sway.drive(["find", "Delivery 9 min", "--role", "label", "--timeout", "10"])
            try await tapMe.end()
            try await sway.drive(["gone", "Delivery 9 min", "--timeout", "10"])
            #expect(waybar.process.isRunning, "waybar: \(waybar.printed())")
        }
    }

    @Test("i3blocks in swaybar, in a headless sway, shows the activity's text as it changes, and a click on its second block opens the app at the activity's URL; with none the text goes",
        .enabled(if: barInstalled("/usr/bin/i3blocks") && barInstalled("/usr/bin/sway") && barInstalled("/usr/bin/grim"),
            "i3blocks, sway or grim is not installed (apt-get install i3blocks sway grim)"))
    func i3blocksInSwaybar() async throws {
        // swaybar, sway's own bar, shows what a status_command prints in i3bar's protocol, and
        // writes its clicks to the command's standard input, as i3bar does.
        try await Self.inSway(configuration: { fixture in
            "bar {\n    position top\n    workspace_buttons no\n    status_command i3blocks -c \(try SwaySession.copy("i3blocks/config", into: fixture))\n}\n"
        }) { sway, tapMe in
            // The status line is right-aligned: the second block, ↗, is its last text; the first's is left of it.
            try await expectClickThrough(tapMe, "i3blocks in swaybar", look: sway.picture, click: sway.click, output: sway.sway.printed) { text in
                (text.dropLast().first.map { $0.lowerBound...text.dropLast().last!.upperBound }, text.last)
            }
        }
    }

    @Test("yambar shows the activity's text in a headless sway as it changes, and a click on it opens the app at the activity's URL; with none it shows nothing",
        .enabled(if: barInstalled("/usr/bin/yambar") && barInstalled("/usr/bin/sway") && barInstalled("/usr/bin/grim"),
            "yambar, sway or grim is not installed (apt-get install yambar sway grim)"))
    func yambarInSway() async throws {
        try await Self.inSway { sway, tapMe in
            let yambar = try sway.launch("/usr/bin/yambar", ["-c", try sway.copy("yambar/config.yml")])
            defer { endProcessTree(yambar.process) }
            try await expectClickThrough(tapMe, "yambar", look: sway.picture, click: sway.click, output: yambar.printed, parts: Self.wholeText)
        }
    }

    @Test("polybar shows the activity's text on an X display as it changes, and a click on it opens the app at the activity's URL; with none it shows nothing",
        .enabled(if: barInstalled("/usr/bin/polybar") && barInstalled("/usr/bin/Xvfb"), "polybar is not installed (apt-get install polybar)"))
    func polybar() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        let tapMe = try await TapMeDelivery.start(fixture)
        defer { tapMe.close() }
        let display = try VirtualDisplay(directory: fixture.root)
        defer { display.stop() }
        // A bar at the top with the snippet's module alone, white on a grey that is not the screen's black.
        let config = fixture.root.appendingPathComponent("polybar.ini")
        try """
            include-file = \(BarSnippets.folder.appendingPathComponent("polybar/config.ini").path)

            [bar/live-activity]
            width = 100%
            height = 30
            background = #222222
            foreground = #ffffff
            modules-center = live-activity

            """.write(to: config, atomically: true, encoding: .utf8)
        let environment = ["DISPLAY": display.display, "PATH": buildDirectory + ":/usr/bin:/bin"]
        let polybar = try fixture.launch("/usr/bin/polybar", ["--config=\(config.path)", "live-activity"], environment: environment)
        defer { endProcessTree(polybar.process) }
        try await expectClickThrough(
            tapMe, "polybar", look: { ScreenPicture(try Framebuffer(path: display.framebuffer), height: 80) },
            click: { x, y in
                let clicked = try await runCommand("/usr/bin/xdotool", ["mousemove", "\(x)", "\(y)", "click", "1"], environment: fixture.environment, adding: environment)
                guard clicked.succeeded else { throw PrivateBusError("xdotool: \(clicked)") }
            }, output: polybar.printed, parts: Self.wholeText)
    }

    /// Runs `body` with Tap Me's delivery activity on a host and a headless sway (started with
    /// what `configuration` gives after the output's), all ended after it, failed or not.
    static func inSway(
        configuration: (HostFixture) throws -> String = { _ in "" }, _ body: (SwaySession, TapMeDelivery) async throws -> Void
    ) async throws {
        let user = SwaySession.user
        let fixture = try await HostFixture.make(busUsers: user.map { [$0] } ?? [])
        defer { fixture.stop() }
        let tapMe = try await TapMeDelivery.start(fixture)
        defer { tapMe.close() }
        let sway = try await SwaySession.start(fixture, user: user, configuration: try configuration(fixture))
        defer { sway.stop() }
        try await body(sway, tapMe)
    }

    /// A bar whose text is the activity's alone, where a click on it taps.
    static func wholeText(_ text: [ClosedRange<Int>]) -> (text: ClosedRange<Int>?, target: ClosedRange<Int>?) {
        let whole = text.first.map { $0.lowerBound...text.last!.upperBound }
        return (whole, whole)
    }
}

/// What each bar's test does with a bar at the top of the screen that shows Tap Me's delivery
/// activity (`parts` tells the activity's text and what to click among the runs of text the bar
/// draws): waits until its text shows, clicks the middle of the target, checks that Tap Me opened
/// at the activity's URL, sees the text narrow by a digit on a state-only `Update` (10 min, then 9),
/// ends the activity, and waits until its text is gone.
func expectClickThrough(
    _ tapMe: TapMeDelivery, _ bar: String, look: () async throws -> ScreenPicture, click: (Int, Int) async throws -> Void,
    output: () -> String, parts: ([ClosedRange<Int>]) -> (text: ClosedRange<Int>?, target: ClosedRange<Int>?)
) async throws {
    var picture: ScreenPicture?
    func width(_ picture: ScreenPicture?) -> Int { picture.flatMap { parts($0.text).text?.count } ?? 0 }
    // "Delivery 10 min" takes some 100 to 150 pixels in the bars' fonts: less than a word alone, more than a message.
    let shown = try await eventually(timeout: 20) {
        picture = try await look()
        return (60...300).contains(width(picture)) && parts(picture!.text).target != nil
    }
    guard shown, let picture, let target = parts(picture.text).target else {
        Issue.record("\(bar) shows no activity's text at the top of the screen: text at columns \(picture?.text ?? []); \(output())")
        return
    }
    try await click((target.lowerBound + target.upperBound) / 2, picture.barHeight / 2)
    await tapMe.expectOpened("a click on \(bar)", output())

    var last = picture
    try await tapMe.app.updateActivity(tapMe.activity, state: ["eta_minutes": .int64(9)])
    #expect(try await eventually(timeout: 10) {
        last = try await look()
        return (width(picture) - 20...width(picture) - 3).contains(width(last))
    }, "\(bar) does not show the update, a digit less than \(width(picture)) pixels: text at columns \(last.text); \(output())")
    try await tapMe.end()
    #expect(try await eventually(timeout: 10) {
        last = try await look()
        return parts(last.text).text == nil
    }, "\(bar) still shows text with no activity: at columns \(last.text); \(output())")
}

/// The Tap Me app (Tests/Fixtures/gapp/tapme_gapp.py: a real GApplication that D-Bus activation
/// starts when the host opens it, and which records each call it receives) holding the delivery
/// Live Activity, next to a started host: what a click in a bar opens, as the pill of a shell does.
struct TapMeDelivery {
    let fixture: HostFixture
    let record: String
    let app: AppPeer
    let activity: String

    static func start(_ fixture: HostFixture) async throws -> TapMeDelivery {
        let record = try fixture.installTapMe()
        try await fixture.startHost()
        let app = try await AppPeer(fixture, appID: "org.example.TapMe", protocol: "freedesktop", schemes: ["tap-me-widget"])
        return TapMeDelivery(fixture: fixture, record: record, app: app, activity: try await app.startDelivery())
    }

    /// Waits until Tap Me records that it was opened, and checks that it was, once, at the activity's URL.
    func expectOpened(_ what: String, _ output: @autoclosure () -> String) async {
        let opened = { fixture.records(record).filter { $0["call"] as? String == "open" } }
        #expect(await eventually(timeout: 20) { !opened().isEmpty }, "\(what): Tap Me recorded \(fixture.records(record)); \(output())\nhost: \(fixture.log.suffix(3000))")
        #expect(opened().map { $0["uris"] as? [String] ?? [] } == [["delivery-tracker://order/1234"]], "\(what): \(opened())")
    }

    /// Ends the activity at once: the bars show nothing.
    func end() async throws { try await app.end(activity, ["dismissal": .string("immediate")]) }

    func close() { app.close() }
}

/// The top rows of a screen, where the bars under test are, each pixel 0xRRGGBB.
struct ScreenPicture {
    let width: Int, height: Int
    let pixels: [UInt32]

    /// A binary PPM (P6, 8 bits a colour), as grim writes it.
    init(ppm: Data) throws {
        let bytes = [UInt8](ppm)
        var fields: [Int] = [], at = 2
        while fields.count < 3, at < bytes.count {
            while at < bytes.count, bytes[at] == 0x20 || (0x09...0x0d).contains(bytes[at]) { at += 1 }
            var number = 0
            while at < bytes.count, (0x30...0x39).contains(bytes[at]) {
                number = number * 10 + Int(bytes[at] - 0x30)
                at += 1
            }
            fields.append(number)
        }
        at += 1
        guard bytes.starts(with: Array("P6".utf8)), fields.count == 3, fields[2] == 255, bytes.count >= at + fields[0] * fields[1] * 3 else {
            throw PrivateBusError("not a binary PPM picture of 8 bits a colour (\(bytes.prefix(16)))")
        }
        (width, height) = (fields[0], fields[1])
        pixels = (0..<width * height).map { index in
            let rgb = at + index * 3
            return UInt32(bytes[rgb]) << 16 | UInt32(bytes[rgb + 1]) << 8 | UInt32(bytes[rgb + 2])
        }
    }

    /// The top `height` rows of Xvfb's screen.
    init(_ screen: Framebuffer, height: Int) {
        (width, self.height) = (screen.width, min(height, screen.height))
        pixels = (0..<self.height).flatMap { y in (0..<screen.width).map { x in screen.pixel(x: x, y: y) ?? 0 } }
    }

    func pixel(_ x: Int, _ y: Int) -> UInt32 { pixels[y * width + x] }

    /// The bar at the top: the rows down to the first whose left pixel is not the colour of the
    /// top left corner, the bar's background.
    var barHeight: Int { (0..<height).first { pixel(0, $0) != pixel(0, 0) } ?? height }

    /// Where the bar shows text: the runs of columns with a light pixel in the bar's rows (the
    /// bars draw white on black here), runs less than 5 pixels apart joined into one.
    var text: [ClosedRange<Int>] {
        let rows = 0..<barHeight
        var runs: [ClosedRange<Int>] = []
        for x in 0..<width where rows.contains(where: { y in
            let colour = pixel(x, y)
            return (colour >> 16) + (colour >> 8 & 0xff) + (colour & 0xff) > 384
        }) {
            if let last = runs.last, x - last.upperBound < 5 { runs[runs.count - 1] = last.lowerBound...x } else { runs.append(x...x) }
        }
        return runs
    }
}

/// sway, headless (no screen: wlroots' headless backend), as `user` (nil: this
/// account) with a runtime folder and a home of that user's, and the AT-SPI bus
/// of that user on the fixture's bus; what runs in it runs as `user` too, so that
/// AT-SPI (whose peers accept only their own account) reads it. The headless
/// backend has no input devices: a pointer is plugged in (Tests/Fixtures/bars/pointer.py)
/// for sway to move and click, as it does a mouse.
final class SwaySession: @unchecked Sendable {
    /// sway refuses to run as root: as root the tests run it, and what talks to it, as nobody.
    static var user: String? { getuid() == 0 ? "nobody" : nil }
    /// The output's size.
    static let width = 1280, height = 800

    let fixture: HostFixture
    let user: String?
    let runtime: URL
    let home: URL
    let sway: Launched
    let accessibility: Launched
    let pointer: Launched
    let display: String

    private init(
        fixture: HostFixture, user: String?, runtime: URL, home: URL, sway: Launched, accessibility: Launched, pointer: Launched, display: String
    ) {
        (self.fixture, self.user, self.runtime, self.home, self.sway, self.accessibility, self.pointer, self.display) =
            (fixture, user, runtime, home, sway, accessibility, pointer, display)
    }

    /// Starts sway with `configuration` after the output's (a bar block, say).
    static func start(_ fixture: HostFixture, user: String?, configuration: String = "") async throws -> SwaySession {
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
        try "xwayland disable\noutput HEADLESS-1 mode \(width)x\(height)\n\(configuration)".write(to: config, atomically: true, encoding: .utf8)
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
        let pointer = try launch(
            fixture, user: user, runtime: runtime, home: home, "/usr/bin/python3", [try copy(fixture: "bars/pointer.py", into: fixture)],
            ["WAYLAND_DISPLAY": display])
        let accessibility = try launch(fixture, user: user, runtime: runtime, home: home, "/usr/libexec/at-spi-bus-launcher", [], [:])
        let session = SwaySession(
            fixture: fixture, user: user, runtime: runtime, home: home, sway: sway, accessibility: accessibility, pointer: pointer, display: display)
        guard await eventually(timeout: 20, { pointer.printed().hasPrefix("ready") || !pointer.process.isRunning }), pointer.process.isRunning else {
            session.stop()
            throw PrivateBusError("no pointer could be plugged into sway's seat: \(pointer.printed())")
        }
        do { try await session.park() } catch {
            session.stop()
            throw error
        }
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

    /// Runs `executable` as a client of the session's sway until it exits; fails with what it printed when it fails.
    @discardableResult
    private func run(_ executable: String, _ arguments: [String]) async throws -> String {
        let (program, words) = Self.invocation(user: user, runtime: runtime, home: home, executable, arguments, ["WAYLAND_DISPLAY": display])
        let result = try await runCommand(program, words, environment: fixture.environment, timeout: 60)
        guard result.succeeded else { throw PrivateBusError("\(executable) \(arguments.joined(separator: " ")) failed: \(result)") }
        return result.stdout
    }

    /// Copies examples/bars/`file` where the session's user reads it; returns the copy's path.
    func copy(_ file: String) throws -> String { try Self.copy(file, into: fixture) }

    /// Copies examples/bars/`file` where another account reads it; returns the copy's path.
    static func copy(_ file: String, into fixture: HostFixture) throws -> String {
        let copy = fixture.root.appendingPathComponent("bars/\(file)")
        try FileManager.default.createDirectory(at: copy.deletingLastPathComponent(), withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: BarSnippets.folder.appendingPathComponent(file), to: copy)
        return copy.path
    }

    /// Copies Tests/Fixtures/`script` where another account reads it, once; returns the copy's path.
    static func copy(fixture script: String, into fixture: HostFixture) throws -> String {
        let copy = fixture.root.appendingPathComponent((script as NSString).lastPathComponent)
        if !FileManager.default.fileExists(atPath: copy.path) {
            try FileManager.default.copyItem(at: repositoryRoot.appendingPathComponent("Tests/Fixtures/\(script)"), to: copy)
        }
        return copy.path
    }

    /// Runs Tests/Fixtures/board/drive.py in Waybar's accessible tree, as the session's user;
    /// fails the test with what it printed when it fails.
    @discardableResult
    func drive(_ arguments: [String]) async throws -> String {
        let script = try Self.copy(fixture: "board/drive.py", into: fixture)
        let (program, words) = Self.invocation(
            user: user, runtime: runtime, home: home, "/usr/bin/python3", [script, "--app", "waybar"] + arguments, [:])
        let result = try await runCommand(program, words, environment: fixture.environment, timeout: 60)
        guard result.succeeded else {
            Issue.record("drive.py \(arguments.joined(separator: " ")) failed: \(result)")
            throw PrivateBusError("drive.py failed")
        }
        return result.stdout
    }

    /// Clicks at `x`, `y` of the output with the seat's pointer, by sway's own commands (sway(5):
    /// seat cursor), sent on its IPC socket: sway hands the press and the release to the client
    /// under the pointer, as it does a mouse's. Then the pointer goes back to the bottom right
    /// corner, away from the bars: sway draws it into the pictures the tests look at.
    func click(x: Int, y: Int) async throws {
        try await pointer(["set \(x) \(y)", "press button1", "release button1"])
        try await park()
    }

    /// Moves the pointer to the bottom right corner, where it covers nothing the tests look at.
    func park() async throws { try await pointer(["set \(Self.width - 1) \(Self.height - 1)"]) }

    /// `seat seat0 cursor` with each of `commands`, in order.
    private func pointer(_ commands: [String]) async throws {
        let name = try FileManager.default.contentsOfDirectory(atPath: runtime.path).first { $0.hasPrefix("sway-ipc.") && $0.hasSuffix(".sock") }
        guard let name else { throw PrivateBusError("sway has no IPC socket in \(runtime.path)") }
        for command in commands {
            let reply = try await run("/usr/bin/swaymsg", ["-s", runtime.appendingPathComponent(name).path, "seat seat0 cursor \(command)"])
            guard !reply.contains(#""success": false"#) else { throw PrivateBusError("sway refused seat seat0 cursor \(command): \(reply)") }
        }
    }

    /// The output's top rows, where the bars are, as grim takes them (wlroots' screencopy).
    func picture() async throws -> ScreenPicture {
        let file = home.appendingPathComponent("top.ppm")
        try await run("/usr/bin/grim", ["-t", "ppm", "-g", "0,0 \(Self.width)x80", file.path])
        return try ScreenPicture(ppm: Data(contentsOf: file))
    }

    func stop() {
        endProcess(pointer.process)
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
