import DBus
import Foundation
import PrivateBus
import Testing
import VirtualDesktop

/// Whether the applet's Wayland tests run: where its X11 tests run and KWin's Wayland
/// compositor (kwin-wayland) is installed, and always in CI.
let kwinTestsRun = (plasmaTestsRun && FileManager.default.isExecutableFile(atPath: "/usr/bin/kwin_wayland"))
    || ProcessInfo.processInfo.environment["CI"] == "true"

/// The KDE Plasma applet in plasmoidviewer as a Wayland client of a real KWin
/// (kwin_wayland on its virtual backend: no screen, no input devices, no
/// Xwayland), where the token a tap carries is an xdg-activation token the
/// applet asks KWin for and KWin honours or not; a tap with a token KWin did not
/// mint, or none, is the negative control that shows the token is what raises
/// the app. The app is a GTK 4 application (Tests/Fixtures/gapp/tapme_gtk.py)
/// with a window, a Wayland client of that KWin; clicks are real pointer events
/// through KWin's fake input (Tests/Fixtures/plasma/kwin.py). The assertions
/// are on what the app received and on what KWin did with its window.
@Suite("KDE Plasma applet on Wayland", .serialized, .timeLimit(.minutes(3)),
    .enabled(if: kwinTestsRun, "plasmoidviewer or kwin_wayland is not installed (apt-get install plasma-sdk plasma-desktop kwin-wayland)"))
struct PlasmaWaylandTests {
    @Test("On Wayland, a click on a widget in the applet opens the GTK app with an xdg-activation token KWin minted for the click, and KWin honours it: the app's window, behind another app's, gets the focus; a tap with a made-up token or none leaves it behind")
    func activationRaisesWindow() async throws {
        let kwin = try await KWinSession.start()
        defer { kwin.stop() }
        let widget = try await kwin.place(try exampleFile("tap-me/red.json"))
        let red = try await kwin.element("Tap for red", role: "push button")
        #expect(red.width == 170 && red.height == 170, "\(red)")
        let lost = try await kwin.putTapMeBehind()
        try await kwin.expectTapsWithoutMintedTokensLeaveTheAppBehind(widget)

        // A click on the widget: the app opens its URL with the token KWin minted for the click.
        let opened = kwin.opens().count
        try await kwin.click(red)
        try await kwin.expectRaised(since: lost, byTapOn: "tap-me-widget://show-red", after: opened)
        try kwin.expectNoQMLErrors()
    }
}

/// A host, the GTK Tap Me app installed as a DBusActivatable app that shows its
/// window on KWin, the AT-SPI bus, KWin as a Wayland compositor
/// (`kwin_wayland --virtual`, one virtual output of 1280×800) and plasmoidviewer
/// on it with the applet on Plasma's desktop containment.
final class KWinSession: WaylandSession, @unchecked Sendable {
    /// KWin's Wayland socket, in the test's own runtime folder.
    static let socket = "wayland-widgethost"
    static let compositor = "KWin"

    /// KWin's xdg-activation tokens are `kwin-N`, N counting the tokens it has given.
    static func minted(_ token: String) -> Bool {
        token.wholeMatch(of: /'kwin-[1-9][0-9]*'/) != nil
    }

    let fixture: HostFixture
    let systemBus: PrivateBus
    let kwin: Launched
    /// The seat's pointer (`kwin.py pointer`).
    let pointer: Launched
    let viewer: Launched
    let record: String
    let app: AppPeer
    /// What plasmoidviewer, drive.py and kwin.py run with.
    let environment: [String: String]
    let gtkEnvironment: [String: String]
    var otherApp: Launched?

    var driveOptions: [String] { ["--app", "plasmoidviewer"] }
    var rendererOutput: String { "plasmoidviewer printed:\n\(viewer.printed().suffix(4000))\nKWin printed:\n\(kwin.printed().suffix(3000))" }

    private init(
        fixture: HostFixture, systemBus: PrivateBus, kwin: Launched, pointer: Launched, viewer: Launched, record: String, app: AppPeer,
        environment: [String: String], gtkEnvironment: [String: String]
    ) {
        (self.fixture, self.systemBus, self.kwin, self.pointer, self.viewer, self.record) = (fixture, systemBus, kwin, pointer, viewer, record)
        (self.app, self.environment, self.gtkEnvironment) = (app, environment, gtkEnvironment)
    }

    static func start() async throws -> KWinSession {
        let fixture = try await HostFixture.make()
        var systemBus: PrivateBus?
        var kwin: Launched?
        var pointer: Launched?
        var viewer: Launched?
        do {
            let runtime = fixture.root.appendingPathComponent("runtime")
            // GTK draws with cairo: KWin's virtual output has no GPU to share buffers with.
            let gtkEnvironment = [
                "GDK_BACKEND": "wayland", "WAYLAND_DISPLAY": socket, "XDG_RUNTIME_DIR": runtime.path, "GSK_RENDERER": "cairo", "GTK_A11Y": "none",
            ]
            let record = try fixture.installActivatable(
                "org.example.TapMe", script: "Tests/Fixtures/gapp/tapme_gtk.py", entry: "Tests/Fixtures/gapp/tapme_gtk.desktop",
                recordVariable: "WIDGETHOST_TEST_RECORD", settings: gtkEnvironment.merging(["WIDGETHOST_TEST_LINGER": "30"]) { _, new in new })
            let (_, dataDirs) = try fixture.installAccessibilityBus()
            let viewerEnvironment = try await PlasmaSession.viewerEnvironment(fixture, runtime: runtime, dataDirs: dataDirs)
            systemBus = try PrivateBus(environment: fixture.environment)
            kwin = try await launchKWin(fixture, environment: viewerEnvironment.merging(["DBUS_SYSTEM_BUS_ADDRESS": systemBus!.address]) { _, new in new })
            let environment = viewerEnvironment.merging(["QT_QPA_PLATFORM": "wayland", "WAYLAND_DISPLAY": socket]) { _, new in new }
            pointer = try await plugPointer(fixture, environment: environment)
            // Smaller than the output, so that the whole window, title bar and all, is on it.
            viewer = try await PlasmaSession.startViewer(fixture, environment: environment, form: .desktop, appearance: .light, size: "960x600")
            return KWinSession(
                fixture: fixture, systemBus: systemBus!, kwin: kwin!, pointer: pointer!, viewer: viewer!, record: record, app: try await fixture.tapMePeer(),
                environment: environment, gtkEnvironment: gtkEnvironment)
        } catch {
            for process in [viewer, pointer, kwin] { if let process { endProcess(process.process) } }
            systemBus?.stop()
            fixture.stop()
            throw error
        }
    }

    /// Starts kwin_wayland on its virtual backend with `environment` (the session's folders, its
    /// own system bus) and waits until it serves its socket and its D-Bus interface.
    private static func launchKWin(_ fixture: HostFixture, environment: [String: String]) async throws -> Launched {
        // plasmoidviewer's window at the top left (KWin's placement ZeroCornered), the GTK apps'
        // at the bottom right, off the applet's widgets, where a window rule (positionrule Apply,
        // 3) puts the windows whose app id has "org.example" in it (wmclassmatch substring, 2).
        let config = URL(fileURLWithPath: fixture.environment["XDG_CONFIG_HOME"] ?? fixture.root.appendingPathComponent("config").path)
        try FileManager.default.createDirectory(at: config, withIntermediateDirectories: true)
        try "[Windows]\nPlacement=ZeroCornered\n".write(to: config.appendingPathComponent("kwinrc"), atomically: true, encoding: .utf8)
        try """
            [General]
            count=1
            rules=apps

            [apps]
            Description=The test's GTK apps, at the bottom right
            wmclass=org.example
            wmclassmatch=2
            position=880,520
            positionrule=3

            """.write(to: config.appendingPathComponent("kwinrulesrc"), atomically: true, encoding: .utf8)
        // Debian's kwin_wayland carries the file capability cap_sys_resource (to raise its own
        // limits), and the kernel refuses to run such a file ("Operation not permitted") where
        // that capability is not in the bounding set, as in a container. A copy of it carries
        // none: the same program runs, with the limits it is given.
        let copy = fixture.root.appendingPathComponent("kwin_wayland")
        try Data(contentsOf: URL(fileURLWithPath: "/usr/bin/kwin_wayland")).write(to: copy)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: copy.path)
        // KWin offers its fake input, which kwin.py clicks with, to a client its desktop entry
        // names only, unless it checks no permissions.
        let kwin = try fixture.launch(
            copy.path, ["--virtual", "--width", "1280", "--height", "800", "--no-lockscreen", "--socket", socket],
            environment: environment.merging(["KWIN_WAYLAND_NO_PERMISSION_CHECKS": "1"]) { _, new in new })
        let connection = try await fixture.connect()
        defer { connection.close() }
        let socketPath = (environment["XDG_RUNTIME_DIR"] ?? "") + "/" + socket
        let ready = try await eventually(timeout: 30) {
            guard kwin.process.isRunning, FileManager.default.fileExists(atPath: socketPath) else { return false }
            return try await connection.nameOwner("org.kde.KWin") != nil
        }
        guard ready else {
            endProcess(kwin.process)
            throw PrivateBusError("kwin_wayland did not start (no \(socketPath), or no org.kde.KWin on the bus); it printed:\n\(kwin.printed().suffix(4000))")
        }
        return kwin
    }

    /// Plugs a pointer into KWin's seat, which has none of its own, before any client that
    /// would take it starts (see Tests/Fixtures/plasma/kwin.py); the caller ends its process.
    private static func plugPointer(_ fixture: HostFixture, environment: [String: String]) async throws -> Launched {
        let pointer = try fixture.launch(
            "/usr/bin/python3", [repositoryRoot.appendingPathComponent("Tests/Fixtures/plasma/kwin.py").path, "pointer"], environment: environment)
        guard await eventually(timeout: 10, { pointer.printed().contains("ready") }) else {
            endProcess(pointer.process)
            throw PrivateBusError("kwin.py could not plug a pointer into KWin: \(pointer.printed())")
        }
        return pointer
    }

    /// Runs Tests/Fixtures/plasma/kwin.py with `arguments`; fails the test with what it printed when it fails.
    @discardableResult
    func kwinTool(_ arguments: [String]) async throws -> String {
        let result = try await runCommand(
            "/usr/bin/python3", [repositoryRoot.appendingPathComponent("Tests/Fixtures/plasma/kwin.py").path] + arguments,
            environment: fixture.environment.merging(environment) { _, new in new }, timeout: 60)
        guard result.succeeded else {
            Issue.record("kwin.py \(arguments.joined(separator: " ")) failed: \(result)\n\(rendererOutput)")
            throw PrivateBusError("kwin.py failed")
        }
        return result.stdout
    }

    /// KWin's windows: "app-id", "title", "active", and where their surfaces are.
    func windows() async throws -> [[String: Any]] {
        let printed = try await kwinTool(["windows"])
        return try JSONSerialization.jsonObject(with: Data(printed.utf8)) as? [[String: Any]] ?? []
    }

    static func focused(_ windows: [[String: Any]]) -> String? {
        windows.first { $0["active"] as? Bool == true }?["app-id"] as? String
    }

    /// The applet's element named `name` with `role`, placed on the output. AT-SPI finds it with
    /// its size, but places it in plasmoidviewer's window: a Wayland client does not know where
    /// the compositor put its window. KWin, which put it there, places it.
    func element(_ name: String, role: String, timeout: Double = 10) async throws -> ScreenElement {
        let printed = try await drive("find", name, "--role", role, "--timeout", "\(timeout)")
        let element = try JSONDecoder().decode(ScreenElement.self, from: Data(printed.utf8))
        let windows = try await windows()
        guard let window = windows.first(where: { $0["app-id"] as? String == "org.kde.plasmoidviewer" }),
            let x = window["x"] as? Int, let y = window["y"] as? Int
        else { throw PrivateBusError("KWin has no window of plasmoidviewer: \(windows)") }
        return ScreenElement(
            name: element.name, role: element.role, x: x + element.x, y: y + element.y, width: element.width, height: element.height,
            seen: element.seen, states: element.states)
    }

    /// Clicks the centre of `element` with the pointer.
    func click(_ element: ScreenElement) async throws {
        try await kwinTool(["click", "\(element.x + element.width / 2)", "\(element.y + element.height / 2)"])
    }

    /// plasmoidviewer printed no QML warning or error from the applet's own files.
    func expectNoQMLErrors() throws {
        PlasmaSession.expectNoQMLErrors(in: viewer.printed())
    }

    func stop() {
        app.close()
        if let otherApp { endProcess(otherApp.process) }
        endProcess(viewer.process)
        endProcess(pointer.process)
        endProcess(kwin.process)
        systemBus.stop()
        fixture.stop()
    }
}
