import DBus
import Foundation
import PrivateBus
import Testing
import VirtualDesktop
import WidgetHostCore

/// The renderer conformance kit (conformance/, docs/conformance.md) run against each
/// renderer by one test body: every case placed by a small app of its own on a private
/// host, and what the renderer shows of it checked as a person and a screen reader
/// meet it — accessible names and roles, sizes, colours at points, and the element id
/// the app receives for a click at a point. Each failing check is reported by case.
@Suite("Renderer conformance", .serialized, .timeLimit(.minutes(10)))
struct ConformanceTests {
    @Test("Every case of the conformance kit is drawn, named and tapped as docs/vocabulary.md says", arguments: ConformanceRenderer.allCases)
    func kit(_ renderer: ConformanceRenderer) async throws {
        let kit = try ConformanceKit.load()
        if let reason = renderer.unavailable {
            print("Renderer conformance, \(renderer.rawValue): skipped: \(reason)")
            try Test.cancel(Comment(rawValue: reason))
        }
        let screen = try await renderer.start()
        defer { screen.stop() }
        let app = try await ConformanceApp(screen.fixture, bundle: kit.bundle)
        defer { app.close() }
        let taps = try await screen.fixture.monitorTaps()
        defer { taps.stop() }
        var failed = 0
        for appearance in ConformanceCase.Appearance.allCases {
            let cases = kit.cases.filter { $0.shownIn.contains(appearance) }
            guard !cases.isEmpty else { continue }
            try await screen.show(appearance)
            for item in cases {
                let run = CaseRun(screen: screen, app: app, taps: taps, item: item, appearance: appearance, renderer: renderer.rawValue)
                await run.run()
                failed += run.failures
            }
        }
        if failed > 0 {
            print("\(renderer.rawValue): \(failed) check(s) of the conformance kit failed; pictures of the failing widgets are in .build/screenshots/conformance")
        }
    }
}

/// The kit itself, with no renderer: every case loads, the cases together use the whole
/// vocabulary, and docs/conformance.md describes each.
@Suite("The renderer conformance kit")
struct ConformanceKitTests {
    @Test("The cases cover every element type, every key any element may carry, every family, both appearances and a binding; docs/conformance.md lists each")
    func coverage() throws {
        let kit = try ConformanceKit.load()
        var types = Set<String>(), keys = Set<String>()
        func walk(_ value: JSONValue) {
            switch value {
            case .object(let members):
                if case .string(let type)? = members["type"] { types.insert(type) }
                keys.formUnion(members.keys)
                members.values.forEach(walk)
            case .array(let items): items.forEach(walk)
            default: break
            }
        }
        for item in kit.cases {
            item.widget.map { walk($0.content) }
            item.activity.map { walk($0.content) }
            item.steps?.compactMap(\.content).forEach(walk)
        }
        #expect(types.isSuperset(of: Vocabulary.types.keys), "no case draws \(Set(Vocabulary.types.keys).subtracting(types).sorted())")
        #expect(keys.isSuperset(of: Vocabulary.commonKeys.keys), "no case uses \(Set(Vocabulary.commonKeys.keys).subtracting(keys).sorted())")
        #expect(keys.contains("bind") && kit.cases.contains { $0.steps?.contains { $0.state != nil } == true }, "no case updates a bound text")
        let families = Set(kit.cases.compactMap { $0.widget?.family })
        #expect(families == Set(WidgetFamily.allCases.map(\.rawValue)), "no case is a \(Set(WidgetFamily.allCases.map(\.rawValue)).subtracting(families).sorted())")
        #expect(Set(kit.cases.flatMap(\.shownIn)) == Set(ConformanceCase.Appearance.allCases))
        let documented = try String(contentsOf: repositoryRoot.appendingPathComponent("docs/conformance.md"), encoding: .utf8)
        for item in kit.cases {
            #expect(documented.contains("| [`\(item.name)`](../conformance/cases/\(item.name).json) |"), "docs/conformance.md does not list the case \(item.name)")
        }
    }
}

/// The renderers the kit runs against: the project's three, and one named by
/// $WIDGETHOST_CONFORMANCE_RENDERER (docs/conformance.md#your-renderer).
enum ConformanceRenderer: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case board = "widget-board"
    case gnomeShell = "GNOME Shell extension"
    case plasma = "KDE Plasma applet"
    case external = "$WIDGETHOST_CONFORMANCE_RENDERER"

    var testDescription: String { rawValue }

    /// Why it cannot run here; nil when it can.
    var unavailable: String? {
        switch self {
        case .board: nil
        case .gnomeShell: gnomeShellTestsRun ? nil : "gnome-shell is not installed (apt-get install gnome-shell)"
        case .plasma: plasmaTestsRun ? nil : "plasmoidviewer is not installed (apt-get install plasma-sdk plasma-desktop)"
        case .external:
            ExternalSession.command == nil
                ? "WIDGETHOST_CONFORMANCE_RENDERER is not set: set it to a command that starts your renderer (docs/conformance.md#your-renderer) to run the kit against it"
                : nil
        }
    }

    func start() async throws -> any ConformanceScreen {
        switch self {
        case .board: try await BoardSession.start()
        case .gnomeShell: try await ShellSession.start()
        case .plasma: try await PlasmaSession.start()
        case .external: try await ExternalSession.start(command: ExternalSession.command ?? "")
        }
    }
}

/// A renderer on a virtual display that the kit can show in either appearance.
protocol ConformanceScreen: ScreenSession {
    /// Draws from now on in `appearance`, restarting the renderer if it must.
    func show(_ appearance: ConformanceCase.Appearance) async throws
    func stop()
    /// The AT-SPI roles its toolkit gives in place of a role the kit asks for, where the
    /// toolkit has none of that kind (docs/conformance.md#roles); none for most renderers.
    var roleSubstitutes: [String: [String]] { get }
}

extension ConformanceScreen {
    var roleSubstitutes: [String: [String]] { [:] }
}

extension BoardSession: ConformanceScreen {
    func show(_ appearance: ConformanceCase.Appearance) async throws {
        if theme != appearance.rawValue { try await relaunch(theme: appearance.rawValue) }
    }

    /// GTK before 4.10 (Debian 12 has 4.8) has no toggle-button role: a toggle is a push button
    /// whose `pressed` state follows `isOn`.
    var roleSubstitutes: [String: [String]] { ["toggle button": ["push button"]] }
}

extension ShellSession: ConformanceScreen {
    /// The desktop's colour scheme, which the extension follows as it changes.
    func show(_ appearance: ConformanceCase.Appearance) async throws {
        try writeSettings(colourScheme: appearance == .dark ? "prefer-dark" : "default")
    }
}

/// The app that serves the kit's widgets and activities: it places them on the host
/// and records every delivery, with the element id the tap reported.
final class ConformanceApp: @unchecked Sendable {
    static let appID = "org.widgethost.Conformance"
    let peer: AppPeer

    init(_ fixture: HostFixture, bundle: String) async throws {
        peer = try await AppPeer(fixture, appID: Self.appID, protocol: "widgethost", schemes: ["conformance"])
        try await peer.registerWidgets(bundle)
    }

    /// Each delivery: the App1 method and the `element_id` of its context's `org.widgethost.source`.
    var deliveries: [(method: String, element: String?)] {
        peer.calls.map { call in
            let source = call.args.last?.stringKeyedEntries?["org.widgethost.source"]?.unwrapped.stringKeyedEntries
            return (call.member, source?["element_id"]?.unwrapped.stringValue)
        }
    }

    func place(_ widget: ConformanceCase.WidgetSpec) async throws -> String {
        let path = try await peer.connection.addWidget(Self.appID, widget.kind, widget.family)
        try await peer.setContent(path, widget.content.jsonText)
        return path
    }

    func remove(_ widget: String) async throws {
        _ = try await peer.connection.call(
            destination: "org.widgethost.Host1", path: widget, interface: "org.widgethost.Host1.Widget", member: "Remove", [])
    }

    func start(_ activity: ConformanceCase.ActivitySpec) async throws -> String {
        try await peer.startActivity(activity.attributesType, activity.content.jsonText, [
            "attributes": .vardict((activity.attributes ?? [:]).mapValues(\.dbusValue)),
            "state": .vardict((activity.state ?? [:]).mapValues(\.dbusValue)),
        ])
    }

    func close() { peer.close() }
}

/// One case on one renderer in one appearance; each check that does not hold is an issue of the test.
final class CaseRun: @unchecked Sendable {
    let screen: any ConformanceScreen
    let app: ConformanceApp
    let taps: TapMonitor
    let item: ConformanceCase
    let appearance: ConformanceCase.Appearance
    let renderer: String
    /// How many checks failed; each is recorded as an issue as it fails.
    private(set) var failures = 0
    private var pictured = false

    init(
        screen: any ConformanceScreen, app: ConformanceApp, taps: TapMonitor, item: ConformanceCase, appearance: ConformanceCase.Appearance,
        renderer: String
    ) {
        (self.screen, self.app, self.taps, self.item, self.appearance, self.renderer) = (screen, app, taps, item, appearance, renderer)
    }

    private func fail(_ check: String, _ detail: String) {
        failures += 1
        Issue.record(Comment(rawValue: "\(renderer) · case \(item.name) (\(appearance.rawValue)) · \(check): \(detail)"))
    }

    func run() async {
        do {
            if let widget = item.widget {
                try await runWidget(widget)
            } else if let activity = item.activity {
                try await runActivity(activity)
            }
        } catch {
            fail("the case could not run", "\(error)")
        }
    }

    private func runWidget(_ widget: ConformanceCase.WidgetSpec) async throws {
        let path = try await app.place(widget)
        let name = item.expect.name ?? widget.kind
        var tile = await find(name, role: "push button", timeout: 15, check: "the widget, a push button named '\(name)'")
        if tile != nil {
            _ = try await screen.tryDrive(["park"])
            // Found, it may still be moving into its place: look again once it has settled.
            tile = await find(name, role: "push button", timeout: 5, check: "the widget, a push button named '\(name)'")
        }
        if let tile {
            await check(item.expect, on: tile, label: "")
            for (index, step) in (item.steps ?? []).enumerated() {
                if let content = step.content {
                    try await app.peer.setContent(path, content.jsonText)
                }
                await check(step.expect, on: tile, label: "steps[\(index)] (\(step.about)) · ")
            }
        }
        try await app.remove(path)
        let gone = try await screen.tryDrive(["gone", name, "--timeout", "5"])
        if !gone.succeeded { fail("removing the widget", "it is still shown: \(gone.stderr)") }
    }

    private func runActivity(_ activity: ConformanceCase.ActivitySpec) async throws {
        let path = try await app.start(activity)
        await check(item.expect, on: nil, label: "")
        var last = item.expect
        for (index, step) in (item.steps ?? []).enumerated() {
            if let state = step.state { try await app.peer.updateActivity(path, state: state.mapValues(\.dbusValue)) }
            await check(step.expect, on: nil, label: "steps[\(index)] (\(step.about)) · ")
            last = step.expect
        }
        try await app.peer.endActivity(path, dismissal: "immediate")
        for element in last.accessible ?? [] {
            let gone = try await screen.tryDrive(["gone", element.name, "--timeout", "5"])
            if !gone.succeeded { fail("ending the activity", "'\(element.name)' is still shown: \(gone.stderr)") }
        }
    }

    /// The element drive.py finds, or nil with the failure recorded as `check`.
    private func find(_ name: String, role: String, timeout: Double, check: String) async -> ScreenElement? {
        do {
            let result = try await screen.tryDrive(["find", name, "--role", role, "--timeout", "\(timeout)"])
            guard result.succeeded else {
                // What has that name, in any role, says more than the list of every name.
                let named = try await screen.tryDrive(["find", name, "--timeout", "0"])
                let seen = try? JSONDecoder().decode(ScreenElement.self, from: Data(named.stdout.utf8))
                fail(check, seen.map { "not found; there is \($0)" } ?? "not found: \(result.stderr.suffix(1500))")
                return nil
            }
            return try JSONDecoder().decode(ScreenElement.self, from: Data(result.stdout.utf8))
        } catch {
            fail(check, "\(error)")
            return nil
        }
    }

    private func check(_ expect: Expectations, on tile: ScreenElement?, label: String) async {
        if let tile, let size = expect.size, [tile.width, tile.height] != size {
            fail(label + "size", "the widget is \(tile.width) × \(tile.height), not \(size[0]) × \(size[1])")
        }
        for element in expect.accessible ?? [] {
            let roles = (element.role + element.role.flatMap { screen.roleSubstitutes[$0] ?? [] }).joined(separator: "|")
            let check = label + "accessible '\(element.name)' (\(element.role.joined(separator: " or ")))"
            guard let found = await find(element.name, role: roles, timeout: 5, check: check), let checked = element.checked else { continue }
            let states = found.states ?? []
            if (states.contains("checked") || states.contains("pressed")) != checked {
                fail(check, "its states are \(states), so it is \(checked ? "not shown on" : "shown on")")
            }
        }
        for name in expect.gone ?? [] {
            if let gone = try? await screen.tryDrive(["gone", name, "--timeout", "5"]), !gone.succeeded {
                fail(label + "gone '\(name)'", "it is still shown")
            }
        }
        guard let tile else { return }
        await checkPixels(expect, on: tile, label: label)
        await checkTaps(expect, on: tile, label: label)
    }

    /// Colours and ink, read from the screen until they all hold or 5 s have passed.
    private func checkPixels(_ expect: Expectations, on tile: ScreenElement, label: String) async {
        let colours = expect.colours ?? [], ink = expect.ink ?? []
        guard !colours.isEmpty || !ink.isEmpty else { return }
        var problems: [(check: String, detail: String)] = []
        _ = await eventually(timeout: 5) {
            guard let screen = try? Framebuffer(path: self.screen.display.framebuffer) else {
                problems = [(label + "the screen", "Xvfb's framebuffer cannot be read")]
                return false
            }
            problems = colours.enumerated().compactMap { index, check in
                colourProblem(check, on: screen, tile: tile).map { (label + "colours[\(index)] (\(check.what))", $0) }
            } + ink.enumerated().compactMap { index, check in
                inkProblem(check, on: screen, tile: tile).map { (label + "ink[\(index)] (\(check.what))", $0) }
            }
            return problems.isEmpty
        }
        for problem in problems { fail(problem.check, problem.detail) }
        if !problems.isEmpty && !pictured {
            pictured = true
            _ = try? await screen.screenshot("conformance/\(renderer)-\(item.name)-\(appearance.rawValue).png", of: tile)
        }
    }

    private func colourProblem(_ check: Expectations.ColourCheck, on screen: Framebuffer, tile: ScreenElement) -> String? {
        let tolerance = check.tolerance ?? 8
        guard let seen = screen.colour(x: tile.x + check.at[0], y: tile.y + check.at[1]) else { return "(\(check.at[0]), \(check.at[1])) is off the screen" }
        let here = "at (\(check.at[0]), \(check.at[1])) the screen is \(seen.hex)"
        if let wanted = check.is?.pixel(appearance), seen.distance(to: wanted) > tolerance { return "\(here), not \(wanted.hex) (± \(tolerance))" }
        if let unwanted = check.isNot?.pixel(appearance), seen.distance(to: unwanted) <= tolerance { return "\(here), which it must not be (± \(tolerance))" }
        for (other, same) in [(check.sameAs, true), (check.differsFrom, false)] {
            guard let other else { continue }
            guard let there = screen.colour(x: tile.x + other[0], y: tile.y + other[1]) else { return "(\(other[0]), \(other[1])) is off the screen" }
            if (seen.distance(to: there) <= tolerance) != same {
                return "\(here) and at (\(other[0]), \(other[1])) \(there.hex): they must be \(same ? "the same" : "different") (± \(tolerance))"
            }
        }
        return nil
    }

    private func inkProblem(_ check: Expectations.InkCheck, on screen: Framebuffer, tile: ScreenElement) -> String? {
        let tolerance = check.tolerance ?? 8
        let near = check.near?.pixel(appearance), unlike = (check.unlike ?? []).compactMap { $0.pixel(appearance) }
        func count(_ region: [Int]) -> Int {
            var count = 0
            for y in region[1]..<region[1] + region[3] {
                for x in region[0]..<region[0] + region[2] {
                    guard let pixel = screen.colour(x: tile.x + x, y: tile.y + y) else { continue }
                    if let near, pixel.distance(to: near) <= tolerance { count += 1 }
                    if !unlike.isEmpty, unlike.allSatisfy({ pixel.distance(to: $0) > tolerance }) { count += 1 }
                }
            }
            return count
        }
        let found = count(check.region)
        let what = near.map { "pixels near \($0.hex)" } ?? "pixels unlike \(unlike.map(\.hex).joined(separator: ", "))"
        if let least = check.atLeast, found < least { return "\(found) \(what) (± \(tolerance)) in \(check.region), fewer than \(least)" }
        if let most = check.atMost, found > most { return "\(found) \(what) (± \(tolerance)) in \(check.region), more than \(most)" }
        if let other = check.moreThan {
            let there = count(other.region)
            if Double(found) <= Double(there) * other.times {
                return "\(found) \(what) (± \(tolerance)) in \(check.region), not more than \(other.times) × the \(there) in \(other.region)"
            }
        }
        return nil
    }

    /// Each click at its point, and the delivery the app then receives.
    private func checkTaps(_ expect: Expectations, on tile: ScreenElement, label: String) async {
        for (index, tap) in (expect.taps ?? []).enumerated() {
            let check = label + "taps[\(index)] (\(tap.what))"
            let before = app.deliveries.count, tapsBefore = taps.taps().count
            do {
                let clicked = try await screen.tryDrive(["clickat", "\(tile.x + tap.at[0])", "\(tile.y + tap.at[1])"])
                guard clicked.succeeded else {
                    fail(check, "the click failed: \(clicked)")
                    continue
                }
            } catch {
                fail(check, "the click failed: \(error)")
                continue
            }
            guard await eventually(timeout: 5, { app.deliveries.count > before }) else {
                fail(check, "a click at (\(tap.at[0]), \(tap.at[1])) delivered nothing to the app; \(screen.rendererOutput.suffix(1500))")
                continue
            }
            let delivery = app.deliveries[before]
            if delivery.element != tap.element {
                fail(check, "the app received element \(delivery.element.map { "'\($0)'" } ?? "none"), not '\(tap.element)' (\(delivery.method))")
            }
            if let method = tap.receives, delivery.method != method {
                fail(check, "the app received \(delivery.method), not \(method)")
            }
            // docs/delivery.md#the-renderers-deadline: until when the renderer waits for the answer.
            if let problem = await taps.deadlineProblem(seconds: 1...120, seen: tapsBefore + 1) { fail(check, problem) }
        }
        if expect.taps?.isEmpty == false { _ = try? await screen.tryDrive(["park"]) }
    }
}

/// A renderer someone else writes, started by the command in $WIDGETHOST_CONFORMANCE_RENDERER
/// on the test's display and session bus (docs/conformance.md#your-renderer).
final class ExternalSession: ConformanceScreen, @unchecked Sendable {
    static var command: String? {
        ProcessInfo.processInfo.environment["WIDGETHOST_CONFORMANCE_RENDERER"].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// $WIDGETHOST_CONFORMANCE_ROLE_SUBSTITUTES: `ROLE=SUBSTITUTE[;ROLE=SUBSTITUTE…]`, e.g.
    /// `toggle button=push button` for a renderer on GTK 4.8.
    var roleSubstitutes: [String: [String]] {
        let given = ProcessInfo.processInfo.environment["WIDGETHOST_CONFORMANCE_ROLE_SUBSTITUTES"] ?? ""
        return Dictionary(given.split(separator: ";").compactMap { pair -> (String, [String])? in
            let sides = pair.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            return sides.count == 2 ? (sides[0], [sides[1]]) : nil
        }, uniquingKeysWith: +)
    }

    let fixture: HostFixture
    let display: VirtualDisplay
    let record: String
    let app: AppPeer
    let environment: [String: String]
    private let command: String
    private var renderer: Launched?
    private var appearance: ConformanceCase.Appearance?

    /// With $WIDGETHOST_CONFORMANCE_ATSPI_APP, drive.py looks only in that AT-SPI application and takes
    /// its extents as the screen's (as gnome-shell's); else it takes them in the renderer's window.
    var driveOptions: [String] {
        ProcessInfo.processInfo.environment["WIDGETHOST_CONFORMANCE_ATSPI_APP"].map { ["--app", $0] } ?? []
    }

    var rendererOutput: String { "the renderer printed:\n\(renderer?.printed().suffix(4000) ?? "")" }

    private init(fixture: HostFixture, display: VirtualDisplay, record: String, app: AppPeer, environment: [String: String], command: String) {
        (self.fixture, self.display, self.record, self.app, self.environment, self.command) = (fixture, display, record, app, environment, command)
    }

    static func start(command: String) async throws -> ExternalSession {
        let fixture = try await HostFixture.make()
        do {
            let record = try fixture.installTapMe()
            let (runtime, dataDirs) = try fixture.installAccessibilityBus()
            try await fixture.startHost()
            let display = try VirtualDisplay(directory: fixture.root)
            let home = fixture.root.appendingPathComponent("home")
            try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
            let environment = [
                "DISPLAY": display.display, "GDK_BACKEND": "x11", "GTK_A11Y": "atspi", "QT_QPA_PLATFORM": "xcb", "QT_LINUX_ACCESSIBILITY_ALWAYS_ON": "1",
                "XDG_DATA_DIRS": dataDirs, "XDG_RUNTIME_DIR": runtime.path, "HOME": home.path, "GSETTINGS_BACKEND": "keyfile",
            ]
            let app = try await AppPeer(fixture, appID: "org.example.TapMe", protocol: "freedesktop", schemes: ["tap-me-widget"])
            return ExternalSession(fixture: fixture, display: display, record: record, app: app, environment: environment, command: command)
        } catch {
            fixture.stop()
            throw error
        }
    }

    /// Starts the renderer (again, when it runs in the other appearance) with the appearance in
    /// $WIDGETHOST_APPEARANCE and in GSettings' colour scheme.
    func show(_ appearance: ConformanceCase.Appearance) async throws {
        guard appearance != self.appearance else { return }
        endRenderer()
        try fixture.writeShellSettings(colourScheme: appearance == .dark ? "prefer-dark" : "default")
        renderer = try fixture.launch(
            "/bin/sh", ["-c", command], environment: environment.merging(["WIDGETHOST_APPEARANCE": appearance.rawValue]) { _, new in new })
        self.appearance = appearance
        try await Task.sleep(for: .seconds(1))
        guard renderer?.process.isRunning == true else {
            throw PrivateBusError("the renderer ($WIDGETHOST_CONFORMANCE_RENDERER: \(command)) exited at once; \(rendererOutput)")
        }
    }

    /// Ends the renderer: the whole process group the command runs in when it has one of its
    /// own (Foundation starts each process in a group of its own), else the shell running it.
    private func endRenderer() {
        guard let renderer, renderer.process.isRunning else { return }
        let pid = renderer.process.processIdentifier
        if getpgid(pid) == pid { kill(-pid, SIGTERM) }
        endProcess(renderer.process)
    }

    func stop() {
        app.close()
        endRenderer()
        display.stop()
        fixture.stop()
    }
}
