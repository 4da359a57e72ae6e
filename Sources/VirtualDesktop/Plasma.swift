import Foundation
import PrivateBus

/// The KDE Plasma applet (renderers/plasma) in `plasmoidviewer`, Plasma's own
/// shell container with its desktop containment, for the tests and the
/// benchmark: on a virtual display of its own, with the caller's private
/// session bus, the applet built and installed by its install script into the
/// caller's folder, and Plasma's colour scheme in the caller's configuration
/// folder, so nothing of the machine's session is touched. ``stop()`` ends
/// everything it started (an accessibility bus ends with the session bus).
public final class Plasma: DesktopProgram, @unchecked Sendable {
    /// Plasma's desktop containment (the applet's full representation), or the
    /// horizontal form factor of a panel (its compact one).
    public enum Form: Sendable {
        case desktop, panel
    }

    /// Breeze or Breeze Dark, as Plasma's own settings write them in kdeglobals.
    public enum ColourScheme: String, Sendable {
        case light = "BreezeLight", dark = "BreezeDark"
    }

    public static let executable = "/usr/bin/plasmoidviewer"
    /// The applet's id (its package's name).
    public static let applet = "org.widgethost.plasmoid"

    public let form: Form
    /// The applet it shows.
    private let showing: String

    /// Installs the applet from `source` (the renderers/plasma folder) under `root`, starts
    /// a virtual display and plasmoidviewer on it showing `applet` in `form` with
    /// `colourScheme`, and waits until its window shows (and, for WidgetHost's applet, its
    /// QML module is loaded). `session` is the environment of the session bus `bus`, with
    /// `XDG_CONFIG_HOME`; `dataDirs` plasmoidviewer's `XDG_DATA_DIRS` after the applet's
    /// package (icons, themes, the apps' desktop entries), `runtime` its private
    /// `XDG_RUNTIME_DIR`. With `accessibility`, the AT-SPI bus is started on `bus` first and
    /// Qt's accessibility is on, so that AT-SPI clients find what the applet draws; without
    /// it, as on most desktops, Qt builds no accessible objects at all.
    public static func start(
        applet source: URL, root: URL, bus: PrivateBus, session: [String: String], runtime: URL, dataDirs: String = "/usr/share",
        accessibility: Bool = true, form: Form = .desktop, colourScheme: ColourScheme = .light, showing applet: String = Plasma.applet
    ) async throws -> Plasma {
        guard let config = session["XDG_CONFIG_HOME"] else {
            throw PrivateBusError("the session's environment sets no XDG_CONFIG_HOME for Plasma's colour scheme")
        }
        let display = try VirtualDisplay(directory: root)
        do {
            // On the display: see installAccessibilityBus.
            if accessibility { try bus.installAccessibilityBus(runtime: runtime, dataDirs: dataDirs, display: display.display) }
            let environment = try await Self.environment(
                applet: source, root: root, session: session, runtime: runtime, dataDirs: dataDirs, accessibility: accessibility
            ).merging(["DISPLAY": display.display, "QT_QPA_PLATFORM": "xcb"]) { _, new in new }
            let plasma = Plasma(
                display: display, form: form, environment: environment, showing: applet, session: session,
                configHome: URL(fileURLWithPath: config), output: ProgramOutput(in: root, name: "plasmoidviewer"))
            do {
                try await plasma.launch(colourScheme)
            } catch {
                plasma.stop()
                throw error
            }
            return plasma
        } catch {
            display.stop()
            throw error
        }
    }

    /// What plasmoidviewer runs with besides its display, on X11 or on Wayland: the applet
    /// installed from `source` under `root` (with the session's `XDG_CONFIG_HOME`), a home and
    /// a cache of its own, `dataDirs` after the applet's package, `runtime`. With
    /// `accessibility`, Qt's accessibility is on and the AT-SPI bus, which the caller made
    /// startable (``PrivateBus/installAccessibilityBus(runtime:dataDirs:display:)``), is started,
    /// so that it runs before plasmoidviewer does.
    public static func environment(
        applet source: URL, root: URL, session: [String: String], runtime: URL, dataDirs: String, accessibility: Bool
    ) async throws -> [String: String] {
        guard let config = session["XDG_CONFIG_HOME"] else {
            throw PrivateBusError("the session's environment sets no XDG_CONFIG_HOME for the applet's install")
        }
        if accessibility {
            let started = try await runCommand(
                "gdbus", ["call", "--session", "--dest", "org.a11y.Bus", "--object-path", "/org/a11y/bus", "--method", "org.a11y.Bus.GetAddress"],
                environment: session)
            guard started.succeeded else { throw PrivateBusError("the accessibility bus did not start: \(started)") }
        }
        let prefix = root.appendingPathComponent("plasma")
        // The session's import path goes to the caller's own configuration, not the account's.
        let installed = try await install(source, into: prefix, environment: ["XDG_CONFIG_HOME": config])
        let home = root.appendingPathComponent("home")
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        var environment = [
            "XDG_DATA_DIRS": prefix.appendingPathComponent("share").path + ":" + dataDirs, "XDG_RUNTIME_DIR": runtime.path,
            "HOME": home.path, "XDG_CACHE_HOME": root.appendingPathComponent("cache").path, "QML2_IMPORT_PATH": installed.qmlDirectory,
        ]
        if accessibility { environment["QT_LINUX_ACCESSIBILITY_ALWAYS_ON"] = "1" }
        return environment
    }

    /// Writes `colourScheme` into `configHome`'s kdeglobals, as Plasma's own settings write it.
    public static func writeColourScheme(_ colourScheme: ColourScheme, configHome: URL) throws {
        try FileManager.default.createDirectory(at: configHome, withIntermediateDirectories: true)
        try Data(contentsOf: URL(fileURLWithPath: "/usr/share/color-schemes/\(colourScheme.rawValue).colors"))
            .write(to: configHome.appendingPathComponent("kdeglobals"))
    }

    /// plasmoidviewer's arguments: `applet` in `form`, its window `size` big.
    public static func arguments(showing applet: String = Plasma.applet, form: Form, size: String = "1280x900") -> [String] {
        ["-a", applet, "-s", size] + (form == .panel ? ["-f", "horizontal"] : [])
    }

    /// A Plasma not started yet: ``launch(_:)`` starts its plasmoidviewer.
    private init(
        display: VirtualDisplay, form: Form, environment: [String: String], showing: String, session: [String: String], configHome: URL,
        output: ProgramOutput
    ) {
        (self.form, self.showing) = (form, showing)
        super.init(display: display, environment: environment, process: Process(), session: session, configHome: configHome, output: output)
    }

    /// Starts plasmoidviewer in `colourScheme` (kdeglobals, as Plasma's own settings write it)
    /// and waits until it shows: the applet's QML module in its memory (the applet's QML imports
    /// it, so the applet is loaded), and its window mapped and given the keyboard's focus, as a
    /// window manager gives it to the window a person clicks (with none on the display, Qt would
    /// take no key).
    private func launch(_ colourScheme: ColourScheme) async throws {
        try Self.writeColourScheme(colourScheme, configHome: configHome)
        let viewer = try output.run(Self.executable, Self.arguments(showing: showing, form: form), environment: everything)
        process = viewer
        let module = "/org/widgethost/plasmoid/"
        var missing = "the applet's QML module (\(module)) in its memory"
        let shown = await poll(timeout: 60) {
            // Read to its end: String(contentsOfFile:) reads a /proc file's first 4 KiB only.
            let maps = (try? FileHandle(forReadingAtPath: "/proc/\(viewer.processIdentifier)/maps")?.readToEnd()) ?? nil
            guard viewer.isRunning, showing != Self.applet || String(decoding: maps ?? Data(), as: UTF8.self).contains(module) else {
                return false
            }
            missing = "its window, given the keyboard's focus"
            // Found and focused in one go: a window plasmoidviewer maps as it starts can be gone
            // the next moment.
            let focused = try? await runCommand(
                "/usr/bin/xdotool", ["search", "--onlyvisible", "--class", "plasmoidviewer", "windowfocus", "--sync"], environment: everything,
                timeout: 10)
            return focused?.succeeded == true
        }
        guard shown else {
            throw PrivateBusError(
                "plasmoidviewer did not show \(showing) within 60 s: \(viewer.isRunning ? "no sign of \(missing)" : "it exited"); it printed:\n\(printed().suffix(6000))")
        }
    }

    /// Ends plasmoidviewer and starts it again in `colourScheme`, on the same display and bus.
    public func restart(colourScheme: ColourScheme) async throws {
        endProcess(process)
        try await launch(colourScheme)
    }

    /// renderers/plasma/install, which builds the applet with CMake, run from the source
    /// tree holding `source` (the renderers/plasma folder).
    public static func installScript(_ source: URL) -> String { source.appendingPathComponent("install").path }

    /// One build at a time: every install from a tree shares its build folder.
    private static let gate = AsyncGate(limit: 1)

    /// Installs the applet from `source` for Plasma 5 into `prefix`, with `environment` added
    /// to the install script's; returns where its QML module went and what the script printed.
    /// The build is kept in the tree's `.build/plasma-applet`, so that only the first install
    /// of a run builds (and another one only what changed).
    public static func install(_ source: URL, into prefix: URL, environment: [String: String] = [:]) async throws -> (
        qmlDirectory: String, output: String
    ) {
        let build = source.deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent(".build/plasma-applet")
        await gate.acquire()
        defer { Task { await gate.release() } }
        let result = try await runCommand(
            installScript(source), ["--plasma", "5", "--build-dir", build.path, prefix.path], adding: environment, timeout: 600)
        guard result.succeeded, let line = result.stdout.split(separator: "\n").first(where: { $0.contains("its QML module in ") }) else {
            throw PrivateBusError("renderers/plasma/install failed: \(result)")
        }
        return (String(line[line.range(of: "its QML module in ")!.upperBound...]), result.stdout)
    }
}

extension PrivateBus {
    /// Makes the AT-SPI accessibility bus startable on this bus, where toolkits and AT-SPI
    /// clients find it as on a desktop. Its socket goes in `runtime` (made private); settings
    /// schemas and icons come from `dataDirs`. With `display`, the bus's launcher also puts
    /// the bus's address on that X display (the root window's AT_SPI_BUS), where Qt reads it
    /// as it starts: Qt 5 asking the session bus instead races its own start-up when the
    /// accessibility bus is already running.
    public func installAccessibilityBus(runtime: URL, dataDirs: String, display: String? = nil) throws {
        try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: runtime.path)
        try installService(
            name: "org.a11y.Bus",
            exec: "/usr/bin/env \(display.map { "DISPLAY=\($0) " } ?? "")XDG_DATA_DIRS=\(dataDirs) XDG_RUNTIME_DIR=\(runtime.path) /usr/libexec/at-spi-bus-launcher")
    }
}
