import DBus
import Foundation
import PrivateBus
import Testing
import VirtualDesktop

/// What drive.py prints of an element on the screen.
struct ScreenElement: Decodable, CustomStringConvertible {
    let name: String, role: String, x: Int, y: Int, width: Int, height: Int
    /// When drive.py first saw it showing (Unix seconds).
    let seen: Double
    /// Its AT-SPI states (`checked`, `pressed`, `focused` …); nil when not reported.
    var states: [String]? = nil
    var description: String { "\(role) '\(name)' at \(x),\(y) size \(width)×\(height)" }
}

/// A renderer next to the host and the Tap Me app, used as a person uses it,
/// its elements found through AT-SPI: what the tests of widget-board and of the
/// GNOME Shell extension share, on an X display or on Wayland.
protocol RendererSession: AnyObject {
    var fixture: HostFixture { get }
    var app: AppPeer { get }
    /// The file the Tap Me app records its calls in.
    var record: String { get }
    /// What the renderer's processes and drive.py run with besides the fixture's environment.
    var environment: [String: String] { get }
    /// drive.py's options before its command (which application to look in).
    var driveOptions: [String] { get }
    /// What the renderer printed, for the message of a failure.
    var rendererOutput: String { get }
}

/// A renderer on a virtual X display (Xvfb), whose framebuffer the tests read.
protocol ScreenSession: RendererSession {
    var display: VirtualDisplay { get }
}

extension RendererSession {
    var driveOptions: [String] { [] }

    /// Places a Tap Me widget in `family` and gives it `content`; returns its path.
    @discardableResult
    func place(_ content: String, family: String = "systemSmall") async throws -> String {
        let path = try await app.connection.addWidget("org.example.TapMe", "TapMeWidget", family)
        try await app.setContent(path, content)
        return path
    }

    /// A tap the app answers with an error is not dropped silently: the renderer shows the host's
    /// ActivationFailed message on the widget. Tap Me answers an action it does not have with
    /// InvalidArgs (Tests/Fixtures/gapp/tapme_gapp.py), so a button naming one makes the error.
    func expectErrorShownOnWidget() async throws {
        try await place(#"{"type":"button","id":"nope","action":"no-such-action","label":"Nope","children":[{"type":"text","text":"Nope"}]}"#)
        try await drive("click", "Nope", "--role", "push button")
        try await drive("find", "org.example.TapMe answered ActivateAction with org.freedesktop.DBus.Error.InvalidArgs", "--prefix", "--role", "label")
        #expect(!records().contains { $0["action"] as? String == "no-such-action" }, "the app recorded no such action: \(records())")
    }

    /// Removes a placed widget, as the app (or a gallery) does.
    func remove(_ widget: String) async throws {
        _ = try await app.connection.call(
            destination: "org.widgethost.Host1", path: widget, interface: "org.widgethost.Host1.Widget", member: "Remove", [])
    }

    /// The Tap Me example's five widgets.
    func placeTapMe() async throws {
        for colour in ["red", "green", "blue", "yellow"] {
            try await place(try exampleFile("tap-me/\(colour).json"))
        }
        try await place(try exampleFile("tap-me/show-red-link.json"), family: "systemMedium")
    }

    /// What the pictures of the examples show: Tap Me's five widgets, Emoji Rangers' hero (Spouty)
    /// and leaderboard (Emoji Rangers must run), and the delivery Live Activity, the most relevant.
    func placeExamples() async throws {
        try await placeTapMe()
        for (kind, family, configuration) in [
            ("EmojiRangerWidget", "systemSmall", ["hero": DBusValue.string("spouty")]), ("LeaderboardWidget", "systemMedium", [:]),
        ] {
            _ = try await app.connection.addWidget("org.example.EmojiRangers", kind, family, configuration)
        }
        try await startDelivery(eta: 10, options: ["relevance": .double(5)])
    }

    /// Starts the delivery example's Live Activity for order 1234, `eta` minutes away; returns its path.
    @discardableResult
    func startDelivery(eta: Int64 = 10, options: [String: DBusValue] = [:]) async throws -> String {
        try await app.startDelivery(eta: eta, options: options)
    }

    /// Runs drive.py with `arguments` and returns what it did, failed or not.
    func tryDrive(_ arguments: [String]) async throws -> CommandResult {
        try await runCommand(
            "/usr/bin/python3", [repositoryRoot.appendingPathComponent("Tests/Fixtures/board/drive.py").path] + driveOptions + arguments,
            environment: fixture.environment.merging(environment) { _, new in new }, timeout: 60)
    }

    /// Runs drive.py with `arguments`; fails the test with what it printed when it fails.
    @discardableResult
    func drive(_ arguments: String...) async throws -> String {
        let result = try await tryDrive(arguments)
        if !result.succeeded {
            Issue.record("drive.py \(arguments.joined(separator: " ")) failed: \(result)\n\(rendererOutput)")
            throw PrivateBusError("drive.py failed")
        }
        return result.stdout
    }

    func element(_ name: String, role: String, timeout: Double = 10) async throws -> ScreenElement {
        let printed = try await drive("find", name, "--role", role, "--timeout", "\(timeout)")
        return try JSONDecoder().decode(ScreenElement.self, from: Data(printed.utf8))
    }

    func records() -> [[String: Any]] { fixture.records(record) }

    /// The first call the app recorded that `matching` accepts, waiting up to 10 s.
    func waitForRecord(_ matching: @escaping ([String: Any]) -> Bool) async throws -> [String: Any] {
        var found: [String: Any]?
        _ = await eventually(timeout: 10) {
            found = records().first(where: matching)
            return found != nil
        }
        guard let found else {
            Issue.record("the app received nothing matching; it recorded \(records()); \(rendererOutput)")
            throw PrivateBusError("no such call")
        }
        return found
    }

    /// The widgets of `appID` the host has placed, as its CurrentConfigurations lists them.
    func placedWidgets(of appID: String) async throws -> [(path: String, family: String, configuration: [String: DBusValue])] {
        let current = try await app.connection.call(
            destination: "org.widgethost.Host1", path: "/org/widgethost/Host1", interface: "org.widgethost.Host1.Widgets",
            member: "CurrentConfigurations", [.string(appID)])
        return (current.first?.arrayElements ?? []).compactMap { row in
            guard case .structure(let fields) = row, fields.count == 5, case .string(let family) = fields[2],
                let configuration = fields[4].stringKeyedEntries?.mapValues(\.unwrapped)
            else { return nil }
            return (fields[0].stringValue ?? "", family, configuration)
        }
    }

    /// Waits for Emoji Rangers to have one placed widget whose configuration `matching` accepts.
    func rangersWidget(_ matching: @escaping ([String: DBusValue]) -> Bool) async throws -> (path: String, family: String) {
        var found: (String, String)?
        _ = try await eventually(timeout: 10) {
            found = try await placedWidgets(of: "org.example.EmojiRangers").first { matching($0.configuration) }.map { ($0.path, $0.family) }
            return found != nil
        }
        guard let found else {
            Issue.record("Emoji Rangers has no such widget; \(rendererOutput)")
            throw PrivateBusError("no such widget")
        }
        return found
    }

    /// Where a screenshot named `name` goes, its folder made: the screenshots folder is
    /// $WIDGETHOST_SCREENSHOTS (relative to the repository, `docs/images` to renew the
    /// docs' pictures), else .build/screenshots.
    func screenshotFile(_ name: String) throws -> URL {
        let folder = ProcessInfo.processInfo.environment["WIDGETHOST_SCREENSHOTS"].map { repositoryRoot.appendingPathComponent($0) }
            ?? repositoryRoot.appendingPathComponent(".build/screenshots")
        let file = folder.appendingPathComponent(name)
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        return file
    }
}

extension ScreenSession {
    /// What a desktop renderer's tests check first: Tap Me's widgets and one with a button, a
    /// toggle (of role `toggleRole`), a bar and an icon placed; each widget an accessible push
    /// button of its family's size, named as docs/vocabulary.md#accessible-names says; clicks on a
    /// link, on a widget's text, on a button and on a toggle delivered as the app expects, the
    /// link's with the token the renderer minted (`minter`), which `token` accepts; the red widget
    /// and the medium one's tile drawn in their colours. Returns the medium widget.
    func tapTheDesktop(toggleRole: String, minter: String, token: (String) -> Bool) async throws -> ScreenElement {
        try await placeTapMe()
        let buttons = try await place(
            ##"{"type":"vstack","spacing":6,"children":[{"type":"button","id":"refresh","action":"refresh","label":"Refresh now","children":[{"type":"text","text":"Refresh"}]},{"type":"toggle","id":"light","action":"toggle-light","isOn":false,"label":"Light"},{"type":"progress","value":0.6},{"type":"hstack","children":[{"type":"image","icon":"weather-clear-symbolic","size":24},{"type":"text","text":"Sunny","fontSize":18,"fontWeight":"bold","foreground":"#ff9f0a"}]}]}"##)
        #expect(!buttons.isEmpty)

        let red = try await element("Tap for red", role: "push button")
        #expect(red.width == 170 && red.height == 170, "\(red)")
        let medium = try await element("Tap Me Show Red View", role: "push button")
        #expect(medium.width == 364 && medium.height == 170, "\(medium)")

        // A link: its URL, with the token minted for the click.
        try await drive("click", "Show Red View", "--role", "link")
        let open = try await waitForRecord { $0["call"] as? String == "open" }
        #expect(open["uris"] as? [String] == ["tap-me-widget://show-red"])
        let platform = open["platform_data"] as? [String: String] ?? [:]
        for key in ["activation-token", "desktop-startup-id"] {
            #expect(token(platform[key] ?? ""), "\(key) must carry the token \(minter) minted: \(platform)")
        }

        // The text of a colour widget, outside any link: the widget URL.
        try await drive("click", "Tap for blue", "--role", "label")
        _ = try await waitForRecord { ($0["uris"] as? [String]) == ["tap-me-widget://show-blue"] }

        // A button performs its action without raising the app; a toggle sends its new state.
        try await drive("click", "Refresh now", "--role", "push button")
        let action = try await waitForRecord { $0["call"] as? String == "action" }
        #expect(action["action"] as? String == "refresh")
        try await drive("click", "Light", "--role", toggleRole)
        let toggled = try await waitForRecord { $0["action"] as? String == "toggle-light" }
        #expect(toggleDelivery(toggled) == "parameter none, is on true", "the toggle's new state beside no parameter: \(toggled)")
        #expect(!records().contains { $0["call"] as? String == "activate" }, "a button must not raise the app")

        // Drawn where the tree says: the red widget's colour fills it, the medium one's tile is light.
        #expect(display.colour(x: red.x + 20, y: red.y + red.height - 20) == "#ff0000")
        #expect(display.colour(x: medium.x + 20, y: medium.y + 20) == "#ffffff")
        return medium
    }

    /// Saves the screen, or the part of it `element` covers, as `name` under the
    /// screenshots folder (see `screenshotFile`). Returns how many distinct colours a
    /// sample of its pixels has.
    func screenshot(_ name: String, of element: ScreenElement? = nil) async throws -> Int {
        let file = try screenshotFile(name)
        let crop = element.map { [$0.x, $0.y, $0.width, $0.height].map(String.init) } ?? []
        let saved = try await runCommand(
            "/usr/bin/python3", ["-m", "widgetboard.screenshot", display.framebuffer, file.path] + crop,
            adding: ["PYTHONPATH": repositoryRoot.appendingPathComponent("renderers/gtk").path])
        guard saved.succeeded else {
            Issue.record("the screenshot failed: \(saved)")
            throw PrivateBusError("no screenshot")
        }
        return Int(saved.stdout.split(separator: " ").dropLast(2).last ?? "") ?? 0
    }
}

/// An RGB colour of the screen.
struct Pixel: Equatable {
    var r: Int, g: Int, b: Int

    /// From "#rrggbb" or "#rgb"; nil for anything else.
    init?(hex: String) {
        var digits = Array(hex.hasPrefix("#") ? hex.dropFirst() : "")
        if digits.count == 3 { digits = digits.flatMap { [$0, $0] } }
        guard digits.count == 6, let value = Int(String(digits), radix: 16) else { return nil }
        (r, g, b) = (value >> 16 & 0xff, value >> 8 & 0xff, value & 0xff)
    }

    init(r: Int, g: Int, b: Int) { (self.r, self.g, self.b) = (r, g, b) }

    var hex: String { String(format: "#%02x%02x%02x", r, g, b) }

    /// The largest difference of one channel.
    func distance(to other: Pixel) -> Int { max(abs(r - other.r), abs(g - other.g), abs(b - other.b)) }
}

extension Framebuffer {
    /// The screen's colour at x, y as a ``Pixel``; nil outside the screen.
    func colour(x: Int, y: Int) -> Pixel? {
        pixel(x: x, y: y).map { Pixel(r: Int($0 >> 16 & 0xff), g: Int($0 >> 8 & 0xff), b: Int($0 & 0xff)) }
    }
}

extension HostFixture {
    /// A renderer's private runtime folder (the test's own) and its XDG_DATA_DIRS: the test's
    /// desktop entries, then the machine's settings schemas and icons.
    var desktopFolders: (runtime: URL, dataDirs: String) {
        (root.appendingPathComponent("runtime"), dataDir.path + ":/usr/share")
    }

    /// Makes the AT-SPI accessibility bus startable on the fixture's bus, where toolkits and
    /// drive.py find it as on a desktop, in `desktopFolders` (PrivateBus.installAccessibilityBus);
    /// returns them.
    func installAccessibilityBus() throws -> (runtime: URL, dataDirs: String) {
        try bus.installAccessibilityBus(runtime: desktopFolders.runtime, dataDirs: desktopFolders.dataDirs)
        return desktopFolders
    }
}
