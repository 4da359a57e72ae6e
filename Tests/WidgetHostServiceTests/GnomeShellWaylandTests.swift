import DBus
import Foundation
import PrivateBus
import Testing
import VirtualDesktop

/// The GNOME Shell extension in a real gnome-shell running as a Wayland
/// compositor (headless, one virtual monitor, no Xwayland), where the token a
/// tap carries is an xdg-activation token that Mutter honours or not. The app
/// is a GTK 4 application (Tests/Fixtures/gapp/tapme_gtk.py) with a window, a
/// Wayland client of that shell; clicks are real pointer events through
/// Mutter's remote desktop API (Tests/Fixtures/gnome-shell/wayland.py). The
/// assertions are on what the app received and on what the compositor did with
/// its window.
@Suite("GNOME Shell extension on Wayland", .serialized, .timeLimit(.minutes(2)),
    .enabled(if: gnomeShellTestsRun, "gnome-shell is not installed (apt-get install gnome-shell)"))
struct GnomeShellWaylandTests {
    @Test("On Wayland, a click on a widget opens the GTK app with an xdg-activation token the shell minted, and Mutter honours it: the app's window, behind another app's, gets the focus")
    func activationRaisesWindow() async throws {
        let shell = try await WaylandShellSession.start()
        defer { shell.stop() }
        try await shell.place(try exampleFile("tap-me/red.json"))
        let red = try await shell.element("Tap for red", role: "push button")
        #expect(red.width == 170 && red.height == 170, "\(red)")

        // The app's window, then another app's window in front of it with the focus.
        try await shell.activateTapMe()
        _ = try await shell.waitForRecord { $0["call"] as? String == "window" && $0["active"] as? Bool == true }
        try shell.startOtherApp()
        var windows: [[String: Any]] = []
        let behind = await eventually(timeout: 10) {
            windows = (try? await shell.windows()) ?? []
            return WaylandShellSession.focused(windows) == "org.example.Other"
        }
        #expect(behind, "another app's window must have the focus before the tap: \(windows)")
        let lost = try await shell.waitForRecord { $0["call"] as? String == "window" && $0["active"] as? Bool == false }

        // A click on the widget: the app opens its URL with the token the shell minted for the click.
        try await shell.click(red)
        let open = try await shell.waitForRecord { $0["call"] as? String == "open" }
        #expect(open["uris"] as? [String] == ["tap-me-widget://show-red"])
        let platform = open["platform_data"] as? [String: String] ?? [:]
        // On Wayland without X11, Mutter's launch context makes the token a random UUID of its own
        // (on X11 it is a startup id, 'gnome-shell/…_TIME…'); the host passes it under both names.
        let token = platform["activation-token"] ?? ""
        #expect(token.wholeMatch(of: /'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}'/) != nil,
            "the app must receive an xdg-activation token the shell minted: \(platform)")
        let startupID = platform["desktop-startup-id"]
        #expect(startupID == token, "\(platform)")

        // GTK hands the token to the compositor as it presents the window, and Mutter honours
        // a token of its own launch context: the window gets the focus back.
        let since = max(open["time"] as? Double ?? 0, lost["time"] as? Double ?? 0)
        let raised = await eventually(timeout: 10) {
            shell.records().contains { $0["call"] as? String == "window" && $0["active"] as? Bool == true && ($0["time"] as? Double ?? 0) > since }
        }
        #expect(raised, "Mutter must honour the token and give the app's window the focus; the app recorded \(shell.records())")
        windows = try await shell.windows()
        #expect(WaylandShellSession.focused(windows) == "org.example.TapMe", "the shell's focus window: \(windows)")

        // Drawn on Wayland as on X11: the red widget's colour fills it.
        try await shell.park()
        let corner = (red.x + 20, red.y + red.height - 20)
        let picture = try await shell.screenshot("gnome-shell-wayland.png", at: [corner])
        #expect(picture.at["\(corner.0),\(corner.1)"] == "#ff0000" && picture.colours >= 8, "\(picture)")
        try await shell.expectNoExtensionErrors()
    }
}

/// A host, the GTK Tap Me app installed as a DBusActivatable app that shows its
/// window on the shell, the AT-SPI bus, and gnome-shell as a headless Wayland
/// compositor (`--headless --wayland --no-x11 --virtual-monitor 1280x800`)
/// with the extension.
final class WaylandShellSession: GnomeShellSession, @unchecked Sendable {
    /// The shell's Wayland socket, in the test's own runtime folder.
    static let socket = "wayland-widgethost"
    let fixture: HostFixture
    let systemBus: PrivateBus
    let shell: Launched
    let record: String
    let app: AppPeer
    let environment: [String: String]
    /// What a GTK app runs with to show its windows on the shell.
    let gtkEnvironment: [String: String]
    private var other: Launched?

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

    static func start() async throws -> WaylandShellSession {
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
            let prepared = try await fixture.prepareGnomeShell(settings: "[org/gnome/mutter]\ncenter-new-windows=true\n")
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

    /// Clicks the centre of `element` with the pointer.
    func click(_ element: ScreenElement) async throws {
        try await wayland(["click", "\(element.x + element.width / 2)", "\(element.y + element.height / 2)"])
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

    /// Activates the Tap Me app as a launcher without a token would (org.freedesktop.Application.Activate),
    /// which starts it: its window shows and, the newest, gets the focus.
    func activateTapMe() async throws {
        let result = try await fixture.gdbus([
            "call", "--session", "--dest", "org.example.TapMe", "--object-path", "/org/example/TapMe",
            "--method", "org.freedesktop.Application.Activate", "{}",
        ])
        guard result.succeeded else { throw PrivateBusError("Tap Me did not start: \(result)") }
    }

    /// Starts another GTK app, org.example.Other, whose window comes in front of the others and takes the focus.
    func startOtherApp() throws {
        let script = repositoryRoot.appendingPathComponent("Tests/Fixtures/gapp/tapme_gtk.py").path
        other = try fixture.launch(
            "/usr/bin/python3", [script, "org.example.Other"],
            environment: gtkEnvironment.merging(["WIDGETHOST_TEST_RECORD": fixture.root.appendingPathComponent("other.jsonl").path]) { _, new in new })
    }

    func stop() {
        app.close()
        if let other { endProcess(other.process) }
        endProcess(shell.process)
        systemBus.stop()
        fixture.stop()
    }
}
