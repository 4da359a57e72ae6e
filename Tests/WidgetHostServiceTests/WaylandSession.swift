import DBus
import Foundation
import PrivateBus
import Testing
import VirtualDesktop

/// A renderer on a Wayland compositor next to the Tap Me app as a GTK 4
/// application with a window (Tests/Fixtures/gapp/tapme_gtk.py), a Wayland
/// client of the same compositor: the compositor raises the app's window for an
/// xdg-activation token it minted, and for no other. What the Wayland tests of
/// the GNOME Shell extension and widget-board (in Mutter) and of the Plasma
/// applet (in KWin) share.
protocol WaylandSession: RendererSession {
    /// The compositor, as the messages of a failure name it: Mutter, KWin.
    static var compositor: String { get }
    /// Whether `token`, as the app recorded it (GVariant text, quoted), is an xdg-activation
    /// token the compositor minted, as it mints them.
    static func minted(_ token: String) -> Bool
    /// What a GTK app runs with to show its windows on the compositor.
    var gtkEnvironment: [String: String] { get }
    /// Another GTK app's process, org.example.Other, once `startOtherApp` started it: the session ends it.
    var otherApp: Launched? { get set }
    /// The compositor's windows, as it describes them.
    func windows() async throws -> [[String: Any]]
    /// The app id of the window of `windows` that has the focus.
    static func focused(_ windows: [[String: Any]]) -> String?
}

extension WaylandSession {
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
        otherApp = try fixture.launch(
            "/usr/bin/python3", [script, "org.example.Other"],
            environment: gtkEnvironment.merging(["WIDGETHOST_TEST_RECORD": fixture.root.appendingPathComponent("other.jsonl").path]) { _, new in new })
    }

    /// Opens the Tap Me app's window, then another app's window in front of it, which takes the
    /// focus; returns Tap Me's record of losing it.
    func putTapMeBehind() async throws -> [String: Any] {
        try await activateTapMe()
        _ = try await waitForRecord { $0["call"] as? String == "window" && $0["active"] as? Bool == true }
        try startOtherApp()
        var windows: [[String: Any]] = []
        let behind = await eventually(timeout: 10) {
            windows = (try? await self.windows()) ?? []
            return Self.focused(windows) == "org.example.Other"
        }
        #expect(behind, "another app's window must have the focus before the tap: \(windows)")
        return try await waitForRecord { $0["call"] as? String == "window" && $0["active"] as? Bool == false }
    }

    /// The negative control: `widget` tapped straight on the bus, as a renderer that asked its
    /// compositor for nothing would, with a token the compositor never minted and then with none.
    /// The app opens the URL each time, with what the tap carried, and presents its window; the
    /// compositor raises it for neither, so the app's window stays behind the other's.
    func expectTapsWithoutMintedTokensLeaveTheAppBehind(_ widget: String) async throws {
        let renderer = try await fixture.connect()
        defer { renderer.close() }
        for token in ["bogus", nil] as [String?] {
            let before = opens().count
            let (outcome, _) = try await renderer.tap(widget, "", token.map { ["activation_token": .string($0)] } ?? [:])
            #expect(outcome == "open-url")
            let open = try await waitForRecord { _ in self.opens().count > before }
            let received = opens().last ?? [:]
            let platform = received["platform_data"] as? [String: String] ?? [:]
            #expect(platform["activation-token"] == token.map { "'\($0)'" }, "the app gets the token the tap carried: \(received)")
            // The app presents its window at once; the compositor has time to raise it, which it must not.
            try await Task.sleep(for: .seconds(3))
            let focused = Self.focused(try await windows())
            let what = token.map { "the token '\($0)'" } ?? "no token"
            #expect(focused == "org.example.Other", "with \(what) the app's window must stay behind, yet \(focused ?? "nothing") has the focus")
            let since = received["time"] as? Double ?? open["time"] as? Double ?? 0
            #expect(!records().contains { $0["call"] as? String == "window" && $0["active"] as? Bool == true && ($0["time"] as? Double ?? 0) >= since },
                "the app's window became active with \(what): \(records())")
        }
    }

    /// The URLs the app was asked to open, in order.
    func opens() -> [[String: Any]] { records().filter { $0["call"] as? String == "open" } }

    /// A real click's tap, the app's open after the first `opened`: the app opens `url` with an
    /// xdg-activation token the compositor minted (as `activation-token` and `desktop-startup-id`),
    /// and its window, behind since `lost`, gets the focus, as both the app and the compositor say.
    func expectRaised(since lost: [String: Any], byTapOn url: String, after opened: Int) async throws {
        _ = try await waitForRecord { _ in self.opens().count > opened }
        let open = opens()[opened]
        #expect(open["uris"] as? [String] == [url])
        let platform = open["platform_data"] as? [String: String] ?? [:]
        // The host passes the token under both names.
        let token = platform["activation-token"] ?? ""
        #expect(Self.minted(token), "the app must receive an xdg-activation token \(Self.compositor) minted: \(platform)")
        #expect(platform["desktop-startup-id"] == token, "\(platform)")

        // GTK hands the token to the compositor as it presents the window, and the compositor
        // honours a token of its own: the window gets the focus back.
        let since = max(open["time"] as? Double ?? 0, lost["time"] as? Double ?? 0)
        let raised = await eventually(timeout: 10) {
            self.records().contains { $0["call"] as? String == "window" && $0["active"] as? Bool == true && ($0["time"] as? Double ?? 0) > since }
        }
        #expect(raised, "\(Self.compositor) must honour the token and give the app's window the focus; the app recorded \(records())")
        let windows = try await windows()
        #expect(Self.focused(windows) == "org.example.TapMe", "\(Self.compositor)'s focus window: \(windows)")
    }
}
