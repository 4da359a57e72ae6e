import DBus
import Foundation
import PrivateBus
import Testing
import VirtualDesktop
import WidgetHostCore

/// widget-board (renderers/gtk) used as a person uses it: on a virtual X
/// display (Xvfb), found through the AT-SPI accessibility tree and clicked
/// with real pointer events (xdotool), against the host on a private bus and
/// the real GApplication fixture, started by D-Bus activation. The assertions
/// are on what the app received.
@Suite("widget-board", .serialized)
struct BoardTests {
    @Test("A click on a link opens its URL in the app, with an activation token minted for the click")
    func linkClick() async throws {
        let board = try await BoardSession.start()
        defer { board.stop() }
        try await board.placeTapMe()
        try await board.drive("click", "Show Red View", "--role", "link")
        let open = try await board.waitForRecord { $0["call"] as? String == "open" }
        #expect(open["uris"] as? [String] == ["tap-me-widget://show-red"])
        let platform = open["platform_data"] as? [String: String] ?? [:]
        for key in ["activation-token", "desktop-startup-id"] {
            let token = platform[key] ?? ""
            #expect(token.count > 2 && token != "''", "\(key) must carry the token minted for the click: \(platform)")
        }
    }

    @Test("A click on a widget's text, outside any link, opens the widget URL")
    func widgetURLClick() async throws {
        let board = try await BoardSession.start()
        defer { board.stop() }
        try await board.placeTapMe()
        try await board.drive("click", "Tap for blue", "--role", "label")
        let open = try await board.waitForRecord { $0["call"] as? String == "open" }
        #expect(open["uris"] as? [String] == ["tap-me-widget://show-blue"])
    }

    @Test("A button performs its action without raising the app; Enter on a focused toggle reports it too")
    func buttonAction() async throws {
        let board = try await BoardSession.start()
        defer { board.stop() }
        try await board.place(
            #"{"type":"vstack","widgetURL":"tap-me-widget://home","children":[{"type":"button","id":"refresh","action":"refresh","label":"Refresh now","children":[{"type":"text","text":"Refresh"}]}]}"#)
        try await board.drive("click", "Refresh now", "--role", "push button")
        let action = try await board.waitForRecord { $0["call"] as? String == "action" }
        #expect(action["action"] as? String == "refresh")
        #expect(!board.records().contains { $0["call"] as? String == "activate" }, "a button must not raise the app")
        #expect(!board.records().contains { $0["call"] as? String == "open" }, "the button's tap must not fall through to the widget URL")

        try await board.place(
            #"{"type":"hstack","children":[{"type":"toggle","id":"light","action":"toggle-light","isOn":false,"label":"Light"}]}"#)
        try await board.drive("focus", "Light", "--role", "push button")
        try await board.drive("key", "Return")
        let toggled = try await board.waitForRecord { $0["action"] as? String == "toggle-light" }
        #expect(toggleDelivery(toggled) == "parameter none, is on true", "the toggle's new state beside no parameter: \(toggled)")
    }

    @Test("A SetContent is drawn within a second, and each family has its size")
    func redrawAndSizes() async throws {
        let board = try await BoardSession.start()
        defer { board.stop() }
        let small = try await board.place(#"{"type":"text","id":"t","text":"Before"}"#, family: "systemSmall")
        _ = try await board.place(#"{"type":"text","text":"Medium one"}"#, family: "systemMedium")
        _ = try await board.place(#"{"type":"text","text":"Rectangular one"}"#, family: "accessoryRectangular")
        try await board.drive("find", "Before", "--role", "label")
        try await board.app.setContent(small, #"{"type":"text","id":"t","text":"After"}"#)
        try await board.drive("find", "After", "--role", "label", "--timeout", "1")
        for (name, size) in [("After", (170, 170)), ("Medium one", (364, 170)), ("Rectangular one", (172, 76))] {
            let tile = try await board.element(name, role: "push button")
            #expect(tile.width == size.0 && tile.height == size.1, "\(name): \(tile)")
        }
    }

    @Test("The board follows the host: a widget removed goes, and after a host restart the widgets come back")
    func mirrorsHost() async throws {
        let board = try await BoardSession.start()
        defer { board.stop() }
        let gone = try await board.place(#"{"type":"text","text":"Going"}"#)
        let staying = try await board.place(#"{"type":"text","text":"Staying"}"#)
        let third = try await board.place(#"{"type":"text","text":"Third"}"#)
        try await board.drive("find", "Going", "--role", "label")
        try await board.drive("find", "Third", "--role", "label")
        try await board.remove(gone)
        try await board.drive("gone", "Going", "--timeout", "2")
        await board.fixture.stopHost()
        try await board.drive("gone", "Staying", "--timeout", "5")
        try await board.fixture.startHost()
        try await board.drive("find", "Staying", "--role", "label", "--timeout", "5")
        // Where each widget sits outlives the host's restart; only the removed one is forgotten.
        let ids = [staying, third].map { String($0.split(separator: "/").last ?? "") }
        #expect(board.layoutOrder() == ids, "order: \(board.layoutOrder())")
    }

    @Test("The gallery adds a configured widget with the app's dynamic option; edit mode configures and removes it")
    func gallery() async throws {
        let board = try await BoardSession.start(rangers: ["EMOJI_RANGERS_STEP": "600"])
        defer { board.stop() }
        try await board.drive("click", "Add Widget", "--role", "push button")
        try await board.drive("click", "Add Ranger Detail, Small", "--role", "push button")
        // The choices come from the app's ProvideOptions, through GetConfigurationOptions.
        try await board.drive("click", "🦄 Egghead", "--role", "radio button")
        try await board.drive("click", "Add to Board", "--role", "push button")
        let placed = try await board.rangersWidget { $0["hero"] == .string("egghead") }
        #expect(placed.family == "systemSmall")
        try await board.drive("find", "Egghead, 40% health", "--role", "push button")
        #expect(board.fixture.records(board.rangersRecord).contains {
            $0["call"] as? String == "timeline" && (($0["configuration"] as? [String: Any])?["hero"] as? String) == "egghead"
        }, "the app was asked for the configured hero's timeline: \(board.fixture.records(board.rangersRecord))")

        try await board.drive("click", "Edit Widgets", "--role", "push button")
        try await board.drive("click", "Edit Egghead, 40% health", "--role", "push button")
        try await board.drive("click", "🐳 Spouty", "--role", "radio button")
        try await board.drive("click", "Save", "--role", "push button")
        _ = try await board.rangersWidget { $0["hero"] == .string("spouty") }
        try await board.drive("find", "Spouty, 40% health", "--role", "push button")

        try await board.drive("click", "Remove Spouty, 40% health", "--role", "push button")
        try await board.drive("gone", "Spouty, 40% health", "--timeout", "3")
        let left = try await board.fixture.busctl(
            ["call", "org.widgethost.Host1", "/org/widgethost/Host1", "org.widgethost.Host1.Widgets", "CurrentConfigurations", "s",
             "org.example.EmojiRangers"])
        #expect(left.stdout.hasPrefix("a(osssa{sv}) 0"), "removed from the host, not just the board: \(left.stdout)")
    }

    @Test("In edit mode the keyboard rearranges and removes widgets and the board remembers where each sits; taps are off")
    func rearrange() async throws {
        let board = try await BoardSession.start()
        defer { board.stop() }
        let ids = try await board.placeTexts(["First", "Second", "Third"])
        #expect(board.layoutOrder() == ids)
        try await board.drive("click", "Edit Widgets", "--role", "push button")
        try await board.drive("focus", "First", "--role", "push button")
        try await board.drive("key", "ctrl+Right")
        _ = await eventually { board.layoutOrder() == [ids[1], ids[0], ids[2]] }
        #expect(board.layoutOrder() == [ids[1], ids[0], ids[2]], "Ctrl+Right moves the focused widget one place on")
        let first = try await board.element("First", role: "push button"), second = try await board.element("Second", role: "push button")
        #expect(second.x < first.x, "drawn in the new order: \(second) then \(first)")
        try await board.drive("click", "Third", "--role", "push button")
        try await Task.sleep(for: .milliseconds(500))
        #expect(!board.records().contains { $0["call"] as? String == "open" }, "a widget takes no taps in edit mode")
        // Delete removes the focused widget, from the host and from the order.
        try await board.drive("focus", "Second", "--role", "push button")
        try await board.drive("key", "Delete")
        try await board.drive("gone", "Second", "--timeout", "3")
        #expect(await eventually(timeout: 3) { board.layoutOrder() == [ids[0], ids[2]] }, "order: \(board.layoutOrder())")
    }

    @Test("The order an older board kept in board.json moves into GSettings once, and the board follows the settings as they change")
    func layoutSettings() async throws {
        let board = try await BoardSession.start()
        defer { board.stop() }
        let ids = try await board.placeTexts(["First", "Second", "Third"])
        let kept = [ids[2], ids[0], ids[1]]
        try await board.relaunch(theme: board.theme) {
            // The settings as an older board left them: none, and its file.
            try? FileManager.default.removeItem(at: board.fixture.root.appendingPathComponent("config/glib-2.0/settings/keyfile"))
            try FileManager.default.createDirectory(at: board.legacyLayoutFile.deletingLastPathComponent(), withIntermediateDirectories: true)
            try JSONSerialization.data(withJSONObject: ["order": kept]).write(to: board.legacyLayoutFile)
        }
        try await board.drive("find", "Second", "--role", "push button")
        #expect(board.layoutOrder() == kept, "order: \(board.layoutOrder())")
        #expect(try await board.drawnInOrder(["Third", "First", "Second"]), "drawn in board.json's order, left to right")
        #expect(!FileManager.default.fileExists(atPath: board.legacyLayoutFile.path), "board.json is read once, then removed")

        // Another program changing the order (here gsettings, through the same keyfile) rearranges the board.
        let set = try await runCommand(
            "/usr/bin/gsettings", ["set", "org.widgethost.Board", "order", "['\(ids[1])', '\(ids[2])', '\(ids[0])']"],
            environment: board.fixture.environment.merging(board.environment) { _, new in new },
            adding: ["GSETTINGS_SCHEMA_DIR": repositoryRoot.appendingPathComponent("renderers/gtk/schemas").path])
        #expect(set.succeeded, "\(set)")
        let followed = try await eventually(timeout: 3) { try await board.drawnInOrder(["Second", "Third", "First"]) }
        #expect(followed, "drawn in the order gsettings set")
    }

    @Test("A board whose settings cannot be stored still draws its widgets in order, and tries each change once")
    func unstorableSettings() async throws {
        let board = try await BoardSession.start(settings: "dconf")
        defer { board.stop() }
        let ids = try await board.placeTexts(["First", "Second", "Third"])
        #expect(try await board.drawnInOrder(["First", "Second", "Third"]), "drawn in the order they were placed")
        // dconf puts the key back when a write fails; the board must not write it again in answer.
        try await Task.sleep(for: .seconds(1))
        let failed = board.rendererOutput.components(separatedBy: "failed to commit changes to dconf").count - 1
        #expect((1...ids.count).contains(failed), "one failed write for each widget placed at most, not again and again: \(failed)")
    }

    @Test("A tap the app answers with an error shows the host's message on the widget")
    func errorShown() async throws {
        let session = try await BoardSession.start()
        defer { session.stop() }
        try await session.expectErrorShownOnWidget()
    }

    @Test("A Live Activity: its presentations drawn from its state, redrawn on a state-only Update, and tapped as shown")
    func liveActivity() async throws {
        let board = try await BoardSession.start()
        defer { board.stop() }
        let activity = try await board.startDelivery(eta: 10)
        // compactTrailing binds state.eta_minutes with the format "{} min".
        try await board.drive("click", "10 min", "--role", "label")
        let compact = try await board.waitForRecord { $0["call"] as? String == "open" }
        #expect(compact["uris"] as? [String] == ["delivery-tracker://order/1234"], "a compact presentation opens the activity's URL")
        let token = (compact["platform_data"] as? [String: String])?["activation-token"] ?? ""
        #expect(token.count > 2, "the tap carries the token minted for the click: \(compact)")

        // An Update that changes only the state redraws every bound text within a second.
        _ = try await board.app.connection.call(
            destination: "org.widgethost.Host1", path: activity, interface: "org.widgethost.Host1.LiveActivity", member: "Update",
            [.string(""), .vardict(["state": .vardict(["eta_minutes": .int64(7)])])])
        try await board.drive("find", "7 min", "--role", "label", "--timeout", "1")
        try await board.drive("gone", "10 min", "--timeout", "1")

        // Hovering the island shows the expanded presentation; its links count there.
        // The presentation slides open: a click while it still moves can land beside the link, so a
        // person would click again once it stands still; so does this, up to three times.
        func openedMap() -> Bool { board.records().contains { ($0["uris"] as? [String])?.first?.hasSuffix("/map") == true } }
        for _ in 1...3 where !openedMap() {
            try await board.drive("hover", "7 min", "--role", "label")
            try await board.drive("click", "Track on map", "--role", "link")
            _ = await eventually(timeout: 3) { openedMap() }
        }
        let map = try await board.waitForRecord { ($0["uris"] as? [String])?.first?.hasSuffix("/map") == true }
        #expect(map["uris"] as? [String] == ["delivery-tracker://order/1234/map"])

        // The lock-screen presentation, in the panel the Lock Screen button opens, binds the order and the ETA.
        // The panel slides open too: the same up to three clicks.
        try await board.drive("click", "Lock Screen", "--role", "push button")
        func openedStatus() -> Bool { board.records().contains { ($0["uris"] as? [String])?.first?.hasSuffix("/status") == true } }
        for _ in 1...3 where !openedStatus() {
            try await board.drive("click", "Order 1234", "--role", "label")
            _ = await eventually(timeout: 3) { openedStatus() }
        }
        let lock = try await board.waitForRecord { ($0["uris"] as? [String])?.first?.hasSuffix("/status") == true }
        #expect(lock["uris"] as? [String] == ["delivery-tracker://order/1234/status"], "the lock screen tree's own widgetURL")

        // A second activity as relevant as the first, started a second later, ranks after it, as
        // the host's LiveActivities.Order and the other renderers rank them: the pill keeps the first.
        try await Task.sleep(for: .milliseconds(1100))
        _ = try await board.startDelivery(eta: 20, options: ["attributes": .vardict(["order": .string("5678")])])
        try await board.drive("find", "Order 5678", "--role", "label")  // drawn in the open Lock Screen panel
        try await board.drive("find", "7 min", "--role", "label", "--timeout", "1")
        try await board.drive("gone", "20 min", "--timeout", "1")
    }

    @Test("A timeline entry is drawn within a second of its date")
    func timelineEntry() async throws {
        let board = try await BoardSession.start(rangers: ["EMOJI_RANGERS_STEP": "2", "EMOJI_RANGERS_START_HEALTH": "0"])
        defer { board.stop() }
        let widget = try await board.app.connection.addWidget(
            "org.example.EmojiRangers", "EmojiRangerWidget", "systemSmall", ["hero": .string("spook")])
        // The host shows each entry at its date; the board redraws on the PropertiesChanged that follows.
        var next: (date: Int64, label: String)?
        _ = try await eventually {
            let reply = try await board.app.connection.call(
                destination: "org.widgethost.Host1", path: widget, interface: "org.widgethost.Host1.Widget", member: "DescribeTimeline", [])
            let timeline = reply.first?.stringKeyedEntries?.mapValues(\.unwrapped) ?? [:]
            guard let due = timeline["next_entry"]?.integerValue, due > 0 else { return false }
            for entry in timeline["entries"]?.arrayElements ?? [] {
                guard case .structure(let fields) = entry, fields.first?.integerValue == due,
                    let content = fields.last?.stringValue, let percent = content.firstMatch(of: /"health-label","text":"(\d+%)"/)
                else { continue }
                next = (due, String(percent.1))
            }
            return next != nil
        }
        let (due, label) = try #require(next, "the widget has a timeline with an entry to come")
        let shown = try await board.element(label, role: "label", timeout: 6)
        let lateness = shown.seen * 1000 - Double(due)
        #expect(lateness < 1000, "the entry due at \(due) ms was drawn \(Int(lateness)) ms after its date")
        #expect(lateness > -100, "the entry was drawn \(Int(-lateness)) ms before its date")
    }

    @Test("Screenshots of the board with the examples, in both appearances: neither is blank")
    func screenshots() async throws {
        for theme in ["light", "dark"] {
            let board = try await BoardSession.start(rangers: ["EMOJI_RANGERS_STEP": "600", "EMOJI_RANGERS_START_HEALTH": "60"], theme: theme)
            defer { board.stop() }
            try await board.placeExamples()
            for (name, role) in [("Tap for yellow", "label"), ("Spouty, 60% health", "push button"), ("Ranger Leaderboard", "push button"), ("10 min", "label")] {
                try await board.drive("find", name, "--role", role)
            }
            try await board.drive("park")
            let window = try await board.window()
            let colours = try await board.screenshot("board-\(theme).png", of: window)
            #expect(colours >= 12, "a board with the examples shows more than \(colours) colours (\(theme))")
        }
    }

    @Test("A picture of each element of the vocabulary, from the trees docs/vocabulary.md shows: none is blank")
    func vocabularyPictures() async throws {
        let samples = try Self.vocabularySamples()
        #expect(Set(samples.map(\.type)) == Set(Vocabulary.types.keys), "docs/vocabulary.md has a picture of each type")
        let board = try await BoardSession.start()
        defer { board.stop() }
        for sample in samples {
            let lint = try ContentLint.lint(json: sample.tree, family: .systemSmall, policy: .current)
            #expect(lint.isEmpty, "the \(sample.type) sample: \(lint)")
            try await board.place(sample.tree)
        }
        try await board.drive("park")
        for sample in samples {
            let tile = try await board.element(sample.type, role: "push button")
            #expect(tile.width == 170 && tile.height == 170, "\(tile)")
            let colours = try await board.screenshot("vocabulary/\(sample.type).png", of: tile)
            #expect(colours >= 2, "the \(sample.type) picture is blank")
        }
    }

    /// Each "### type" of docs/vocabulary.md's Pictures with the tree in its json block.
    static func vocabularySamples() throws -> [(type: String, tree: String)] {
        let text = try String(contentsOf: repositoryRoot.appendingPathComponent("docs/vocabulary.md"), encoding: .utf8)
        guard let pictures = text.range(of: "\n## Pictures\n") else { throw PrivateBusError("docs/vocabulary.md has no Pictures") }
        var samples: [(String, String)] = []
        var type: String?
        var inJSON = false
        for line in text[pictures.upperBound...].split(separator: "\n").map(String.init) {
            if line.hasPrefix("### ") { type = String(line.dropFirst(4)) } else if line == "```json" { inJSON = true } else if line == "```" {
                inJSON = false
            } else if inJSON, let current = type {
                samples.append((current, line))
                #expect(text.contains("![\(current)](images/vocabulary/\(current).png)"), "the \(current) picture is shown")
            }
        }
        return samples
    }
}

/// A host, the Tap Me GApplication installed as a DBusActivatable app, the
/// AT-SPI bus, a virtual display and widget-board on it.
final class BoardSession: ScreenSession, @unchecked Sendable {
    let fixture: HostFixture
    let display: VirtualDisplay
    let record: String
    let app: AppPeer
    var rangersRecord = ""
    private var board: Launched
    /// The appearance the board was started in: light or dark.
    private(set) var theme: String
    let environment: [String: String]
    var rendererOutput: String { "board: \(board.printed())" }

    private init(
        fixture: HostFixture, display: VirtualDisplay, record: String, app: AppPeer, board: Launched, theme: String, environment: [String: String]
    ) {
        self.fixture = fixture
        self.display = display
        self.record = record
        self.app = app
        self.board = board
        self.theme = theme
        self.environment = environment
    }

    /// With `rangers`, Emoji Rangers is installed too (with those settings),
    /// started, and has published its bundle; its record file is `rangersRecord`.
    /// `settings` is the GSettings backend the board stores its order with: the keyfile in the
    /// test's folder, or `dconf`, which cannot store anything on the test's bus (no dconf service).
    static func start(rangers: [String: String]? = nil, theme: String = "light", settings: String = "keyfile") async throws -> BoardSession {
        let fixture = try await HostFixture.make()
        do {
            let record = try fixture.installTapMe(environment: ["WIDGETHOST_TEST_ACTIONS": "refresh,toggle-light"])
            let rangersRecord = try rangers.map { try fixture.installEmojiRangers($0) }
            let (runtime, dataDirs) = try fixture.installAccessibilityBus()
            try await fixture.startHost()
            let display = try VirtualDisplay(directory: fixture.root)
            let environment = [
                "DISPLAY": display.display, "GDK_BACKEND": "x11", "GSK_RENDERER": "cairo", "GTK_A11Y": "atspi",
                "XDG_DATA_DIRS": dataDirs, "XDG_RUNTIME_DIR": runtime.path, "GSETTINGS_BACKEND": settings,
            ]
            let board = try await launchBoard(fixture, on: display, environment: environment, theme: theme)
            let app = try await AppPeer(fixture, appID: "org.example.TapMe", protocol: "freedesktop", schemes: ["tap-me-widget"])
            try await app.registerWidgets(try exampleFile("tap-me/bundle.json"))
            if let rangersRecord { try await fixture.launchEmojiRangers(app.connection, record: rangersRecord) }
            let session = BoardSession(
                fixture: fixture, display: display, record: record, app: app, board: board, theme: theme, environment: environment)
            session.rangersRecord = rangersRecord ?? ""
            return session
        } catch {
            fixture.stop()
            throw error
        }
    }

    /// Starts widget-board and waits until its window is on the screen. A
    /// board that exits before its window shows (it found no display to open)
    /// is started again on the same display, up to 3 times; when none shows,
    /// the error has what each printed and what Xvfb logged.
    private static func launchBoard(
        _ fixture: HostFixture, on display: VirtualDisplay, environment: [String: String], theme: String
    ) async throws -> Launched {
        var problems: [String] = []
        for attempt in 1...3 {
            let board = try fixture.launch(
                "/usr/bin/python3", [repositoryRoot.appendingPathComponent("renderers/gtk/widget-board").path, "--theme", theme, "--size", "1240x860"],
                environment: environment)
            for _ in 0..<300 where board.process.isRunning {
                let search = try await runCommand(
                    "/usr/bin/xdotool", ["search", "--name", "^Widget Board$"], environment: fixture.environment.merging(environment) { _, new in new })
                if search.succeeded { return board }
                try await Task.sleep(for: .milliseconds(50))
            }
            board.stop()
            board.process.waitUntilExit()
            problems.append("attempt \(attempt): \(board.printed())")
        }
        throw PrivateBusError("widget-board showed no window on \(display.display):\n\(problems.joined(separator: "\n"))\nXvfb: \(display.log)")
    }

    /// Ends the board and starts it again in `theme` on the same display, next to the same host;
    /// `meanwhile` runs while no board runs.
    func relaunch(theme: String, meanwhile: () throws -> Void = {}) async throws {
        board.stop()
        await waitForExit(board.process)
        try meanwhile()
        board = try await Self.launchBoard(fixture, on: display, environment: environment, theme: theme)
        self.theme = theme
    }

    /// The board's window on the screen.
    func window() async throws -> ScreenElement {
        try JSONDecoder().decode(ScreenElement.self, from: Data(try await drive("window").utf8))
    }

    /// Places a widget showing each of `names` (a text over a widget URL) and waits until the
    /// last is drawn; returns their ids.
    func placeTexts(_ names: [String]) async throws -> [String] {
        var ids: [String] = []
        for name in names {
            let path = try await place(#"{"type":"text","widgetURL":"tap-me-widget://x","text":"\#(name)"}"#)
            ids.append(String(path.split(separator: "/").last ?? ""))
        }
        if let last = names.last { try await drive("find", last, "--role", "push button") }
        return ids
    }

    /// Whether the widgets named `names` are drawn left to right in that order (in one row).
    func drawnInOrder(_ names: [String]) async throws -> Bool {
        var x: [Int] = []
        for name in names { x.append(try await element(name, role: "push button").x) }
        return x == x.sorted() && Set(x).count == names.count
    }

    /// The widget ids in the order the board keeps in GSettings: the key `order` of
    /// org.widgethost.Board, as the keyfile backend wrote it (`['w1', 'w2']`).
    func layoutOrder() -> [String] {
        (fixture.keyfileSettings("org/widgethost/Board")["order"] ?? "").matches(of: /'([^']*)'/).map { String($0.1) }
    }

    /// Where an older board kept the order, in $XDG_CONFIG_HOME.
    var legacyLayoutFile: URL {
        URL(fileURLWithPath: fixture.environment["XDG_CONFIG_HOME"] ?? "").appendingPathComponent("widget-board/board.json")
    }

    func stop() {
        app.close()
        board.stop()
        display.stop()
        fixture.stop()
    }
}
