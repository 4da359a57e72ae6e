import DBus
import Foundation
import PrivateBus
import Testing
import VirtualDesktop

/// Whether the GNOME Shell tests run: when gnome-shell is installed, and always
/// in CI (CI=true), where a missing gnome-shell fails them instead of skipping.
let gnomeShellTestsRun = FileManager.default.isExecutableFile(atPath: "/usr/bin/gnome-shell")
    || ProcessInfo.processInfo.environment["CI"] == "true"

/// The GNOME Shell extension (renderers/gnome-shell) in a real gnome-shell, as
/// a person uses it: the shell runs on a virtual X display (Xvfb) with the
/// test's session bus and a second private bus as its system bus, the
/// extension installed by its install script and enabled through the GSettings
/// keyfile; what it draws is found through the AT-SPI accessibility tree and
/// clicked with real pointer events (xdotool). The assertions are on what the
/// app received.
@Suite("GNOME Shell extension", .serialized, .timeLimit(.minutes(2)),
    .enabled(if: gnomeShellTestsRun, "gnome-shell is not installed (apt-get install gnome-shell)"))
struct GnomeShellTests {
    @Test("Enabled without error, the placed widgets drawn on the desktop at their sizes, and clicks reach the app with a token the shell minted")
    func desktopTaps() async throws {
        let shell = try await ShellSession.start()
        defer { shell.stop() }
        try await shell.placeTapMe()
        let buttons = try await shell.place(
            ##"{"type":"vstack","spacing":6,"children":[{"type":"button","id":"refresh","action":"refresh","label":"Refresh now","children":[{"type":"text","text":"Refresh"}]},{"type":"toggle","id":"light","action":"toggle-light","isOn":false,"label":"Light"},{"type":"progress","value":0.6},{"type":"hstack","children":[{"type":"image","icon":"weather-clear-symbolic","size":24},{"type":"text","text":"Sunny","fontSize":18,"fontWeight":"bold","foreground":"#ff9f0a"}]}]}"##)
        #expect(!buttons.isEmpty)

        // Each widget is an accessible push button of its family's size, named as docs/vocabulary.md#accessible-names says.
        let red = try await shell.element("Tap for red", role: "push button")
        #expect(red.width == 170 && red.height == 170, "\(red)")
        let medium = try await shell.element("Tap Me Show Red View", role: "push button")
        #expect(medium.width == 364 && medium.height == 170, "\(medium)")

        // A link: its URL, with the token the shell minted for the click.
        try await shell.drive("click", "Show Red View", "--role", "link")
        let open = try await shell.waitForRecord { $0["call"] as? String == "open" }
        #expect(open["uris"] as? [String] == ["tap-me-widget://show-red"])
        let platform = open["platform_data"] as? [String: String] ?? [:]
        for key in ["activation-token", "desktop-startup-id"] {
            // On X11 the shell's launch context gives a startup id of its own making: 'gnome-shell/App/…_TIME…'.
            let token = platform[key] ?? ""
            #expect(token.hasPrefix("'gnome-shell/") && token.contains("_TIME"), "\(key) must carry the token the shell minted: \(platform)")
        }

        // The text of a colour widget, outside any link: the widget URL.
        try await shell.drive("click", "Tap for blue", "--role", "label")
        _ = try await shell.waitForRecord { ($0["uris"] as? [String]) == ["tap-me-widget://show-blue"] }

        // A button performs its action without raising the app; a toggle sends its new state.
        try await shell.drive("click", "Refresh now", "--role", "push button")
        let action = try await shell.waitForRecord { $0["call"] as? String == "action" }
        #expect(action["action"] as? String == "refresh")
        try await shell.drive("click", "Light", "--role", "toggle button")
        let toggled = try await shell.waitForRecord { $0["action"] as? String == "toggle-light" }
        #expect(toggled["parameter"] as? String == "true", "the toggle's new state: \(toggled)")
        #expect(!shell.records().contains { $0["call"] as? String == "activate" }, "a button must not raise the app")

        // Drawn where the tree says: the red widget's colour fills it, the medium one's tile is light.
        #expect(shell.display.colour(x: red.x + 20, y: red.y + red.height - 20) == "#ff0000")
        #expect(shell.display.colour(x: medium.x + 20, y: medium.y + 20) == "#ffffff")
        try await shell.drive("park")
        let colours = try await shell.screenshot("gnome-shell-desktop.png")
        #expect(colours >= 12, "a desktop with the examples shows more than \(colours) colours")

        // The desktop's colour scheme turned dark: every tile is redrawn dark at once.
        try shell.writeSettings(colourScheme: "prefer-dark")
        #expect(await eventually(timeout: 5) { shell.display.colour(x: medium.x + 20, y: medium.y + 20) == "#2c2c2e" },
            "the medium tile is \(shell.display.colour(x: medium.x + 20, y: medium.y + 20) ?? "unreadable") in the dark")
        let dark = try await shell.screenshot("gnome-shell-desktop-dark.png")
        #expect(dark >= 12, "the dark desktop shows more than \(dark) colours")
        try await shell.expectNoExtensionErrors()
    }

    @Test("The desktop follows the host: new content redrawn, a removed widget gone, everything back after a host restart; disabling the extension clears it")
    func followsHost() async throws {
        let shell = try await ShellSession.start()
        defer { shell.stop() }
        let changing = try await shell.place(#"{"type":"text","id":"t","text":"Before"}"#)
        let gone = try await shell.place(#"{"type":"text","text":"Going"}"#)
        _ = try await shell.place(##"{"type":"color","color":"#0a84ff","children":[{"type":"text","text":"Staying","foreground":"white"}]}"##)
        try await shell.drive("find", "Before", "--role", "push button")
        try await shell.app.setContent(changing, #"{"type":"text","id":"t","text":"After"}"#)
        try await shell.drive("find", "After", "--role", "push button", "--timeout", "2")
        try await shell.remove(gone)
        try await shell.drive("gone", "Going", "--timeout", "2")

        await shell.fixture.stopHost()
        try await shell.drive("gone", "Staying", "--timeout", "5")
        try await shell.fixture.startHost()
        try await shell.drive("find", "Staying", "--role", "push button", "--timeout", "5")
        try await shell.drive("find", "After", "--role", "push button", "--timeout", "5")

        // Disabled, the extension takes everything it drew away; enabled again, it draws it all again.
        let disabled = try await shell.shellCall("org.gnome.Shell.Extensions.DisableExtension", [ShellSession.uuid])
        #expect(disabled.stdout.contains("true"), "\(disabled)")
        try await shell.drive("gone", "Staying", "--timeout", "5")
        let enabled = try await shell.shellCall("org.gnome.Shell.Extensions.EnableExtension", [ShellSession.uuid])
        #expect(enabled.stdout.contains("true"), "\(enabled)")
        try await shell.drive("find", "Staying", "--role", "push button", "--timeout", "5")
        try await shell.expectNoExtensionErrors()
    }

    @Test("A Live Activity in the top bar: a pill right of the clock showing its compact presentations, a click opens the app at its URL with a token the shell minted, its expanded presentation in a popup whose link works; it follows Update, a second activity, a host restart, the extension's disabling and End")
    func liveActivityPill() async throws {
        let shell = try await ShellSession.start()
        defer { shell.stop() }
        let activity = try await shell.startDelivery(eta: 10)
        // A push button named by what it shows: compactLeading's label, compactTrailing's bound text.
        let pill = try await shell.element("Delivery 10 min", role: "push button")
        #expect(pill.y < 8 && pill.height <= 40 && pill.x > 640, "in the top bar, right of the clock: \(pill)")
        try await shell.drive("find", "10 min", "--role", "label")
        try await shell.drive("park")
        let bar = ScreenElement(name: "top bar", role: "panel", x: 0, y: 0, width: 1280, height: pill.y + pill.height + 2, seen: 0)
        let colours = try await shell.screenshot("gnome-shell-top-bar.png", of: bar)
        #expect(colours >= 4, "the top bar with the pill shows more than \(colours) colours")

        // A click taps the compact presentation: the activity's URL, with the token the shell minted.
        try await shell.drive("click", "Delivery 10 min", "--role", "push button")
        let open = try await shell.waitForRecord { $0["call"] as? String == "open" }
        #expect(open["uris"] as? [String] == ["delivery-tracker://order/1234"], "a compact presentation opens the activity's URL")
        let token = (open["platform_data"] as? [String: String])?["activation-token"] ?? ""
        #expect(token.hasPrefix("'gnome-shell/") && token.contains("_TIME"), "the token the shell minted: \(open)")
        let source = (open["platform_data"] as? [String: String])?["org.widgethost.source"] ?? ""
        #expect(source.contains("'activity_id': <'\(activity.split(separator: "/").last!)'>")
            && (source.contains("<'compactLeading'>") || source.contains("<'compactTrailing'>")), "a tap on a compact side: \(source)")

        // An Update redraws the pill and renames it.
        try await shell.app.updateActivity(activity, state: ["eta_minutes": .int64(7)])
        try await shell.drive("find", "Delivery 7 min", "--role", "push button", "--timeout", "2")
        try await shell.drive("gone", "Delivery 10 min", "--timeout", "2")

        // A secondary click opens the expanded presentation in a popup; its link opens the link's URL.
        try await shell.drive("click", "Delivery 7 min", "--role", "push button", "--button", "3")
        try await shell.drive("find", "Arriving in 7 min", "--role", "label", "--timeout", "3")
        let courier = try await shell.element("Call courier", role: "link")
        try await shell.drive("park")
        let popup = ScreenElement(name: "popup", role: "menu", x: 0, y: 0, width: 1280, height: min(800, courier.y + courier.height + 40), seen: 0)
        #expect(try await shell.screenshot("gnome-shell-live-activity.png", of: popup) >= 6, "the expanded presentation is drawn")
        try await shell.drive("click", "Track on map", "--role", "link")
        let map = try await shell.waitForRecord { ($0["uris"] as? [String])?.first?.hasSuffix("/map") == true }
        #expect(map["uris"] as? [String] == ["delivery-tracker://order/1234/map"], "a link counts in the expanded presentation")
        let mapData = map["platform_data"] as? [String: String] ?? [:]
        let mapToken = mapData["activation-token"] ?? "", mapSource = mapData["org.widgethost.source"] ?? ""
        #expect(mapToken.hasPrefix("'gnome-shell/"), "\(map)")
        #expect(mapSource.contains("<'expanded'>"), "\(map)")
        try await shell.drive("gone", "Track on map", "--timeout", "3")

        // Two activities: each shows its minimal presentation, the more relevant one nearer the clock.
        let timer = try await shell.app.startActivity(
            "TimerAttributes",
            #"{"widgetURL":"tap-me-widget://timer","lockScreen":{"type":"text","text":"Timer"},"compactLeading":{"type":"text","text":"Timer"},"compactTrailing":{"type":"text","text":"5:00"},"minimal":{"type":"text","text":"5:00"},"expanded":{"type":"text","text":"Timer 5:00"}}"#,
            ["relevance": .double(5)])
        let first = try await shell.element("5:00", role: "push button", timeout: 3)
        let second = try await shell.element("Delivery", role: "push button")
        #expect(first.x < second.x && first.y < 8 && second.y < 8, "both in the top bar, the more relevant first: \(first), \(second)")
        try await shell.drive("gone", "Delivery 7 min", "--timeout", "2")
        try await shell.drive("click", "5:00", "--role", "push button")
        let minimal = try await shell.waitForRecord { ($0["uris"] as? [String]) == ["tap-me-widget://timer"] }
        let minimalSource = (minimal["platform_data"] as? [String: String])?["org.widgethost.source"] ?? ""
        #expect(minimalSource.contains("<'minimal'>"), "\(minimal)")
        try await shell.app.endActivity(timer, dismissal: "immediate")
        try await shell.drive("find", "Delivery 7 min", "--role", "push button", "--timeout", "3")

        // The host gone, the bar is empty; back, the pill is back.
        await shell.fixture.stopHost()
        try await shell.drive("gone", "Delivery 7 min", "--timeout", "5")
        try await shell.fixture.startHost()
        try await shell.drive("find", "Delivery 7 min", "--role", "push button", "--timeout", "5")
        _ = try await shell.app.connection.host(
            "RegisterApp", [.string("org.example.TapMe"), .vardict(["protocol": .string("freedesktop"), "schemes": .strings(["tap-me-widget"])])])

        // Disabled, the extension takes the pill away; enabled again, the pill is back in its place.
        let disabled = try await shell.shellCall("org.gnome.Shell.Extensions.DisableExtension", [ShellSession.uuid])
        #expect(disabled.stdout.contains("true"), "\(disabled)")
        try await shell.drive("gone", "Delivery 7 min", "--timeout", "5")
        let enabled = try await shell.shellCall("org.gnome.Shell.Extensions.EnableExtension", [ShellSession.uuid])
        #expect(enabled.stdout.contains("true"), "\(enabled)")
        let again = try await shell.element("Delivery 7 min", role: "push button", timeout: 5)
        #expect(again.y < 8, "in the top bar again: \(again)")

        // Ended and dismissed at once, the pill goes.
        try await shell.app.endActivity(activity, dismissal: "immediate")
        try await shell.drive("gone", "Delivery 7 min", "--timeout", "3")
        try await shell.expectNoExtensionErrors()
        // Redrawn under the pointer (the Update above), the pill trips no assertion of Clutter's.
        let criticals = shell.shell.printed().split(separator: "\n").filter { $0.contains("Clutter-CRITICAL") }
        #expect(criticals.isEmpty, "\(criticals)")
    }

    @Test("The entry point for GNOME Shell 45 and later loads as an ES module with the shell's modules stubbed, and lib/'s functions compute what they should")
    func modules() async throws {
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("widgethost-gjs-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        // St and Clutter are the shell's own libraries, in its private folders.
        let result = try await runCommand(
            "/usr/bin/gjs",
            ["-m", repositoryRoot.appendingPathComponent("Tests/Fixtures/gnome-shell/modules.js").path,
             repositoryRoot.appendingPathComponent("renderers/gnome-shell").path, work.path],
            adding: ["GI_TYPELIB_PATH": "/usr/lib/x86_64-linux-gnu/mutter-11:/usr/lib/gnome-shell",
                     "LD_LIBRARY_PATH": "/usr/lib/x86_64-linux-gnu/mutter-11:/usr/lib/gnome-shell"])
        #expect(result.succeeded && !result.stdout.contains("FAIL") && result.stdout.contains("ok the 45+ entry exports an Extension"), "\(result)")
    }
}

extension AppPeer {
    /// `LiveActivity.Update` of `activity` with a new content state, its content kept.
    func updateActivity(_ activity: String, state: [String: DBusValue]) async throws {
        _ = try await connection.call(
            destination: "org.widgethost.Host1", path: activity, interface: "org.widgethost.Host1.LiveActivity", member: "Update",
            [.string(""), .vardict(["state": .vardict(state)])])
    }

    /// `LiveActivity.End` of `activity` with the dismissal given.
    func endActivity(_ activity: String, dismissal: String) async throws {
        _ = try await connection.call(
            destination: "org.widgethost.Host1", path: activity, interface: "org.widgethost.Host1.LiveActivity", member: "End",
            [.vardict(["dismissal": .string(dismissal)])])
    }
}

/// renderers/gnome-shell/install, which needs no GNOME Shell when told the version.
@Suite("GNOME Shell extension's install script")
struct GnomeShellInstallTests {
    static let install = repositoryRoot.appendingPathComponent("renderers/gnome-shell/install").path

    @Test("It installs the entry point that fits the version, into DATADIR or else $XDG_DATA_HOME, and refuses a shell too old", arguments: [
        ("43", "shell-43"), ("44.2", "shell-43"), ("45", "shell-45"), ("48.1", "shell-45"),
    ])
    func entryPoints(version: String, entry: String) async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("widgethost-install-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: root) }
        let source = repositoryRoot.appendingPathComponent("renderers/gnome-shell")
        for (arguments, dataHome) in [([root.appendingPathComponent("given").path], "unused"), ([], root.appendingPathComponent("home").path)] {
            let result = try await runCommand(Self.install, ["--shell-version", version] + arguments, adding: ["XDG_DATA_HOME": dataHome])
            #expect(result.succeeded, "\(result)")
            let installed = URL(fileURLWithPath: arguments.first ?? dataHome).appendingPathComponent("gnome-shell/extensions/widgethost@widgethost.org")
            for (file, from) in [("extension.js", "\(entry)/extension.js"), ("metadata.json", "\(entry)/metadata.json"),
                                 ("stylesheet.css", "stylesheet.css"), ("lib/desktop.js", "lib/desktop.js")] {
                let copy = try? Data(contentsOf: installed.appendingPathComponent(file))
                #expect(copy != nil && copy == (try? Data(contentsOf: source.appendingPathComponent(from))), "\(file) is \(from) (GNOME Shell \(version))")
            }
        }
        let old = try await runCommand(Self.install, ["--shell-version", "42", root.appendingPathComponent("old").path])
        #expect(old.status == 1 && old.stderr.contains("43 or later"), "\(old)")
    }
}

/// A host, the Tap Me GApplication installed as a DBusActivatable app, the
/// AT-SPI bus, a virtual display and gnome-shell on it with the extension.
final class ShellSession: ScreenSession, @unchecked Sendable {
    static let uuid = GnomeShell.extensionUUID
    let fixture: HostFixture
    let shell: GnomeShell
    let record: String
    let app: AppPeer
    var display: VirtualDisplay { shell.display }
    var environment: [String: String] { shell.environment }
    var driveOptions: [String] { ["--app", "gnome-shell"] }
    var rendererOutput: String { "the shell's log:\n\(shell.printed().suffix(4000))" }

    private init(fixture: HostFixture, shell: GnomeShell, record: String, app: AppPeer) {
        self.fixture = fixture
        self.shell = shell
        self.record = record
        self.app = app
    }

    static func start() async throws -> ShellSession {
        let fixture = try await HostFixture.make()
        var shell: GnomeShell?
        do {
            let record = try fixture.installTapMe(environment: ["WIDGETHOST_TEST_ACTIONS": "refresh,toggle-light:b"])
            let (runtime, dataDirs) = try fixture.installAccessibilityBus()
            try await fixture.startHost()
            // The extension, installed as a person installs it, and enabled in the keyfile.
            shell = try await GnomeShell.start(
                extension: repositoryRoot.appendingPathComponent("renderers/gnome-shell"), root: fixture.root, session: fixture.environment,
                dataDirs: dataDirs, runtime: runtime)
            let app = try await AppPeer(fixture, appID: "org.example.TapMe", protocol: "freedesktop", schemes: ["tap-me-widget"])
            try await app.registerWidgets(try exampleFile("tap-me/bundle.json"))
            return ShellSession(fixture: fixture, shell: shell!, record: record, app: app)
        } catch {
            shell?.stop()
            fixture.stop()
            throw error
        }
    }

    func writeSettings(colourScheme: String) throws {
        try shell.writeSettings(colourScheme: colourScheme)
    }

    /// `gdbus call` of a method of the shell at /org/gnome/Shell.
    func shellCall(_ method: String, _ arguments: [String] = []) async throws -> CommandResult {
        try await shell.call(method, arguments)
    }

    /// The extension has no errors in the shell (GetExtensionErrors), and the shell's log no JS
    /// error or warning whose text or stack names it.
    func expectNoExtensionErrors() async throws {
        let errors = try await shellCall("org.gnome.Shell.Extensions.GetExtensionErrors", [Self.uuid])
        #expect(errors.succeeded && errors.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "(@as [],)", "\(errors)")
        let info = try await shellCall("org.gnome.Shell.Extensions.GetExtensionInfo", [Self.uuid])
        #expect(info.stdout.contains("'state': <1.0>") && info.stdout.contains("'error': <''>"), "\(info.stdout)")
        let ours = Self.jsProblems(in: shell.printed()).filter { $0.contains(Self.uuid) || $0.contains("renderers/gnome-shell") }
        #expect(ours.isEmpty, "the shell logged JS errors from the extension:\n\(ours.joined(separator: "\n\n"))")
    }

    /// Each JS ERROR or JS WARNING gjs logged, with the lines of its stack that follow it.
    static func jsProblems(in log: String) -> [String] {
        var problems: [String] = []
        var current: [Substring]?
        for line in log.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.contains("JS ERROR") || line.contains("JS WARNING") {
                if let current { problems.append(current.joined(separator: "\n")) }
                current = [line]
            } else if current != nil, !line.isEmpty {
                current?.append(line)
            } else if let block = current {
                problems.append(block.joined(separator: "\n"))
                current = nil
            }
        }
        if let current { problems.append(current.joined(separator: "\n")) }
        return problems
    }

    func stop() {
        app.close()
        shell.stop()
        fixture.stop()
    }
}
