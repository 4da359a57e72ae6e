import ArgumentParser
import Foundation
import PrivateBus
import VirtualDesktop

/// What the KDE Plasma applet costs the Plasma shell it runs in: plasmoidviewer,
/// Plasma's own shell container, on Xvfb with the applet on its desktop
/// containment, as the tests start it, beside widget-hostd and an app on a
/// private bus; measured as ``DesktopBench`` measures every renderer, from
/// plasmoidviewer showing a stock applet that draws nothing
/// (docs/plasma.md#cost).
struct PlasmaBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "plasma",
        abstract: "KDE Plasma's plasmoidviewer with the applet: RSS, CPU and idle wakeups at 0, 20 and 200 widgets; SetContent → drawn p50/p99.",
        discussion: """
            Needs plasmoidviewer (plasma-sdk, with plasma-desktop), Xvfb and xdotool, and cmake and g++ to build the applet's \
            QML module (docs/plasma.md#install); without one of them it says which and exits 0 without measuring. Everything it \
            starts is ended when it finishes, fails or is interrupted.
            """)

    @OptionGroup var options: DesktopBenchOptions

    /// What plasmoidviewer shows without WidgetHost's applet: Plasma's panel spacer, an
    /// applet of plasma-desktop that draws nothing and runs no code of its own.
    static let empty = "org.kde.plasma.panelspacer"

    func run() async throws {
        let bench = DesktopBench(
            options: options, command: "plasma", program: "plasmoidviewer", part: "applet", without: ("without the applet", "without"),
            names: { $0.contains(Plasma.applet) || $0.contains("org/widgethost/plasmoid") })
        let tools = [
            (Plasma.executable, "plasma-sdk plasma-desktop"), ("/usr/bin/Xvfb", "xvfb"), ("/usr/bin/xdotool", "xdotool"),
            ("/usr/bin/cmake", "cmake"), ("/usr/bin/c++", "g++"),
        ]
        try await bench.run(tools: tools) {
            // Without a display Qt would abort before plasmoidviewer prints its version.
            let version = try await runCommand(Plasma.executable, ["--version"], adding: ["QT_QPA_PLATFORM": "offscreen"])
            return "\(version.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) (Plasma's desktop containment) on Xvfb 1280×900, "
                + "widget-hostd and an app on a private bus"
        } start: { bench, desktop in
            let source = DesktopBench.repository.appendingPathComponent("renderers/plasma")
            func start(showing applet: String) async throws -> Plasma {
                let plasma = try await Plasma.start(
                    applet: source, root: desktop.root, bus: desktop.bus, session: desktop.session, runtime: desktop.runtime,
                    accessibility: false, showing: applet)
                desktop.teardown.add { plasma.stop() }
                return plasma
            }
            let empty = try await start(showing: Self.empty)
            let without = try await bench.quiet(empty)
            empty.stop()
            return (try await start(showing: Plasma.applet), without)
        }
    }
}
