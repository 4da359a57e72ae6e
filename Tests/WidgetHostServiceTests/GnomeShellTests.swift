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
        // On X11 the shell's launch context gives a startup id of its own making: 'gnome-shell/App/…_TIME…'.
        let medium = try await shell.tapTheDesktop(toggleRole: "toggle button", minter: "the shell") { token in
            token.hasPrefix("'gnome-shell/") && token.contains("_TIME")
        }
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

    @Test("A tap the app answers with an error shows the host's message on the widget")
    func errorShown() async throws {
        let session = try await ShellSession.start()
        defer { session.stop() }
        try await session.expectErrorShownOnWidget()
    }

    @Test("A Live Activity in the top bar: a pill right of the clock showing its compact presentations, a click opens the app at its URL with a token the shell minted, its expanded presentation in a popup whose link works; it follows Update, a more relevant activity taking its place, a host restart, the extension's disabling and End")
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

        // Two activities: only the more relevant one is in the top bar, in its compact form, which has room there.
        let timer = try await shell.app.startActivity(
            "TimerAttributes",
            #"{"widgetURL":"tap-me-widget://timer","lockScreen":{"type":"text","text":"Timer"},"compactLeading":{"type":"text","text":"Timer"},"compactTrailing":{"type":"text","text":"5:00"},"minimal":{"type":"text","text":"5:00"},"expanded":{"type":"text","text":"Timer 5:00"}}"#,
            ["relevance": .double(5)])
        let shown = try await shell.element("Timer 5:00", role: "push button", timeout: 3)
        #expect(shown.y < 8 && shown.x > 640, "in the top bar, right of the clock: \(shown)")
        try await shell.drive("gone", "Delivery 7 min", "--timeout", "2")
        try await shell.drive("gone", "Delivery", "--timeout", "2")
        try await shell.drive("click", "Timer 5:00", "--role", "push button")
        let compact = try await shell.waitForRecord { ($0["uris"] as? [String]) == ["tap-me-widget://timer"] }
        let compactSource = (compact["platform_data"] as? [String: String])?["org.widgethost.source"] ?? ""
        #expect(compactSource.contains("<'compactLeading'>") || compactSource.contains("<'compactTrailing'>"), "\(compact)")
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
        shell.expectNoClutterCriticals()
    }

    @Test("On a top bar without room for the compact presentations (a narrow screen), the pill shows the activity's minimal presentation; the clock without its date leaves room, and the pill turns compact, then minimal again with the date back; a click taps the minimal presentation")
    func crowdedBar() async throws {
        // 612 pixels: the top bar's sides (157 wide on the left) leave room for the clock with its
        // date and the minimal presentation, or for the clock without its date and the compact ones.
        let shell = try await ShellSession.start(screenWidth: 612)
        defer { shell.stop() }
        let activity = try await shell.startDelivery(eta: 10)
        // Named by its minimal presentation, the delivery icon's label.
        let pill = try await shell.element("Delivery", role: "push button")
        #expect(pill.y < 8 && pill.height <= 40 && pill.x > 306, "in the top bar, right of the clock: \(pill)")
        try await shell.drive("gone", "Delivery 10 min", "--timeout", "2")

        // The top bar laid out anew with a narrower clock (no date), the compact presentations have room; with the date back, not.
        try await shell.setShellSetting("org.gnome.desktop.interface", "clock-show-date", "false")
        try await shell.drive("find", "Delivery 10 min", "--role", "push button", "--timeout", "5")
        try await shell.setShellSetting("org.gnome.desktop.interface", "clock-show-date", "true")
        try await shell.drive("find", "Delivery", "--role", "push button", "--timeout", "5")
        try await shell.drive("gone", "Delivery 10 min", "--timeout", "2")

        try await shell.drive("click", "Delivery", "--role", "push button")
        let open = try await shell.waitForRecord { $0["call"] as? String == "open" }
        #expect(open["uris"] as? [String] == ["delivery-tracker://order/1234"], "the minimal presentation opens the activity's URL")
        let source = (open["platform_data"] as? [String: String])?["org.widgethost.source"] ?? ""
        #expect(source.contains("'activity_id': <'\(activity.split(separator: "/").last!)'>") && source.contains("<'minimal'>"),
            "a tap on the minimal presentation: \(source)")
        try await shell.expectNoExtensionErrors()
        shell.expectNoClutterCriticals()
    }

    @Test("A widget dragged with the mouse stays where it is dropped, kept in GSettings through a host restart and a shell restart; the others flow into the space it left; a click without a move still taps")
    func dragging() async throws {
        let shell = try await ShellSession.start()
        defer { shell.stop() }
        let red = try await shell.place(try exampleFile("tap-me/red.json"))
        try await shell.place(#"{"type":"text","text":"Second"}"#)
        let before = try await shell.element("Tap for red", role: "push button")
        let second = try await shell.element("Second", role: "push button")
        // The primary monitor's work area starts a margin (24) above and left of the first widget.
        let (areaX, areaY) = (before.x - 24, before.y - 24)

        // Pressed on the widget's text, moved and released: the widget follows the pointer and stays where it was dropped.
        try await shell.drag(fromX: before.x + 40, y: before.y + 40, by: 420, 260) {
            let held = try await shell.element("Tap for red", role: "push button")
            #expect(held.x == before.x + 420 && held.y == before.y + 260, "following the pointer before the release: \(held)")
        }
        let after = try await shell.element("Tap for red", role: "push button")
        #expect(after.x == before.x + 420 && after.y == before.y + 260, "dropped 420, 260 further: \(before) → \(after)")
        #expect(shell.display.colour(x: after.x + 20, y: after.y + after.height - 20) == "#ff0000", "drawn where it was dropped")
        try await Task.sleep(for: .milliseconds(500))
        #expect(!shell.records().contains { $0["call"] as? String == "open" }, "a drag is no tap: \(shell.records())")
        // Kept in the extension's GSettings: (monitor, x, y) from the work area's top left.
        let id = String(red.split(separator: "/").last ?? "")
        let saved = "{'\(id)': (0, \(after.x - areaX), \(after.y - areaY))}"
        #expect(await eventually(timeout: 3) { shell.extensionSettings()["widget-positions"] == saved },
            "widget-positions is \(shell.extensionSettings()), not \(saved)")
        // The widget never dragged flows into the free space: the first place, which the red one left.
        let flowed = try await shell.element("Second", role: "push button")
        #expect(flowed.x == before.x && flowed.y == before.y && second.x > before.x, "\(second) → \(flowed)")

        // A click without a move taps, as ever.
        try await shell.drive("click", "Tap for red", "--role", "push button")
        _ = try await shell.waitForRecord { ($0["uris"] as? [String]) == ["tap-me-widget://show-red"] }

        // The place outlives the host's restart and the shell's.
        await shell.fixture.stopHost()
        try await shell.drive("gone", "Tap for red", "--timeout", "5")
        try await shell.fixture.startHost()
        let back = try await shell.element("Tap for red", role: "push button")
        #expect(back.x == after.x && back.y == after.y, "after the host's restart: \(back)")
        try await shell.restartShell()
        let again = try await shell.element("Tap for red", role: "push button")
        #expect(again.x == after.x && again.y == after.y, "after the shell's restart: \(again)")
        #expect(shell.extensionSettings()["widget-positions"] == saved)
        try await shell.expectNoExtensionErrors()
    }

    @Test("Widgets are added from the desktop's menu, where it opened, and from the top bar's WidgetHost menu; a widget's own menu configures it with the app's choices and removes it")
    func menus() async throws {
        let shell = try await ShellSession.start(rangers: ["EMOJI_RANGERS_STEP": "600"])
        defer { shell.stop() }
        // A secondary click on the wallpaper opens the desktop's menu, Add Widget first; the kinds come from ListBundles.
        try await shell.xdotool("mousemove", "--sync", "700", "400", "click", "3")
        try await shell.drive("find", "Change Background…", "--role", "label")
        try await shell.drive("click", "Add Widget", "--role", "menu item")
        try await shell.drive("find", "Emoji Rangers", "--role", "menu item")
        try await shell.drive("click", "Ranger Detail, Small", "--role", "menu item")
        let placed = try await shell.rangersWidget { _ in true }
        #expect(placed.family == "systemSmall")
        let ranger = try await shell.element("Spouty, 40% health", role: "push button")
        #expect(ranger.x == 700 && ranger.y == 400, "placed where the menu opened: \(ranger)")

        // The top bar's WidgetHost menu adds one too, which flows into the free space.
        try await shell.drive("click", "WidgetHost", "--role", "menu")
        try await shell.drive("click", "Add Widget", "--role", "menu item")
        try await shell.drive("click", "Tap Me, Medium", "--role", "menu item")
        _ = await eventually(timeout: 5) { (try? await shell.placedWidgets(of: "org.example.TapMe").count) == 1 }
        let tapMe = try await shell.placedWidgets(of: "org.example.TapMe")
        #expect(tapMe.map(\.family) == ["systemMedium"], "\(tapMe)")
        let drawn = try await shell.element("TapMeWidget", role: "push button")
        #expect(drawn.width == 364 && drawn.x < ranger.x, "\(drawn)")

        // The widget's own menu: Configure offers the app's heroes (GetConfigurationOptions); the app gets the one chosen.
        try await shell.xdotool("mousemove", "--sync", "\(ranger.x + 30)", "\(ranger.y + 30)", "click", "3")
        try await shell.drive("click", "Configure", "--role", "menu item")
        try await shell.drive("click", "🦄 Egghead", "--role", "menu item")
        _ = try await shell.rangersWidget { $0["hero"] == .string("egghead") }
        try await shell.drive("find", "Egghead, 40% health", "--role", "push button")
        #expect(shell.fixture.records(shell.rangersRecord).contains {
            $0["call"] as? String == "timeline" && (($0["configuration"] as? [String: Any])?["hero"] as? String) == "egghead"
        }, "the app was asked for the chosen hero's timeline: \(shell.fixture.records(shell.rangersRecord))")

        // Remove Widget removes it from the host, and so from the desktop.
        try await shell.xdotool("mousemove", "--sync", "\(ranger.x + 30)", "\(ranger.y + 30)", "click", "3")
        try await shell.drive("click", "Remove Widget", "--role", "menu item")
        try await shell.drive("gone", "Egghead, 40% health", "--timeout", "3")
        #expect(try await shell.placedWidgets(of: "org.example.EmojiRangers").isEmpty, "removed from the host, not just the desktop")
        #expect(!shell.records().contains { $0["call"] as? String == "open" }, "no menu click is a tap: \(shell.records())")
        try await shell.expectNoExtensionErrors()
    }

    @Test("The keyboard reaches the widgets: Super+Alt+W and the top bar's Focus Widgets focus the first in reading order, Tab and Shift+Tab go through the widgets and their links, the arrows from widget to widget, Enter and Space tap, Menu opens a widget's menu, Ctrl and an arrow move it, Escape goes back")
    func keyboard() async throws {
        let shell = try await ShellSession.start()
        defer { shell.stop() }
        // The shortcut gives the first widget the focus; Enter taps it.
        try await shell.focusTwoWidgets()
        try await shell.drive("key", "Return")
        _ = try await shell.waitForRecord { ($0["uris"] as? [String]) == ["tap-me-widget://show-red"] }
        // Tab: the next widget (its background taps its widgetURL), then the link in it.
        try await shell.drive("key", "Tab")
        try await shell.drive("focused", "Tap Me Show Red View")
        try await shell.drive("key", "Return")
        _ = try await shell.waitForRecord { ($0["uris"] as? [String]) == ["tap-me-widget://show-blue"] }
        try await shell.drive("key", "Tab")
        try await shell.drive("focused", "Show Red View")
        try await shell.drive("key", "space")
        _ = await eventually(timeout: 5) { shell.records().filter { ($0["uris"] as? [String]) == ["tap-me-widget://show-red"] }.count == 2 }
        let links = shell.records().filter { ($0["uris"] as? [String]) == ["tap-me-widget://show-red"] }
        #expect(links.count == 2, "Space on the link opens its URL: \(shell.records())")
        let linkSource = (links.last?["platform_data"] as? [String: String])?["org.widgethost.source"] ?? ""
        #expect(linkSource.contains("'via': <'link'>"), "\(links)")

        // Shift+Tab goes back to the widget; Left to the widget left of it.
        try await shell.drive("key", "shift+Tab")
        try await shell.drive("focused", "Tap Me Show Red View")
        try await shell.drive("key", "Left")
        try await shell.drive("focused", "Tap for red")
        // Ctrl and an arrow move the focused widget, and it stays there as a dragged one does.
        let red = try await shell.element("Tap for red", role: "push button")
        try await shell.drive("key", "ctrl+Down", "ctrl+Down")
        let moved = try await shell.element("Tap for red", role: "push button")
        #expect(moved.x == red.x && moved.y == red.y + 32, "two steps of 16 down: \(red) → \(moved)")
        #expect(await eventually(timeout: 3) { shell.extensionSettings()["widget-positions"]?.contains("(0, 24, 56)") == true },
            "\(shell.extensionSettings())")
        // Menu opens the focused widget's own menu; Escape closes it.
        try await shell.drive("key", "Menu")
        try await shell.drive("find", "Remove Widget", "--role", "menu item", "--timeout", "3")
        try await shell.drive("key", "Escape")
        try await shell.drive("gone", "Remove Widget", "--timeout", "3")

        // Escape gives the keyboard back; the top bar's Focus Widgets brings it to the first widget again,
        // in reading order: the medium one, now that the red one is lower.
        try await shell.drive("key", "Escape")
        try await Task.sleep(for: .milliseconds(300))
        let away = try await runCommand(
            "/usr/bin/python3", [repositoryRoot.appendingPathComponent("Tests/Fixtures/board/drive.py").path, "--app", "gnome-shell", "focused", "--timeout", "0"],
            environment: shell.fixture.environment.merging(shell.environment) { _, new in new })
        #expect(!away.stdout.contains("Tap"), "Escape takes the focus off the widgets: \(away)")
        try await shell.drive("click", "WidgetHost", "--role", "menu")
        try await shell.drive("click", "Focus Widgets", "--role", "menu item")
        try await shell.drive("focused", "Tap Me Show Red View")
        try await shell.expectNoExtensionErrors()
        // The widgets' keys (and the pointer's moves over them) are no button events: asking them
        // for a button would trip Clutter's assertion once per key.
        shell.expectNoClutterCriticals()
    }

    @Test("A tap starts the app without taking the keyboard off the widgets: the shell moves the display's focus off its stage while the app starts, and gets it back at once, even when it never sees its stage lose the focus (another client held the keyboard meanwhile); the next Tab goes to the next widget")
    func keyboardKeptThroughTap() async throws {
        let shell = try await ShellSession.start()
        defer { shell.stop() }
        try await shell.focusTwoWidgets()
        // Held by another client, the keyboard's focus changes reach the stage only as grab and
        // ungrab: the shell's own way back to its stage (when it sees the stage lose the focus)
        // never comes, and a Tab after the tap went nowhere. A click taps meanwhile.
        let holder = try shell.fixture.launch(
            "/usr/bin/python3", [repositoryRoot.appendingPathComponent("Tests/Fixtures/gnome-shell/hold_keyboard.py").path],
            environment: shell.environment)
        defer { endProcess(holder.process) }
        #expect(await eventually(timeout: 10) { holder.printed().contains("held") }, "\(holder.printed())")
        try await shell.drive("click", "Tap for red", "--role", "push button")
        _ = try await shell.waitForRecord { ($0["uris"] as? [String]) == ["tap-me-widget://show-red"] }
        try await Task.sleep(for: .seconds(1))  // the shell has begun to wait for the app by now
        endProcess(holder.process)
        #expect(await eventually(timeout: 5) { !holder.process.isRunning }, "\(holder.printed())")
        try await shell.drive("focused", "Tap for red")
        try await shell.drive("key", "Tab")
        try await shell.drive("focused", "Tap Me Show Red View")
        try await shell.expectNoExtensionErrors()
    }

    @Test("The preferences open with gnome-extensions prefs; their switches hide and show the desktop's widgets and the top bar's Live Activities at once, and Reset Layout puts a dragged widget back in the flow")
    func preferences() async throws {
        let shell = try await ShellSession.start()
        defer { shell.stop() }
        try await shell.place(try exampleFile("tap-me/red.json"))
        try await shell.startDelivery(eta: 10)
        let before = try await shell.element("Tap for red", role: "push button")
        try await shell.drive("find", "Delivery 10 min", "--role", "push button")
        try await shell.drag(fromX: before.x + 40, y: before.y + 40, by: 300, 200)
        _ = await eventually(timeout: 3) { shell.extensionSettings()["widget-positions"] != nil }

        let prefs = try await shell.openPreferences()
        defer { prefs.stop() }
        try await shell.inPreferences("find", "Show Widgets on the Desktop", "--timeout", "15")
        try await shell.pressInPreferences("Show Widgets on the Desktop", role: "check box")
        try await shell.drive("gone", "Tap for red", "--timeout", "3")
        #expect(shell.extensionSettings()["show-widgets"] == "false")
        try await shell.pressInPreferences("Show Widgets on the Desktop", role: "check box")
        let shown = try await shell.element("Tap for red", role: "push button", timeout: 3)
        #expect(shown.x == before.x + 300 && shown.y == before.y + 200, "back where it was dragged: \(shown)")

        try await shell.pressInPreferences("Show Live Activities in the Top Bar", role: "check box")
        try await shell.drive("gone", "Delivery 10 min", "--timeout", "3")
        try await shell.pressInPreferences("Show Live Activities in the Top Bar", role: "check box")
        try await shell.drive("find", "Delivery 10 min", "--role", "push button", "--timeout", "3")

        try await shell.pressInPreferences("Reset Layout", role: "push button")
        #expect(await eventually(timeout: 3) {
            let element = try? await shell.element("Tap for red", role: "push button")
            return element?.x == before.x && element?.y == before.y
        }, "Reset Layout puts the widget back where it flowed: \(before)")
        #expect(shell.extensionSettings()["widget-positions"] == nil, "\(shell.extensionSettings())")
        try await shell.expectNoExtensionErrors()
    }

    @Test("The entry point for GNOME Shell 45 and later loads as an ES module with the shell's modules stubbed, lib/vocabulary.js holds the rendering vocabulary's declaration, and lib/'s functions compute what they should")
    func modules() async throws {
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("widgethost-gjs-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        // The extension as its install script lays it out: lib/declaration.js is made there.
        let data = work.appendingPathComponent("data")
        let install = try await runCommand(GnomeShellInstallTests.install, ["--shell-version", "45", data.path])
        #expect(install.succeeded, "\(install)")
        let extensionFolder = data.appendingPathComponent("gnome-shell/extensions/\(ShellSession.uuid)")
        // St and Clutter are the shell's own libraries, in its private folders.
        let result = try await runCommand(
            "/usr/bin/gjs",
            ["-m", repositoryRoot.appendingPathComponent("Tests/Fixtures/gnome-shell/modules.js").path,
             repositoryRoot.appendingPathComponent("renderers/gnome-shell").path, extensionFolder.path,
             work.appendingPathComponent("modules").path],
            adding: ["GI_TYPELIB_PATH": "/usr/lib/x86_64-linux-gnu/mutter-11:/usr/lib/gnome-shell",
                     "LD_LIBRARY_PATH": "/usr/lib/x86_64-linux-gnu/mutter-11:/usr/lib/gnome-shell"])
        #expect(result.succeeded && !result.stdout.contains("FAIL") && result.stdout.contains("ok the 45+ entry exports an Extension"), "\(result)")
    }
}

extension AppPeer {
    /// `LiveActivity.Update` of `activity` with a new content state, its content kept.
    func updateActivity(_ activity: String, state: [String: DBusValue]) async throws {
        try await update(activity, ["state": .vardict(state)])
    }

    /// `LiveActivity.End` of `activity` with the dismissal given.
    func endActivity(_ activity: String, dismissal: String) async throws {
        try await end(activity, ["dismissal": .string(dismissal)])
    }
}

/// renderers/gnome-shell/install, which needs no GNOME Shell when told the version.
@Suite("GNOME Shell extension's install script")
struct GnomeShellInstallTests {
    static let install = repositoryRoot.appendingPathComponent("renderers/gnome-shell/install").path

    @Test("It installs the entry point that fits the version, into DATADIR or else $XDG_DATA_HOME, its metadata naming that version (added for a shell newer than those listed), and refuses a shell too old", arguments: [
        ("43", "shell-43"), ("44.2", "shell-43"), ("45", "shell-45"), ("48.1", "shell-45"), ("49", "shell-45"),
    ])
    func entryPoints(version: String, entry: String) async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("widgethost-install-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: root) }
        let source = repositoryRoot.appendingPathComponent("renderers/gnome-shell")
        for (arguments, dataHome) in [([root.appendingPathComponent("given").path], "unused"), ([], root.appendingPathComponent("home").path)] {
            let result = try await runCommand(Self.install, ["--shell-version", version] + arguments, adding: ["XDG_DATA_HOME": dataHome])
            #expect(result.succeeded, "\(result)")
            let installed = URL(fileURLWithPath: arguments.first ?? dataHome).appendingPathComponent("gnome-shell/extensions/widgethost@widgethost.org")
            for (file, from) in [("extension.js", "\(entry)/extension.js"), ("prefs.js", "\(entry)/prefs.js"),
                                 ("stylesheet.css", "stylesheet.css"), ("lib/desktop.js", "lib/desktop.js")] {
                let copy = try? Data(contentsOf: installed.appendingPathComponent(file))
                #expect(copy != nil && copy == (try? Data(contentsOf: source.appendingPathComponent(from))), "\(file) is \(from) (GNOME Shell \(version))")
            }
            // The shell loads an extension only when its metadata lists the shell's major version:
            // the entry's metadata.json, with a newer major than it lists added.
            let major = String(version.prefix { $0 != "." })
            let metadata = try? JSONSerialization.jsonObject(with: Data(contentsOf: installed.appendingPathComponent("metadata.json"))) as? [String: Any]
            var expected = try #require(
                try JSONSerialization.jsonObject(with: Data(contentsOf: source.appendingPathComponent("\(entry)/metadata.json"))) as? [String: Any])
            let listed = expected["shell-version"] as? [String] ?? []
            expected["shell-version"] = listed.contains(major) ? listed : listed + [major]
            #expect(metadata.map { NSDictionary(dictionary: $0) } == NSDictionary(dictionary: expected),
                "metadata.json is \(entry)/metadata.json naming GNOME Shell \(major): \(metadata ?? [:])")
            // The rendering vocabulary's declaration, as a module the shell imports.
            let declaration = try String(contentsOf: repositoryRoot.appendingPathComponent("vocabulary/vocabulary.json"), encoding: .utf8)
            let module = try? String(contentsOf: installed.appendingPathComponent("lib/declaration.js"), encoding: .utf8)
            #expect(module?.contains("export const DECLARATION = \(declaration.trimmingCharacters(in: .newlines));") == true,
                "lib/declaration.js exports vocabulary/vocabulary.json (GNOME Shell \(version))")
            // The settings' schema, compiled where the shell's getSettings() looks for it.
            let compiled = installed.appendingPathComponent("schemas/gschemas.compiled").path
            #expect(FileManager.default.fileExists(atPath: compiled), "\(compiled) (GNOME Shell \(version))")
        }
        let old = try await runCommand(Self.install, ["--shell-version", "42", root.appendingPathComponent("old").path])
        #expect(old.status == 1 && old.stderr.contains("43 or later"), "\(old)")
    }

    @Test("Outside the source tree, without the vocabulary's declaration, it installs nothing and says what it needs")
    func needsDeclaration() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("widgethost-install-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: root) }
        let copy = root.appendingPathComponent("renderers/gnome-shell")
        try FileManager.default.createDirectory(at: copy.deletingLastPathComponent(), withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: repositoryRoot.appendingPathComponent("renderers/gnome-shell"), to: copy)
        let data = root.appendingPathComponent("data")
        let result = try await runCommand(copy.appendingPathComponent("install").path, ["--shell-version", "45", data.path])
        #expect(result.status == 1 && result.stderr.contains("vocabulary/vocabulary.json is missing: install from the whole source tree"),
            "\(result)")
        #expect(!FileManager.default.fileExists(atPath: data.path), "nothing is installed")
    }
}

/// A gnome-shell of the tests with the extension, next to the host and the Tap
/// Me app (see `HostFixture.prepareGnomeShell`): on a virtual X display
/// (`ShellSession`) or as a headless Wayland compositor (`WaylandShellSession`).
protocol GnomeShellSession: RendererSession {
    var shell: Launched { get }
    /// Presses and releases the key `name` (Escape) as a keyboard does.
    func press(_ name: String) async throws
}

extension GnomeShellSession {
    static var uuid: String { "widgethost@widgethost.org" }
    var driveOptions: [String] { ["--app", "gnome-shell"] }
    var rendererOutput: String { "the shell's log:\n\(shell.printed().suffix(4000))" }

    /// Waits until the shell has enabled the extension, then leaves the overview the shell starts in.
    func waitUntilReady() async throws {
        try await GnomeShell.waitUntilReady(
            running: { shell.process.isRunning }, log: { shell.printed() }, call: { try await shellCall($0, $1) }, press: { try await press($0) })
    }

    /// `gdbus call` of a method of the shell at /org/gnome/Shell.
    func shellCall(_ method: String, _ arguments: [String] = []) async throws -> CommandResult {
        try await fixture.gdbus(
            ["call", "--session", "--dest", "org.gnome.Shell", "--object-path", "/org/gnome/Shell", "--method", method] + arguments)
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

    /// The shell's log has no Clutter-CRITICAL line: the extension asked Clutter nothing it asserts against.
    func expectNoClutterCriticals() {
        let criticals = shell.printed().split(separator: "\n").filter { $0.contains("Clutter-CRITICAL") }
        #expect(criticals.isEmpty, "the shell logged Clutter's assertions:\n\(criticals.joined(separator: "\n"))")
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
}

extension HostFixture {
    /// What a gnome-shell of the tests needs besides its display: the AT-SPI bus, the host, the
    /// extension installed as a person installs it and enabled in the GSettings keyfile (with the
    /// groups `settings` adds), a home, and a second private bus as its system bus, which the
    /// caller stops. Returns that bus and what the shell and drive.py run with.
    func prepareGnomeShell(settings more: String = "") async throws -> (systemBus: PrivateBus, environment: [String: String]) {
        let (runtime, dataDirs) = try installAccessibilityBus()
        try await startHost()
        let install = try await runCommand(
            repositoryRoot.appendingPathComponent("renderers/gnome-shell/install").path, [dataHome.path], environment: environment)
        guard install.succeeded else { throw PrivateBusError("renderers/gnome-shell/install failed: \(install)") }
        try writeShellSettings(colourScheme: "default", more: more)
        let home = root.appendingPathComponent("home")
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        let systemBus = try PrivateBus(environment: environment)
        return (systemBus, [
            "XDG_DATA_DIRS": dataDirs, "XDG_RUNTIME_DIR": runtime.path,
            "HOME": home.path, "XDG_CACHE_HOME": root.appendingPathComponent("cache").path,
            "DBUS_SYSTEM_BUS_ADDRESS": systemBus.address, "GSETTINGS_BACKEND": "keyfile",
        ])
    }

    /// The keyfile GSettings reads with GSETTINGS_BACKEND=keyfile (and follows as it changes):
    /// the extension enabled, accessibility on, no animations, no notification banners over the
    /// desktop, the colour scheme, and the groups `more` adds.
    func writeShellSettings(colourScheme: String, more: String = "") throws {
        try GnomeShell.writeSettings(root.appendingPathComponent("config"), colourScheme: colourScheme, more: more)
    }

    /// The keys of the settings at `path` as GSettings wrote them in the keyfile it uses with
    /// GSETTINGS_BACKEND=keyfile (GVariant text), by name.
    func keyfileSettings(_ path: String) -> [String: String] {
        let keyfile = root.appendingPathComponent("config/glib-2.0/settings/keyfile")
        var values: [String: String] = [:]
        var inSection = false
        for line in ((try? String(contentsOf: keyfile, encoding: .utf8)) ?? "").split(separator: "\n") {
            if line.hasPrefix("[") {
                inSection = line == "[\(path)]"
            } else if inSection, let equals = line.firstIndex(of: "=") {
                values[String(line[..<equals])] = String(line[line.index(after: equals)...])
            }
        }
        return values
    }

    /// The Tap Me app's own connection, its widgets registered.
    func tapMePeer() async throws -> AppPeer {
        let app = try await AppPeer(self, appID: "org.example.TapMe", protocol: "freedesktop", schemes: ["tap-me-widget"])
        try await app.registerWidgets(try exampleFile("tap-me/bundle.json"))
        return app
    }
}

/// A host, the Tap Me GApplication installed as a DBusActivatable app, the
/// AT-SPI bus, a virtual display and gnome-shell on it with the extension.
final class ShellSession: ScreenSession, GnomeShellSession, @unchecked Sendable {
    let fixture: HostFixture
    let systemBus: PrivateBus
    let display: VirtualDisplay
    /// The running gnome-shell (another one after `restartShell`).
    private(set) var shell: Launched
    let record: String
    /// Emoji Rangers' record file, when it was started (`start(rangers:)`).
    var rangersRecord = ""
    let app: AppPeer
    let environment: [String: String]

    private init(
        fixture: HostFixture, systemBus: PrivateBus, display: VirtualDisplay, shell: Launched, record: String, app: AppPeer,
        environment: [String: String]
    ) {
        self.fixture = fixture
        self.systemBus = systemBus
        self.display = display
        self.shell = shell
        self.record = record
        self.app = app
        self.environment = environment
    }

    /// With `rangers`, Emoji Rangers is installed too (with those settings), started, and has published its bundle.
    /// The screen is `screenWidth` pixels wide.
    static func start(rangers: [String: String]? = nil, screenWidth: Int = 1280) async throws -> ShellSession {
        let fixture = try await HostFixture.make()
        var systemBus: PrivateBus?
        var display: VirtualDisplay?
        var shell: Launched?
        do {
            let record = try fixture.installTapMe(environment: ["WIDGETHOST_TEST_ACTIONS": "refresh,toggle-light"])
            let rangersRecord = try rangers.map { try fixture.installEmojiRangers($0) }
            let prepared = try await fixture.prepareGnomeShell()
            systemBus = prepared.systemBus
            display = try VirtualDisplay(directory: fixture.root, width: screenWidth)
            let environment = prepared.environment.merging(["DISPLAY": display!.display]) { _, new in new }
            shell = try fixture.launch("/usr/bin/gnome-shell", ["--x11", "--replace", "--sm-disable"], environment: environment)
            let app = try await fixture.tapMePeer()
            if let rangersRecord { try await fixture.launchEmojiRangers(app.connection, record: rangersRecord) }
            let session = ShellSession(
                fixture: fixture, systemBus: systemBus!, display: display!, shell: shell!, record: record, app: app, environment: environment)
            session.rangersRecord = rangersRecord ?? ""
            try await session.waitUntilReady()
            return session
        } catch {
            if let shell { endProcess(shell.process) }
            display?.stop()
            systemBus?.stop()
            fixture.stop()
            throw error
        }
    }

    func writeSettings(colourScheme: String) throws {
        try fixture.writeShellSettings(colourScheme: colourScheme)
    }

    /// Places Tap Me's red widget and, right of it, its medium one with a link, and gives the
    /// first the keyboard's focus with the shortcut (Super+Alt+W), as the keyboard tests begin.
    func focusTwoWidgets() async throws {
        try await place(try exampleFile("tap-me/red.json"))
        try await place(try exampleFile("tap-me/show-red-link.json"), family: "systemMedium")
        try await drive("find", "Show Red View", "--role", "link")
        try await drive("key", "super+alt+w")
        try await drive("focused", "Tap for red")
    }

    /// Ends gnome-shell and starts it again on the same display and buses, as when a person restarts it (Alt+F2 r).
    func restartShell() async throws {
        endProcess(shell.process)
        shell = try fixture.launch("/usr/bin/gnome-shell", ["--x11", "--replace", "--sm-disable"], environment: environment)
        try await waitUntilReady()
    }

    /// Runs xdotool on the shell's display; fails the test when it fails.
    @discardableResult
    func xdotool(_ arguments: String...) async throws -> CommandResult {
        let result = try await runCommand("/usr/bin/xdotool", arguments, environment: fixture.environment.merging(environment) { _, new in new })
        if !result.succeeded { throw PrivateBusError("xdotool \(arguments.joined(separator: " ")) failed: \(result)") }
        return result
    }

    /// Drags with the primary button from x, y by dx, dy as a hand does: a press, a few moves, a
    /// release; `held` runs before the release.
    func drag(fromX x: Int, y: Int, by dx: Int, _ dy: Int, held: () async throws -> Void = {}) async throws {
        try await xdotool("mousemove", "--sync", "\(x)", "\(y)", "mousedown", "1")
        for step in 1...6 {
            try await xdotool("mousemove", "--sync", "\(x + dx * step / 6)", "\(y + dy * step / 6)")
            try await Task.sleep(for: .milliseconds(40))
        }
        try await held()
        try await xdotool("mouseup", "1")
    }

    /// Sets a key of the shell's settings with gsettings, through the keyfile the shell follows, as the Settings app would.
    func setShellSetting(_ schema: String, _ key: String, _ value: String) async throws {
        let set = try await runCommand("/usr/bin/gsettings", ["set", schema, key, value], environment: fixture.environment.merging(environment) { _, new in new })
        if !set.succeeded { throw PrivateBusError("gsettings set \(schema) \(key) \(value) failed: \(set)") }
    }

    /// The extension's keys as GSettings wrote them in the keyfile (GVariant text), by name.
    func extensionSettings() -> [String: String] { fixture.keyfileSettings("org/gnome/shell/extensions/widgethost") }

    /// Opens the extension's preferences as a person does, with `gnome-extensions prefs`: the shell
    /// asks org.gnome.Shell.Extensions (the shell's preferences service, started here by D-Bus
    /// activation on the test's bus) to show them. Returns what ends that service.
    func openPreferences() async throws -> (stop: () -> Void, log: URL) {
        let log = fixture.root.appendingPathComponent("preferences.log")
        let script = fixture.root.appendingPathComponent("preferences-service")
        let exported = environment.filter { $0.key != "DBUS_SYSTEM_BUS_ADDRESS" }.merging(["GDK_BACKEND": "x11", "GTK_A11Y": "atspi"]) { _, new in new }
        try """
        #!/bin/sh
        \(exported.sorted { $0.key < $1.key }.map { "export \($0.key)='\($0.value)'" }.joined(separator: "\n"))
        exec /usr/bin/gjs /usr/share/gnome-shell/org.gnome.Shell.Extensions >>'\(log.path)' 2>&1

        """.write(to: script, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: script.path)
        try fixture.bus.installService(name: "org.gnome.Shell.Extensions", exec: script.path)
        let opened = try await runCommand(
            "/usr/bin/gnome-extensions", ["prefs", Self.uuid], environment: fixture.environment.merging(environment) { _, new in new })
        guard opened.succeeded else {
            throw PrivateBusError("gnome-extensions prefs failed: \(opened)\n\((try? String(contentsOf: log, encoding: .utf8)) ?? "")")
        }
        let fixture = self.fixture
        return ({
            // The service's process, by its name's owner on the test's bus.
            let reply = try? runCommandBlocking("/usr/bin/busctl", ["--address=\(fixture.bus.address)", "call", "org.freedesktop.DBus", "/org/freedesktop/DBus",
                "org.freedesktop.DBus", "GetConnectionUnixProcessID", "s", "org.gnome.Shell.Extensions"])
            if let pid = reply?.stdout.split(separator: " ").last.flatMap({ Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }) {
                kill(pid, SIGTERM)
            }
        }, log)
    }

    /// Gives the element of the preferences window named `name` the keyboard focus (Tab) and presses Space, as a person does.
    func pressInPreferences(_ name: String, role: String) async throws {
        try await inPreferences("focus", name, "--role", role)
        try await inPreferences("key", "space")
    }

    /// Runs drive.py in every application (the preferences window is not the shell's); fails the test when it fails.
    @discardableResult
    func inPreferences(_ arguments: String...) async throws -> String {
        let result = try await runCommand(
            "/usr/bin/python3", [repositoryRoot.appendingPathComponent("Tests/Fixtures/board/drive.py").path] + arguments,
            environment: fixture.environment.merging(environment) { _, new in new }, timeout: 60)
        if !result.succeeded {
            Issue.record("drive.py \(arguments.joined(separator: " ")) failed: \(result)")
            throw PrivateBusError("drive.py failed")
        }
        return result.stdout
    }

    func press(_ name: String) async throws {
        _ = try await runCommand("/usr/bin/xdotool", ["key", name], environment: fixture.environment.merging(environment) { _, new in new })
    }

    func stop() {
        app.close()
        endProcess(shell.process)
        display.stop()
        systemBus.stop()
        fixture.stop()
    }
}

extension GnomeShellTests {
    /// The pictures of README.md's "On the GNOME desktop" and docs/gnome-shell.md: the examples
    /// BoardTests.screenshots puts on the board, on the shell's desktop and in its top bar.
    @Test("Screenshots of the shell with the examples on its desktop, light and dark")
    func screenshots() async throws {
        let shell = try await ShellSession.start()
        defer { shell.stop() }
        try await shell.launchEmojiRangers()
        try await shell.placeExamples()
        var shown: [ScreenElement] = []
        for (name, role) in [
            ("Tap for yellow", "label"), ("Tap Me Show Red View", "push button"), ("Spouty, 60% health", "push button"),
            ("Ranger Leaderboard", "push button"), ("Delivery 10 min", "push button"),
        ] {
            shown.append(try await shell.element(name, role: role))
        }
        try await shell.drive("park")
        // The top bar and every widget, down to the lowest one's shadow.
        let area = ScreenElement(name: "desktop", role: "desktop", x: 0, y: 0, width: 1280, height: shown.map { $0.y + $0.height }.max()! + 24, seen: 0)
        let light = try await shell.screenshot("gnome-shell-light.png", of: area)
        #expect(light >= 12, "the desktop with the examples shows more than \(light) colours")

        // Dark: the shell's colour scheme, followed live; Tap Me's tile and Spouty's colour turn dark.
        let (medium, spouty) = (shown[1], shown[2])
        #expect(shell.display.colour(x: spouty.x + 12, y: spouty.y + 20) == "#d6ebff", "Spouty's light colour")
        try shell.writeSettings(colourScheme: "prefer-dark")
        for (tile, colour) in [(medium, "#2c2c2e"), (spouty, "#173049")] {
            #expect(await eventually(timeout: 5) { shell.display.colour(x: tile.x + 12, y: tile.y + 20) == colour },
                "\(tile) is \(shell.display.colour(x: tile.x + 12, y: tile.y + 20) ?? "unreadable") in the dark")
        }
        let dark = try await shell.screenshot("gnome-shell-dark.png", of: area)
        #expect(dark >= 12, "the dark desktop with the examples shows more than \(dark) colours")
        try await shell.expectNoExtensionErrors()
    }
}

extension ShellSession {
    /// Emoji Rangers, started as in BoardTests.screenshots: Spouty at 60% health, its timeline still.
    func launchEmojiRangers() async throws {
        let rangers = try fixture.installEmojiRangers(["EMOJI_RANGERS_STEP": "600", "EMOJI_RANGERS_START_HEALTH": "60"])
        try await fixture.launchEmojiRangers(app.connection, record: rangers)
    }
}

extension GnomeShellTests {
    @Test("A frozen host (stopped with SIGSTOP) costs the shell nothing: while a tap waits for it, a widget's menu and a Live Activity's popup open at once; the tap's call times out and the widget says WidgetHost did not answer; once the host runs again, that tap, past its deadline, reaches nobody, new content is drawn and a new tap reaches the app")
    func frozenHost() async throws {
        let shell = try await ShellSession.start()
        defer { shell.stop() }
        let widget = try await shell.place(try exampleFile("tap-me/red.json"))
        try await shell.startDelivery(eta: 10)
        let red = try await shell.element("Tap for red", role: "push button")
        try await shell.drive("find", "Delivery 10 min", "--role", "push button")
        let pid = try #require(shell.fixture.hostProcess?.processIdentifier)
        var frozen = true
        defer { if frozen { kill(pid, SIGCONT) } }
        #expect(await stopProcess(pid), "the host's threads did not all stop")

        // The tap's call waits for the host (30 s); the shell goes on meanwhile: each step answers within seconds.
        let clock = ContinuousClock()
        let tapped = clock.now
        try await shell.drive("click", "Tap for red", "--role", "push button", "--timeout", "3")
        try await shell.xdotool("mousemove", "--sync", "\(red.x + 30)", "\(red.y + 30)", "click", "3")
        try await shell.drive("find", "Remove Widget", "--role", "menu item", "--timeout", "3")
        try await shell.press("Escape")
        try await shell.drive("gone", "Remove Widget", "--timeout", "3")
        try await shell.drive("click", "Delivery 10 min", "--role", "push button", "--button", "3", "--timeout", "3")
        try await shell.drive("find", "Arriving in 10 min", "--role", "label", "--timeout", "3")
        try await shell.press("Escape")
        try await shell.drive("gone", "Arriving in 10 min", "--timeout", "3")
        let answered = clock.now - tapped
        #expect(answered < .seconds(20), "the shell took \(answered) for a menu and a popup while the host was stopped")

        // The call times out: the widget tells the person nothing opened, and why.
        try await shell.drive("find", "WidgetHost did not answer", "--role", "label", "--timeout", "40")
        #expect(clock.now - tapped > .seconds(25), "shown only once the call timed out")
        #expect(!shell.records().contains { $0["call"] as? String == "open" }, "the stopped host sent nothing: \(shell.records())")

        // Running again, the host is followed as before: new content is drawn, and a tap reaches the app.
        kill(pid, SIGCONT)
        frozen = false
        try await shell.app.setContent(widget, try exampleFile("tap-me/green.json"))
        try await shell.drive("click", "Tap for green", "--role", "push button", "--timeout", "5")
        _ = try await shell.waitForRecord { ($0["uris"] as? [String]) == ["tap-me-widget://show-green"] }
        // The tap the person was told had failed never opens anything: the host read it past its deadline.
        #expect(!shell.records().contains { ($0["uris"] as? [String]) == ["tap-me-widget://show-red"] }, "\(shell.records())")
        try await shell.expectNoExtensionErrors()
    }

    @Test("Widgets are in the wallpaper's layer, below every window: an ordinary window over a widget hides it on the screen and takes the click there, which taps nothing; the window gone, the widget shows and taps again")
    func belowWindows() async throws {
        let shell = try await ShellSession.start()
        defer { shell.stop() }
        try await shell.place(##"{"type":"zstack","widgetURL":"tap-me-widget://show-red","children":[{"type":"color","color":"#ff0000"}]}"##)
        let widget = try await shell.element("TapMeWidget", role: "push button")
        let (x, y) = (widget.x + widget.width / 2, widget.y + widget.height / 2)
        try await shell.drive("park")
        #expect(shell.display.colour(x: x, y: y) == "#ff0000", "the widget is drawn: \(shell.display.colour(x: x, y: y) ?? "unreadable")")

        // A maximized window, green, over the work area where the widget is.
        let cover = try shell.fixture.launch(
            "/usr/bin/python3", [repositoryRoot.appendingPathComponent("Tests/Fixtures/gnome-shell/cover_window.py").path, "#00ff00"],
            environment: shell.environment.merging(["GDK_BACKEND": "x11"]) { _, new in new })
        defer { endProcess(cover.process) }
        #expect(await eventually(timeout: 15) { cover.printed().contains("shown") }, "\(cover.printed())")
        #expect(await eventually(timeout: 5) { shell.display.colour(x: x, y: y) == "#00ff00" },
            "the window hides the widget: the screen is \(shell.display.colour(x: x, y: y) ?? "unreadable") at its centre")
        try await shell.drive("clickat", "\(x)", "\(y)")
        #expect(await eventually(timeout: 5) { cover.printed().contains("pressed") }, "the window takes the click: \(cover.printed())")
        try await Task.sleep(for: .seconds(1))
        #expect(!shell.records().contains { $0["call"] as? String == "open" }, "a click on the window taps no widget: \(shell.records())")

        // The window gone, the widget is on the screen again (the pointer, which Xvfb draws, off
        // it), and a click there taps it.
        endProcess(cover.process)
        try await shell.drive("park")
        #expect(await eventually(timeout: 5) { shell.display.colour(x: x, y: y) == "#ff0000" },
            "the widget shows again: \(shell.display.colour(x: x, y: y) ?? "unreadable")")
        try await shell.drive("clickat", "\(x)", "\(y)")
        _ = try await shell.waitForRecord { ($0["uris"] as? [String]) == ["tap-me-widget://show-red"] }
        try await shell.expectNoExtensionErrors()
    }
}
