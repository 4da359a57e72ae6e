import Foundation
import PrivateBus

/// A real `gnome-shell --x11` with the WidgetHost extension
/// (renderers/gnome-shell), for the tests and the benchmark: on a virtual
/// display of its own, with the caller's private session bus and a second
/// private bus as its system bus, the extension installed by its install
/// script and enabled through GSettings in a keyfile
/// (`GSETTINGS_BACKEND=keyfile`), so nothing of the machine's session is
/// touched. ``stop()`` ends everything it started.
public final class GnomeShell: DesktopProgram, @unchecked Sendable {
    public static let extensionUUID = "widgethost@widgethost.org"
    public static let executable = "/usr/bin/gnome-shell"

    public let systemBus: PrivateBus

    /// Installs the extension from `source` (the renderers/gnome-shell folder)
    /// into `$XDG_DATA_HOME` of `session` (the environment of the session
    /// bus, with the XDG folders), enables it in `$XDG_CONFIG_HOME`'s
    /// keyfile, starts the shell with its files under `root` and waits until
    /// the extension is enabled and the overview the shell starts in is
    /// closed. `dataDirs` is the shell's `XDG_DATA_DIRS` (settings schemas and
    /// icons), `runtime` its private `XDG_RUNTIME_DIR`; `accessibility` turns
    /// the toolkit's accessibility (AT-SPI) on.
    public static func start(
        extension source: URL, root: URL, session: [String: String], dataDirs: String = "/usr/share", runtime: URL,
        accessibility: Bool = true, colourScheme: String = "default"
    ) async throws -> GnomeShell {
        guard let dataHome = session["XDG_DATA_HOME"], let config = session["XDG_CONFIG_HOME"] else {
            throw PrivateBusError("the session's environment sets no XDG_DATA_HOME or XDG_CONFIG_HOME for the shell's extension and settings")
        }
        let configHome = URL(fileURLWithPath: config)
        let install = try await runCommand(source.appendingPathComponent("install").path, [dataHome], environment: session)
        guard install.succeeded else { throw PrivateBusError("renderers/gnome-shell/install failed: \(install)") }
        try writeSettings(configHome, colourScheme: colourScheme, accessibility: accessibility)

        var systemBus: PrivateBus?
        var display: VirtualDisplay?
        do {
            systemBus = try PrivateBus(environment: session)
            display = try VirtualDisplay(directory: root)
            let home = root.appendingPathComponent("home")
            try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
            let environment = [
                "DISPLAY": display!.display, "XDG_DATA_DIRS": dataDirs, "XDG_RUNTIME_DIR": runtime.path,
                "HOME": home.path, "XDG_CACHE_HOME": root.appendingPathComponent("cache").path,
                "DBUS_SYSTEM_BUS_ADDRESS": systemBus!.address, "GSETTINGS_BACKEND": "keyfile",
            ]
            let output = ProgramOutput(in: root, name: "gnome-shell")
            let process = try output.run(executable, ["--x11", "--replace", "--sm-disable"], environment: session.merging(environment) { _, new in new })
            let shell = GnomeShell(
                display: display!, systemBus: systemBus!, process: process, environment: environment, session: session, configHome: configHome,
                output: output)
            do {
                try await shell.waitUntilReady()
            } catch {
                shell.stop()
                throw error
            }
            return shell
        } catch {
            display?.stop()
            systemBus?.stop()
            throw error
        }
    }

    /// Its environment adds the system bus to the display and the folders.
    private init(
        display: VirtualDisplay, systemBus: PrivateBus, process: Process, environment: [String: String], session: [String: String],
        configHome: URL, output: ProgramOutput
    ) {
        self.systemBus = systemBus
        super.init(display: display, environment: environment, process: process, session: session, configHome: configHome, output: output)
    }

    /// The keyfile GSettings reads with GSETTINGS_BACKEND=keyfile (and follows as it changes):
    /// the extension enabled, accessibility on or off, no animations, no notification banners
    /// over the desktop, the colour scheme, and the groups `more` adds.
    public static func writeSettings(_ configHome: URL, colourScheme: String, accessibility: Bool = true, more: String = "") throws {
        let settings = configHome.appendingPathComponent("glib-2.0/settings")
        try FileManager.default.createDirectory(at: settings, withIntermediateDirectories: true)
        try """
        [org/gnome/shell]
        enabled-extensions=['\(extensionUUID)']
        welcome-dialog-last-shown-version='999'

        [org/gnome/desktop/interface]
        toolkit-accessibility=\(accessibility)
        enable-animations=false
        color-scheme='\(colourScheme)'

        [org/gnome/desktop/notifications]
        show-banners=false

        \(more)
        """.write(to: settings.appendingPathComponent("keyfile"), atomically: true, encoding: .utf8)
    }

    /// Changes the desktop's colour scheme, as the Settings app does; the shell follows the keyfile.
    public func writeSettings(colourScheme: String, accessibility: Bool = true) throws {
        try Self.writeSettings(configHome, colourScheme: colourScheme, accessibility: accessibility)
    }

    /// Waits until the shell has enabled the extension, then leaves the overview the shell starts in.
    private func waitUntilReady() async throws {
        let everything = self.everything
        try await Self.waitUntilReady(
            running: { [process] in process.isRunning }, log: { [self] in printed() }, call: { [self] in try await call($0, $1) },
            press: { _ = try await runCommand("/usr/bin/xdotool", ["key", $0], environment: everything) })
    }

    /// Waits until a shell (`running`, which logs `log`) has enabled the extension, then leaves
    /// the overview it starts in by pressing Escape with `press`; `call` calls a method of the
    /// shell at /org/gnome/Shell. For any shell the tests start, on X11 or Wayland.
    public static func waitUntilReady(
        running: () -> Bool, log: () -> String, call: (String, [String]) async throws -> CommandResult,
        press: (String) async throws -> Void
    ) async throws {
        var state = ""
        let enabled = await poll(timeout: 30) {
            guard running() else { return false }
            state = (try? await call("org.gnome.Shell.Extensions.GetExtensionInfo", [extensionUUID]))?.stdout ?? ""
            return state.contains("'state': <1.0>")
        }
        guard enabled else {
            throw PrivateBusError("gnome-shell did not enable \(extensionUUID): \(state)\nits log:\n\(log().suffix(6000))")
        }
        func overviewShown() async -> Bool? {
            let reply = try? await call("org.freedesktop.DBus.Properties.Get", ["org.gnome.Shell", "OverviewActive"])
            return reply?.stdout.contains("<true>") == true ? true : reply?.stdout.contains("<false>") == true ? false : nil
        }
        // The overview opens once the shell has started up; then Escape closes it.
        _ = await poll(timeout: 30) { await overviewShown() == true }
        let left = await poll(timeout: 15) {
            if await overviewShown() == false { return true }
            try? await press("Escape")
            try? await Task.sleep(for: .milliseconds(300))
            return false
        }
        guard left else { throw PrivateBusError("the overview did not close on Escape; the shell's log:\n\(log().suffix(6000))") }
    }

    /// What `GetExtensionInfo` says of the extension (its `state` is 1.0 when enabled, 2.0 when disabled).
    public func extensionState() async -> String? {
        try? await call("org.gnome.Shell.Extensions.GetExtensionInfo", [Self.extensionUUID]).stdout
    }

    /// Enables or disables the extension through the shell's own D-Bus interface, as the
    /// Extensions app does, and waits until the shell says it is so.
    public func setExtensionEnabled(_ enabled: Bool) async throws {
        let method = enabled ? "EnableExtension" : "DisableExtension"
        let result = try await call("org.gnome.Shell.Extensions.\(method)", [Self.extensionUUID])
        let state = enabled ? "'state': <1.0>" : "'state': <2.0>"
        guard result.stdout.contains("true"), await poll(timeout: 10, { await extensionState()?.contains(state) == true }) else {
            throw PrivateBusError("gnome-shell did not \(enabled ? "enable" : "disable") \(Self.extensionUUID): \(result)")
        }
    }

    /// `gdbus call` of a method of the shell at /org/gnome/Shell.
    public func call(_ method: String, _ arguments: [String] = []) async throws -> CommandResult {
        try await runCommand(
            "gdbus", ["call", "--session", "--dest", "org.gnome.Shell", "--object-path", "/org/gnome/Shell", "--method", method] + arguments,
            environment: session)
    }

    /// The shell's system bus ends after the shell.
    override func ended() { systemBus.stop() }
}
