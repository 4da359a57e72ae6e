import DBus
import Foundation
import PrivateBus
import Testing
import VirtualDesktop

/// Whether the KDE Plasma applet's tests run: when plasmoidviewer (plasma-sdk) is
/// installed, and always in CI (CI=true), where a missing one fails them instead of skipping.
let plasmaTestsRun = FileManager.default.isExecutableFile(atPath: "/usr/bin/plasmoidviewer")
    || ProcessInfo.processInfo.environment["CI"] == "true"

/// The KDE Plasma applet (renderers/plasma) in plasmoidviewer, a real Plasma shell
/// container, as a person uses it: on a virtual X display (Xvfb) with the test's
/// session bus, the applet built and installed by its install script; what it draws is
/// found through the AT-SPI accessibility tree (Qt's bridge) and clicked with real
/// pointer events (xdotool). The assertions are on what the app received.
@Suite("KDE Plasma applet", .serialized, .timeLimit(.minutes(4)),
    .enabled(if: plasmaTestsRun, "plasmoidviewer is not installed (apt-get install plasma-sdk plasma-desktop)"))
struct PlasmaTests {
    @Test("Loaded without QML errors, the placed widgets drawn at their family sizes in their trees' colours, and clicks on a widget, its link, button and toggle reach the app with a startup id Plasma minted")
    func desktopTaps() async throws {
        let plasma = try await PlasmaSession.start()
        defer { plasma.stop() }
        // KStartupInfo's startup id: HOST;SECONDS;MICROSECONDS;PID_TIME<the click's X time>. Qt has no
        // toggle-button role: a toggle is a push button whose checked state is isOn.
        _ = try await plasma.tapTheDesktop(toggleRole: "push button", minter: "Plasma") { token in
            token.firstMatch(of: /^'[^;']+;\d+;\d+;\d+_TIME[1-9]\d*'$/) != nil
        }
        try await plasma.drive("park")
        let colours = try await plasma.screenshot("plasma-desktop.png")
        #expect(colours >= 12, "a desktop with the examples shows more than \(colours) colours")

        // Breeze Dark: every tile is drawn dark.
        try await plasma.show(.dark)
        let dark = try await plasma.element("Tap Me Show Red View", role: "push button")
        #expect(await eventually(timeout: 5) { plasma.display.colour(x: dark.x + 20, y: dark.y + 20) == "#2c2c2e" },
            "the medium tile is \(plasma.display.colour(x: dark.x + 20, y: dark.y + 20) ?? "unreadable") in the dark")
        try plasma.expectNoQMLErrors()
    }

    @Test("The applet follows the host: new content redrawn, a removed widget gone, everything gone while the host is away and back after it restarts")
    func followsHost() async throws {
        let plasma = try await PlasmaSession.start()
        defer { plasma.stop() }
        let changing = try await plasma.place(#"{"type":"text","id":"t","text":"Before"}"#)
        let gone = try await plasma.place(#"{"type":"text","text":"Going"}"#)
        _ = try await plasma.place(##"{"type":"color","color":"#0a84ff","children":[{"type":"text","text":"Staying","foreground":"white"}]}"##)
        try await plasma.drive("find", "Before", "--role", "push button")
        try await plasma.app.setContent(changing, #"{"type":"text","id":"t","text":"After"}"#)
        try await plasma.drive("find", "After", "--role", "push button", "--timeout", "2")
        try await plasma.drive("gone", "Before", "--timeout", "2")
        try await plasma.remove(gone)
        try await plasma.drive("gone", "Going", "--timeout", "2")

        await plasma.fixture.stopHost()
        try await plasma.drive("gone", "Staying", "--timeout", "5")
        try await plasma.drive("find", "WidgetHost is not running: its widgets show once it starts", "--role", "label", "--timeout", "5")
        try await plasma.fixture.startHost()
        let staying = try await plasma.element("Staying", role: "push button", timeout: 5)
        #expect(plasma.display.colour(x: staying.x + 20, y: staying.y + 20) == "#0a84ff", "drawn again in its colour")
        try await plasma.drive("find", "After", "--role", "push button", "--timeout", "5")
        try plasma.expectNoQMLErrors()
    }

    @Test("In a panel (horizontal form factor) the applet shows the most relevant Live Activity's compact presentations; a click opens its app at the activity's URL with a startup id; its button opens the popup with the expanded presentation, whose link works, and the widgets; it follows Update and End")
    func panel() async throws {
        let plasma = try await PlasmaSession.start(form: .panel)
        defer { plasma.stop() }
        try await plasma.place(try exampleFile("tap-me/red.json"))
        let activity = try await plasma.startDelivery(eta: 10)
        // A push button named by what it shows: compactLeading's label, compactTrailing's bound text.
        let pill = try await plasma.element("Delivery 10 min", role: "push button")
        try await plasma.drive("find", "10 min", "--role", "label")
        try await plasma.drive("gone", "Tap for red", "--timeout", "0")

        // A click taps the compact presentation: the activity's URL, with the startup id Plasma minted.
        try await plasma.drive("clickat", "\(pill.x + pill.width - 12)", "\(pill.y + pill.height / 2)")
        let open = try await plasma.waitForRecord { $0["call"] as? String == "open" }
        #expect(open["uris"] as? [String] == ["delivery-tracker://order/1234"], "a compact presentation opens the activity's URL")
        let data = open["platform_data"] as? [String: String] ?? [:]
        #expect((data["activation-token"] ?? "").contains("_TIME"), "the startup id Plasma minted: \(open)")
        let source = data["org.widgethost.source"] ?? ""
        #expect(source.contains("'activity_id': <'\(activity.split(separator: "/").last!)'>") && source.contains("<'compactTrailing'>"),
            "a tap on the trailing side: \(source)")

        // An Update redraws the pill and renames it.
        try await plasma.app.updateActivity(activity, state: ["eta_minutes": .int64(7)])
        try await plasma.drive("find", "Delivery 7 min", "--role", "push button", "--timeout", "2")
        try await plasma.drive("gone", "Delivery 10 min", "--timeout", "2")
        try await plasma.drive("park")
        let bar = try await plasma.element("Delivery 7 min", role: "push button")
        #expect(try await plasma.screenshot("plasma-panel.png", of: bar) >= 4, "the pill is drawn")

        // The applet's button opens the popup: the expanded presentation, whose link works, and the widgets.
        try await plasma.drive("click", "Show Widgets", "--role", "push button")
        // Left alone while the popup maps: drive.py's walks of the whole tree, 20 a second, keep
        // plasmoidviewer too busy answering them to show its popup.
        try await Task.sleep(for: .seconds(2))
        try await plasma.drive("find", "Arriving in 7 min", "--role", "label", "--timeout", "10")
        try await plasma.drive("find", "Tap for red", "--role", "push button")
        try await plasma.drive("click", "Track on map", "--role", "link")
        let map = try await plasma.waitForRecord { ($0["uris"] as? [String])?.first?.hasSuffix("/map") == true }
        #expect(map["uris"] as? [String] == ["delivery-tracker://order/1234/map"], "a link counts in the expanded presentation")
        #expect((map["platform_data"] as? [String: String])?["org.widgethost.source"]?.contains("<'expanded'>") == true, "\(map)")

        // Ended and dismissed at once, the pill goes.
        try await plasma.app.endActivity(activity, dismissal: "immediate")
        try await plasma.drive("gone", "Delivery 7 min", "--timeout", "3")
        try plasma.expectNoQMLErrors()
    }

    @Test("The keyboard reaches the widgets and the links in them: Tab gives each the focus, Enter on a widget taps it, Space on a link opens the link's URL")
    func keyboard() async throws {
        let plasma = try await PlasmaSession.start()
        defer { plasma.stop() }
        try await plasma.place(try exampleFile("tap-me/red.json"))
        try await plasma.place(try exampleFile("tap-me/show-red-link.json"), family: "systemMedium")
        try await plasma.drive("find", "Show Red View", "--role", "link")
        // drive.py focus presses Tab until the element has the keyboard's focus, as a person does.
        try await plasma.drive("focus", "Tap for red", "--role", "push button")
        try await plasma.drive("key", "Return")
        _ = try await plasma.waitForRecord { ($0["uris"] as? [String]) == ["tap-me-widget://show-red"] }
        try await plasma.drive("focus", "Show Red View", "--role", "link")
        try await plasma.drive("key", "space")
        _ = await eventually(timeout: 5) { plasma.records().filter { ($0["uris"] as? [String]) == ["tap-me-widget://show-red"] }.count == 2 }
        let links = plasma.records().filter { ($0["uris"] as? [String]) == ["tap-me-widget://show-red"] }
        #expect(links.count == 2, "Space on the link opens its URL: \(plasma.records())")
        let source = (links.last?["platform_data"] as? [String: String])?["org.widgethost.source"] ?? ""
        #expect(source.contains("'via': <'link'>") && source.contains("'element_id': <'show-red'>"), "\(links)")
        try plasma.expectNoQMLErrors()
    }

    @Test("Add Widget… opens the applet's configuration page, the host's gallery: it places a kind of an app in a family, configures it with the app's choices and removes it")
    func gallery() async throws {
        let plasma = try await PlasmaSession.start()
        defer { plasma.stop() }
        let rangers = try plasma.fixture.installEmojiRangers(["EMOJI_RANGERS_STEP": "600"])
        try await plasma.fixture.launchEmojiRangers(plasma.app.connection, record: rangers)
        try await plasma.drive("click", "Add Widget…", "--role", "push button")
        // The kinds come from ListBundles, a button per family.
        try await plasma.drive("click", "Ranger Detail, Small", "--role", "push button", "--timeout", "15")
        let placed = try await plasma.rangersWidget { _ in true }
        #expect(placed.family == "systemSmall")
        try await plasma.drive("find", "Spouty, 40% health", "--role", "push button")

        // Its hero: the app's choices (GetConfigurationOptions); the app is asked for the chosen one's timeline.
        try await plasma.drive("click", "Hero of Ranger Detail, Small", "--role", "combo box")
        try await plasma.drive("click", "🦄 Egghead", "--timeout", "5")
        _ = try await plasma.rangersWidget { $0["hero"] == .string("egghead") }
        try await plasma.drive("find", "Egghead, 40% health", "--role", "push button")
        #expect(plasma.fixture.records(rangers).contains {
            $0["call"] as? String == "timeline" && (($0["configuration"] as? [String: Any])?["hero"] as? String) == "egghead"
        }, "the app was asked for the chosen hero's timeline: \(plasma.fixture.records(rangers))")

        // Remove takes it off the host, and so off the desktop.
        try await plasma.drive("click", "Remove Ranger Detail, Small", "--role", "push button")
        try await plasma.drive("gone", "Egghead, 40% health", "--timeout", "3")
        #expect(try await plasma.placedWidgets(of: "org.example.EmojiRangers").isEmpty, "removed from the host, not just the desktop")
        #expect(!plasma.records().contains { $0["call"] as? String == "open" }, "no click in the gallery is a tap: \(plasma.records())")
        try plasma.expectNoQMLErrors()
    }

    /// What widget-host-bench plasma starts (docs/plasma.md#cost): no AT-SPI bus, so nothing
    /// but the window and the process's memory says the applet is up.
    @Test("Started without accessibility, as the benchmark starts it, plasmoidviewer has loaded the applet when start returns, and the applet draws a widget the app places")
    func withoutAccessibility() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        _ = try fixture.installTapMe()
        try await fixture.startHost()
        let plasma = try await Plasma.start(
            applet: PlasmaSession.source, root: fixture.root, bus: fixture.bus, session: fixture.environment,
            runtime: fixture.desktopFolders.runtime, dataDirs: fixture.desktopFolders.dataDirs, accessibility: false)
        defer { plasma.stop() }
        let maps = try FileHandle(forReadingFrom: URL(fileURLWithPath: "/proc/\(plasma.process.processIdentifier)/maps")).readToEnd() ?? Data()
        #expect(String(decoding: maps, as: UTF8.self).contains("/org/widgethost/plasmoid/libwidgethostplasmoid.so"), "the applet's QML module is loaded")
        #expect(plasma.environment["QT_LINUX_ACCESSIBILITY_ALWAYS_ON"] == nil)

        let app = try await fixture.tapMePeer()
        defer { app.close() }
        #expect(try await app.connection.nameOwner("org.a11y.Bus") == nil, "no accessibility bus was started")
        let widget = try await app.connection.addWidget("org.example.TapMe", "TapMeWidget", "systemSmall")
        try await app.setContent(widget, ##"{"type":"color","color":"#d70a53","children":[{"type":"text","text":"Bench"}]}"##)
        let screen = try Framebuffer(path: plasma.display.framebuffer)
        let drawn = await eventually(timeout: 10) {
            (0..<screen.height).contains { y in stride(from: 0, to: screen.width, by: 4).contains { screen.pixel(x: $0, y: y) == 0xd7_0a_53 } }
        }
        #expect(drawn, "the widget is drawn in its colour; plasmoidviewer printed:\n\(plasma.printed().suffix(3000))")
    }

    /// The picture of README.md's "On KDE Plasma" and docs/plasma.md: the examples
    /// GnomeShellTests.screenshots puts on the shell, in the applet on the desktop.
    @Test("A screenshot of the applet with the examples on the desktop")
    func screenshots() async throws {
        let plasma = try await PlasmaSession.start()
        defer { plasma.stop() }
        let rangers = try plasma.fixture.installEmojiRangers(["EMOJI_RANGERS_STEP": "600", "EMOJI_RANGERS_START_HEALTH": "60"])
        try await plasma.fixture.launchEmojiRangers(plasma.app.connection, record: rangers)
        try await plasma.placeExamples()
        var shown: [ScreenElement] = []
        for (name, role) in [
            ("Tap for yellow", "label"), ("Tap Me Show Red View", "push button"), ("Spouty, 60% health", "push button"),
            ("Ranger Leaderboard", "push button"), ("Delivery 10 min", "push button"),
        ] {
            shown.append(try await plasma.element(name, role: role))
        }
        try await plasma.drive("park")
        // The board down to its lowest widget, and a margin: not plasmoidviewer's own buttons below it.
        let board = try await plasma.element("WidgetHost", role: "panel")
        let bottom = shown.map { $0.y + $0.height }.max()! + 12
        let area = ScreenElement(name: "board", role: "panel", x: board.x, y: board.y, width: board.width, height: bottom - board.y, seen: 0)
        let picture = try await plasma.screenshot("plasma.png", of: area)
        #expect(picture >= 12, "the applet with the examples shows more than \(picture) colours")
        try plasma.expectNoQMLErrors()
    }
}

/// renderers/plasma/install, which builds the applet with cmake.
@Suite("KDE Plasma applet's install script", .serialized, .timeLimit(.minutes(6)),
    .enabled(if: plasmaTestsRun, "plasmoidviewer is not installed (apt-get install plasma-sdk plasma-desktop)"))
struct PlasmaInstallTests {
    @Test("It installs the applet's package, the vocabulary's declaration as a module in it, and its QML module into PREFIX, tells the Plasma session where the QML module is, and refuses a Plasma it does not know")
    func installs() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("widgethost-plasma-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: root) }
        let prefix = root.appendingPathComponent("prefix")
        let installed = try await Plasma.install(PlasmaSession.source, into: prefix, environment: ["XDG_CONFIG_HOME": root.appendingPathComponent("config").path])
        let package = prefix.appendingPathComponent("share/plasma/plasmoids/org.widgethost.plasmoid")
        let source = PlasmaSession.source
        for (file, from) in [("metadata.json", "plasma5/metadata.json"), ("contents/ui/main.qml", "plasma5/main.qml"), ("contents/ui/Icon.qml", "plasma5/Icon.qml"),
                             ("contents/ui/Element.qml", "qml/Element.qml"), ("contents/config/config.qml", "plasma5/config.qml")] {
            let copy = try? Data(contentsOf: package.appendingPathComponent(file))
            #expect(copy != nil && copy == (try? Data(contentsOf: source.appendingPathComponent(from))), "\(file) is \(from)")
        }
        // The rendering vocabulary's declaration, as a module the applet imports.
        let declaration = try String(contentsOf: repositoryRoot.appendingPathComponent("vocabulary/vocabulary.json"), encoding: .utf8)
        let module = try? String(contentsOf: package.appendingPathComponent("contents/ui/declaration.js"), encoding: .utf8)
        #expect(module?.contains("var DECLARATION = \(declaration.trimmingCharacters(in: .whitespacesAndNewlines));") == true,
            "contents/ui/declaration.js holds vocabulary/vocabulary.json")
        for file in ["qmldir", "libwidgethostplasmoid.so"] {
            #expect(FileManager.default.fileExists(atPath: "\(installed.qmlDirectory)/org/widgethost/plasmoid/\(file)"), "\(file) in \(installed.qmlDirectory)")
        }
        let session = try? String(contentsOf: root.appendingPathComponent("config/plasma-workspace/env/widgethost-plasmoid.sh"), encoding: .utf8)
        #expect(session?.contains("export QML2_IMPORT_PATH=\"\(installed.qmlDirectory)${QML2_IMPORT_PATH:+:$QML2_IMPORT_PATH}\"") == true, "\(session ?? "none")")

        let unknown = try await runCommand(Plasma.installScript(PlasmaSession.source), ["--plasma", "7", root.appendingPathComponent("other").path])
        #expect(unknown.status == 1 && unknown.stderr.contains("give --plasma 5 (Plasma 5.27) or --plasma 6"), "\(unknown)")
    }

    @Test("Outside the source tree, without the vocabulary's declaration, it installs nothing and says what it needs")
    func needsDeclaration() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("widgethost-plasma-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: root) }
        let copy = root.appendingPathComponent("renderers/plasma")
        try FileManager.default.createDirectory(at: copy.deletingLastPathComponent(), withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: repositoryRoot.appendingPathComponent("renderers/plasma"), to: copy)
        let prefix = root.appendingPathComponent("prefix")
        let result = try await runCommand(copy.appendingPathComponent("install").path, ["--plasma", "5", prefix.path])
        #expect(result.status == 1 && result.stderr.contains("vocabulary/vocabulary.json is missing: install from the whole source tree"), "\(result)")
        #expect(!FileManager.default.fileExists(atPath: prefix.path), "nothing is installed")
    }
}

/// A host, the Tap Me GApplication installed as a DBusActivatable app, and the applet in
/// plasmoidviewer as VirtualDesktop's ``Plasma`` starts it, with the AT-SPI bus: on Plasma's
/// desktop containment (`.desktop`, the full representation) or in the horizontal form factor
/// of a panel (`.panel`, the compact representation).
final class PlasmaSession: ScreenSession, ConformanceScreen, @unchecked Sendable {
    /// renderers/plasma, which Plasma.install builds (once per test run, in .build/plasma-applet,
    /// again only where the source changed) and installs into a prefix of a test's own.
    static let source = repositoryRoot.appendingPathComponent("renderers/plasma")

    let fixture: HostFixture
    let plasma: Plasma
    let record: String
    let app: AppPeer
    private(set) var appearance: ConformanceCase.Appearance

    var display: VirtualDisplay { plasma.display }
    var environment: [String: String] { plasma.environment }
    var driveOptions: [String] { ["--app", "plasmoidviewer"] }
    var rendererOutput: String { "plasmoidviewer printed:\n\(plasma.printed().suffix(4000))" }

    private init(fixture: HostFixture, plasma: Plasma, record: String, app: AppPeer, appearance: ConformanceCase.Appearance) {
        (self.fixture, self.plasma, self.record, self.app, self.appearance) = (fixture, plasma, record, app, appearance)
    }

    static func start(form: Plasma.Form = .desktop, appearance: ConformanceCase.Appearance = .light) async throws -> PlasmaSession {
        let fixture = try await HostFixture.make()
        var plasma: Plasma?
        do {
            let record = try fixture.installTapMe(environment: ["WIDGETHOST_TEST_ACTIONS": "refresh,toggle-light"])
            try await fixture.startHost()
            plasma = try await Plasma.start(
                applet: source, root: fixture.root, bus: fixture.bus, session: fixture.environment, runtime: fixture.desktopFolders.runtime,
                dataDirs: fixture.desktopFolders.dataDirs, form: form, colourScheme: scheme(appearance))
            try await waitUntilAccessible(plasma!, fixture)
            let app = try await fixture.tapMePeer()
            return PlasmaSession(fixture: fixture, plasma: plasma!, record: record, app: app, appearance: appearance)
        } catch {
            plasma?.stop()
            fixture.stop()
            throw error
        }
    }

    static func scheme(_ appearance: ConformanceCase.Appearance) -> Plasma.ColourScheme { appearance == .dark ? .dark : .light }

    /// What a plasmoidviewer the tests start on Wayland (`KWinSession`) runs with besides its
    /// display, as ``Plasma`` starts one on X11: the host started, the AT-SPI bus running
    /// (installed by `installAccessibilityBus`, which gave `runtime` and `dataDirs`), the applet
    /// installed by its install script into the test's folder, a home of the test's own, Qt's
    /// accessibility on.
    static func viewerEnvironment(_ fixture: HostFixture, runtime: URL, dataDirs: String) async throws -> [String: String] {
        try await fixture.startHost()
        return try await Plasma.environment(
            applet: source, root: fixture.root, session: fixture.environment, runtime: runtime, dataDirs: dataDirs, accessibility: true)
    }

    /// Starts plasmoidviewer with the applet on Wayland (`KWinSession`; ``Plasma`` starts it on
    /// X11), its window `size` big, in the colour scheme of `appearance`, and waits until the
    /// applet is on the AT-SPI bus.
    static func startViewer(
        _ fixture: HostFixture, environment: [String: String], form: Plasma.Form, appearance: ConformanceCase.Appearance, size: String = "1280x900"
    ) async throws -> Launched {
        let config = URL(fileURLWithPath: fixture.environment["XDG_CONFIG_HOME"] ?? fixture.root.appendingPathComponent("config").path)
        try Plasma.writeColourScheme(scheme(appearance), configHome: config)
        let viewer = try fixture.launch(Plasma.executable, Plasma.arguments(form: form, size: size), environment: environment)
        do {
            try await waitUntilAccessible(
                form: form, environment: fixture.environment.merging(environment) { _, new in new }, running: { viewer.process.isRunning },
                printed: { viewer.printed() })
        } catch {
            endProcess(viewer.process)
            throw error
        }
        return viewer
    }

    /// Waits until the applet in `plasma` is on the AT-SPI bus.
    private static func waitUntilAccessible(_ plasma: Plasma, _ fixture: HostFixture) async throws {
        try await waitUntilAccessible(
            form: plasma.form, environment: fixture.environment.merging(plasma.environment) { _, new in new },
            running: { plasma.process.isRunning }, printed: { plasma.printed() })
    }

    /// Waits until the applet a plasmoidviewer shows (`running`, which printed `printed`) is on
    /// the AT-SPI bus: its board on the desktop, its Show Widgets button in a panel.
    private static func waitUntilAccessible(
        form: Plasma.Form, environment: [String: String], running: () -> Bool, printed: () -> String
    ) async throws {
        let (name, role) = form == .panel ? ("Show Widgets", "push button") : ("WidgetHost", "panel")
        let drive = repositoryRoot.appendingPathComponent("Tests/Fixtures/board/drive.py").path
        let found = await eventually(timeout: 60) {
            guard running() else { return false }
            let result = try? await runCommand(
                "/usr/bin/python3", [drive, "--app", "plasmoidviewer", "find", name, "--role", role, "--timeout", "2"],
                environment: environment, timeout: 30)
            return result?.succeeded == true
        }
        guard found else {
            let tree = try? await runCommand("/usr/bin/python3", [drive, "tree"], environment: environment, timeout: 30)
            throw PrivateBusError(
                "plasmoidviewer did not show the applet (a \(role) named \(name)); the accessibility tree:\n\(tree?.stdout.suffix(3000) ?? "")\(tree?.stderr.suffix(1000) ?? "")\nplasmoidviewer printed:\n\(printed().suffix(6000))")
        }
    }

    /// Draws from now on in `appearance`: plasmoidviewer started again in its colour scheme.
    /// Qt's accessibility has no toggle-button role and no level-bar role: a toggle is a push
    /// button whose `checked` state follows `isOn`, and a gauge a progress bar.
    var roleSubstitutes: [String: [String]] { ["toggle button": ["push button"], "level bar": ["progress bar"]] }

    func show(_ appearance: ConformanceCase.Appearance) async throws {
        guard appearance != self.appearance else { return }
        try await plasma.restart(colourScheme: Self.scheme(appearance))
        try await Self.waitUntilAccessible(plasma, fixture)
        self.appearance = appearance
    }

    /// plasmoidviewer printed no QML warning or error from the applet's own files
    /// (its package, its QML module): every line naming them is a defect.
    func expectNoQMLErrors() throws {
        Self.expectNoQMLErrors(in: plasma.printed())
    }

    static func expectNoQMLErrors(in printed: String) {
        let ours = printed.split(separator: "\n").filter { $0.contains("org.widgethost.plasmoid") || $0.contains("org/widgethost/plasmoid") }
        #expect(ours.isEmpty, "plasmoidviewer printed QML problems of the applet:\n\(ours.joined(separator: "\n"))")
    }

    func stop() {
        app.close()
        plasma.stop()
        fixture.stop()
    }
}
