import ArgumentParser
import Foundation
import PrivateBus
import VirtualDesktop

/// What the GNOME Shell extension costs the shell it runs in: a real
/// `gnome-shell --x11` on Xvfb with the extension, widget-hostd and an app on
/// a private bus, measured as ``DesktopBench`` measures every renderer, from the
/// extension disabled (docs/gnome-shell.md#benchmark).
struct ShellBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "shell",
        abstract: "GNOME Shell with the extension: RSS, CPU and idle wakeups at 0, 20 and 200 widgets; SetContent → drawn p50/p99.",
        discussion: """
            Needs gnome-shell (43 or later), Xvfb, gjs, xdotool and gdbus; without one of them it says \
            which and exits 0 without measuring. Everything it starts is ended when it finishes, fails or is interrupted.
            """)

    @OptionGroup var options: DesktopBenchOptions

    func run() async throws {
        let bench = DesktopBench(
            options: options, command: "shell", program: "gnome-shell", part: "extension", without: ("extension disabled", "disabled"),
            names: { $0.contains(GnomeShell.extensionUUID) })
        let tools = [
            (GnomeShell.executable, "gnome-shell"), ("/usr/bin/Xvfb", "xvfb"), ("/usr/bin/gjs", "gjs"), ("/usr/bin/xdotool", "xdotool"),
            ("/usr/bin/gdbus", "libglib2.0-bin"),
        ]
        try await bench.run(tools: tools) {
            let version = try await runCommand(GnomeShell.executable, ["--version"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            return "\(version) --x11 on Xvfb 1280×900, widget-hostd and an app on a private bus"
        } start: { bench, desktop in
            let shell = try await GnomeShell.start(
                extension: DesktopBench.repository.appendingPathComponent("renderers/gnome-shell"), root: desktop.root, session: desktop.session,
                runtime: desktop.runtime, accessibility: false)
            desktop.teardown.add { shell.stop() }
            try await shell.setExtensionEnabled(false)
            let disabled = try await bench.quiet(shell)
            try await shell.setExtensionEnabled(true)
            return (shell, disabled)
        }
    }
}
