import DBus
import Foundation
import PrivateBus
import Testing
import VirtualDesktop

/// The GNOME Shell extension, and widget-board as a Wayland client, in a real
/// gnome-shell running as a Wayland compositor (headless, one virtual monitor,
/// no Xwayland), where the token a tap carries is an xdg-activation token that
/// Mutter honours or not; a tap with a token Mutter did not mint, or none, is
/// the negative control that shows the token is what raises the app. The app
/// is a GTK 4 application (Tests/Fixtures/gapp/tapme_gtk.py) with a window, a
/// Wayland client of that shell; clicks are real pointer events through
/// Mutter's remote desktop API (Tests/Fixtures/gnome-shell/wayland.py). The
/// assertions are on what the app received and on what the compositor did with
/// its window.
@Suite("GNOME Shell extension on Wayland", .serialized, .timeLimit(.minutes(2)),
    .enabled(if: gnomeShellTestsRun, "gnome-shell is not installed (apt-get install gnome-shell)"))
struct GnomeShellWaylandTests {
    @Test("On Wayland, a click on a widget opens the GTK app with an xdg-activation token the shell minted, and Mutter honours it: the app's window, behind another app's, gets the focus; a tap with a made-up token or none leaves it behind")
    func activationRaisesWindow() async throws {
        let shell = try await WaylandShellSession.start()
        defer { shell.stop() }
        let widget = try await shell.place(try exampleFile("tap-me/red.json"))
        let red = try await shell.element("Tap for red", role: "push button")
        #expect(red.width == 170 && red.height == 170, "\(red)")
        let lost = try await shell.putTapMeBehind()
        try await shell.expectTapsWithoutMintedTokensLeaveTheAppBehind(widget)

        // A click on the widget: the app opens its URL with the token the shell minted for the click.
        let opened = shell.opens().count
        try await shell.click(red)
        try await shell.expectRaised(since: lost, byTapOn: "tap-me-widget://show-red", after: opened)

        // Drawn on Wayland as on X11: the red widget's colour fills it.
        try await shell.park()
        let corner = (red.x + 20, red.y + red.height - 20)
        let picture = try await shell.screenshot("gnome-shell-wayland.png", at: [corner])
        #expect(picture.at["\(corner.0),\(corner.1)"] == "#ff0000" && picture.colours >= 8, "\(picture)")
        try await shell.expectNoExtensionErrors()
    }

    @Test("On Wayland, widget-board runs as a Wayland client of the shell, and a click on its widget raises the app's window from behind another's with the token GTK got from Mutter; a tap with a made-up token or none leaves it behind")
    func boardRaisesWindow() async throws {
        // The extension draws no widgets here: the board's are the only ones on the screen.
        let shell = try await WaylandShellSession.start(settings: "[org/gnome/shell/extensions/widgethost]\nshow-widgets=false\n")
        defer { shell.stop() }
        let widget = try await shell.place(try exampleFile("tap-me/red.json"))
        try shell.startBoard()
        let red = try await shell.boardElement("Tap for red", role: "push button", colour: "#ff0000")
        let lost = try await shell.putTapMeBehind()
        try await shell.expectTapsWithoutMintedTokensLeaveTheAppBehind(widget)
        let opened = shell.opens().count
        // The click's devices stay while the app takes the token to Mutter, as a person's pointer does.
        async let clicked: Void = shell.click(red, hold: 8)
        try await shell.expectRaised(since: lost, byTapOn: "tap-me-widget://show-red", after: opened)
        try await clicked
    }
}

/// A host, the GTK Tap Me app installed as a DBusActivatable app that shows its
/// window on the shell, the AT-SPI bus, and gnome-shell as a headless Wayland
/// compositor (`--headless --wayland --no-x11 --virtual-monitor 1280x800`)
/// with the extension.
final class WaylandShellSession: GnomeShellSession, WaylandSession, @unchecked Sendable {
    /// The shell's Wayland socket, in the test's own runtime folder.
    static let socket = "wayland-widgethost"
    static let compositor = "Mutter"

    /// On Wayland without X11, Mutter's tokens are random UUIDs of its own: as its launch context
    /// gives them to the shell, and with the time of the request after them (_TIME…) as its
    /// xdg_activation_v1 gives them to a client. (On X11 a startup id, 'gnome-shell/…_TIME…'.)
    static func minted(_ token: String) -> Bool {
        token.wholeMatch(of: /'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(_TIME[0-9]+)?'/) != nil
    }
    let fixture: HostFixture
    let systemBus: PrivateBus
    let shell: Launched
    let record: String
    let app: AppPeer
    let environment: [String: String]
    /// What a GTK app runs with to show its windows on the shell.
    let gtkEnvironment: [String: String]
    var otherApp: Launched?
    private var board: Launched?

    private init(
        fixture: HostFixture, systemBus: PrivateBus, shell: Launched, record: String, app: AppPeer, environment: [String: String],
        gtkEnvironment: [String: String]
    ) {
        self.fixture = fixture
        self.systemBus = systemBus
        self.shell = shell
        self.record = record
        self.app = app
        self.environment = environment
        self.gtkEnvironment = gtkEnvironment
    }

    /// `settings`: more groups of the GSettings keyfile (see `HostFixture.writeShellSettings`).
    static func start(settings more: String = "") async throws -> WaylandShellSession {
        let fixture = try await HostFixture.make()
        var systemBus: PrivateBus?
        var shell: Launched?
        do {
            // GTK draws with cairo: the headless shell has no GPU to share buffers with.
            let gtkEnvironment = [
                "GDK_BACKEND": "wayland", "WAYLAND_DISPLAY": socket, "XDG_RUNTIME_DIR": fixture.root.appendingPathComponent("runtime").path,
                "GSK_RENDERER": "cairo", "GTK_A11Y": "none",
            ]
            let record = try fixture.installActivatable(
                "org.example.TapMe", script: "Tests/Fixtures/gapp/tapme_gtk.py", entry: "Tests/Fixtures/gapp/tapme_gtk.desktop",
                recordVariable: "WIDGETHOST_TEST_RECORD", settings: gtkEnvironment.merging(["WIDGETHOST_TEST_LINGER": "30"]) { _, new in new })
            // New windows in the middle of the screen, off the widgets at the top left.
            let prepared = try await fixture.prepareGnomeShell(settings: "[org/gnome/mutter]\ncenter-new-windows=true\n\n" + more)
            systemBus = prepared.systemBus
            shell = try fixture.launch(
                "/usr/bin/gnome-shell",
                ["--wayland", "--headless", "--no-x11", "--wayland-display", socket, "--virtual-monitor", "1280x800", "--sm-disable"],
                environment: prepared.environment)
            let session = WaylandShellSession(
                fixture: fixture, systemBus: systemBus!, shell: shell!, record: record, app: try await fixture.tapMePeer(),
                environment: prepared.environment, gtkEnvironment: gtkEnvironment)
            try await session.waitUntilReady()
            return session
        } catch {
            if let shell { endProcess(shell.process) }
            systemBus?.stop()
            fixture.stop()
            throw error
        }
    }

    /// Runs Tests/Fixtures/gnome-shell/wayland.py with `arguments`; fails the test with what it printed when it fails.
    @discardableResult
    func wayland(_ arguments: [String]) async throws -> String {
        let result = try await runCommand(
            "/usr/bin/python3", [repositoryRoot.appendingPathComponent("Tests/Fixtures/gnome-shell/wayland.py").path] + arguments,
            environment: fixture.environment.merging(environment) { _, new in new }, timeout: 60)
        guard result.succeeded else {
            Issue.record("wayland.py \(arguments.joined(separator: " ")) failed: \(result)\n\(rendererOutput)")
            throw PrivateBusError("wayland.py failed")
        }
        return result.stdout
    }

    func press(_ name: String) async throws {
        try await wayland(["key", name])
    }

    /// Clicks the centre of `element` with the pointer; with `hold`, the pointer and the keyboard
    /// stay that many seconds more (see wayland.py: a token a client asked for is honoured only
    /// while the pointer that clicked is there).
    func click(_ element: ScreenElement, hold: Double = 0) async throws {
        try await wayland(["click", "\(element.x + element.width / 2)", "\(element.y + element.height / 2)"] + (hold > 0 ? ["--hold", "\(hold)"] : []))
    }

    /// Moves the pointer off the desktop's widgets.
    func park() async throws {
        try await wayland(["park"])
    }

    /// The shell's windows (org.gnome.Shell.Introspect.GetWindows): "wm-class", "has-focus", "title" ….
    func windows() async throws -> [[String: Any]] {
        let printed = try await wayland(["windows"])
        return try JSONSerialization.jsonObject(with: Data(printed.utf8)) as? [[String: Any]] ?? []
    }

    /// The app id (the Wayland app_id, "wm-class") of the window that has the focus.
    static func focused(_ windows: [[String: Any]]) -> String? {
        windows.first { $0["has-focus"] as? Bool == true }?["wm-class"] as? String
    }

    /// Saves the screen as the shell shows it (org.gnome.Shell.Screenshot) as `name` under the
    /// screenshots folder; answers how many colours a sample of its pixels has and the colour at each of `points`.
    func screenshot(_ name: String, at points: [(Int, Int)]) async throws -> (colours: Int, at: [String: String]) {
        let file = try screenshotFile(name)
        let printed = try await wayland(["screenshot", file.path] + points.map { "\($0.0),\($0.1)" })
        let answer = try JSONSerialization.jsonObject(with: Data(printed.utf8)) as? [String: Any] ?? [:]
        return (answer["colours"] as? Int ?? 0, answer["at"] as? [String: String] ?? [:])
    }

    /// Starts widget-board as a Wayland client of the shell (GDK's Wayland backend), its
    /// accessible tree on the test's AT-SPI bus.
    func startBoard() throws {
        var environment = gtkEnvironment
        environment.removeValue(forKey: "GTK_A11Y")
        board = try fixture.launch(
            "/usr/bin/python3", [repositoryRoot.appendingPathComponent("renderers/gtk/widget-board").path, "--theme", "light"],
            environment: environment.merging(self.environment) { gtk, _ in gtk })
    }

    /// An element of the board's window that `colour` fills, on the screen. AT-SPI finds it once
    /// the board shows it, with its size, but places it in the window: a Wayland client does not
    /// know where the compositor put its window. The screen, as the shell shows it, places it.
    func boardElement(_ name: String, role: String, colour: String) async throws -> ScreenElement {
        // Inside the board's application, not the shell's (drive.py takes the last --app given).
        let result = try await tryDrive(["--app", "widget-board", "find", name, "--role", role, "--timeout", "20"])
        guard result.succeeded else {
            Issue.record("the board shows no \(role) '\(name)': \(result)\nboard: \(board?.printed() ?? "")")
            throw PrivateBusError("no such element")
        }
        let element = try JSONDecoder().decode(ScreenElement.self, from: Data(result.stdout.utf8))
        let located = try await wayland(["locate", try screenshotFile("gnome-shell-wayland-board.png").path, colour])
        let place = try JSONSerialization.jsonObject(with: Data(located.utf8)) as? [String: Int] ?? [:]
        #expect(abs((place["width"] ?? 0) - element.width) <= 2 && abs((place["height"] ?? 0) - element.height) <= 2,
            "the screen's \(colour) is \(place), the board's \(element)")
        return ScreenElement(
            name: element.name, role: element.role, x: place["x"] ?? 0, y: place["y"] ?? 0, width: element.width, height: element.height,
            seen: element.seen, states: element.states)
    }

    func stop() {
        app.close()
        if let board { endProcess(board.process) }
        if let otherApp { endProcess(otherApp.process) }
        endProcess(shell.process)
        systemBus.stop()
        fixture.stop()
    }
}
