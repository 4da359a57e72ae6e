import DBus
import Foundation
import PrivateBus
import Testing
import VirtualDesktop

/// What drive.py prints of an element on the screen.
struct ScreenElement: Decodable, CustomStringConvertible {
    let name: String, role: String, x: Int, y: Int, width: Int, height: Int
    /// When drive.py first saw it showing (Unix seconds).
    let seen: Double
    var description: String { "\(role) '\(name)' at \(x),\(y) size \(width)×\(height)" }
}

/// A renderer on a virtual display next to the host and the Tap Me app, used
/// as a person uses it: what the tests of widget-board and of the GNOME Shell
/// extension share.
protocol ScreenSession: AnyObject {
    var fixture: HostFixture { get }
    var display: VirtualDisplay { get }
    var app: AppPeer { get }
    /// The file the Tap Me app records its calls in.
    var record: String { get }
    /// What the renderer's processes and drive.py run with besides the fixture's environment.
    var environment: [String: String] { get }
    /// drive.py's options before its command (which application to look in).
    var driveOptions: [String] { get }
    /// What the renderer printed, for the message of a failure.
    var rendererOutput: String { get }
}

extension ScreenSession {
    var driveOptions: [String] { [] }

    /// Places a Tap Me widget in `family` and gives it `content`; returns its path.
    @discardableResult
    func place(_ content: String, family: String = "systemSmall") async throws -> String {
        let path = try await app.connection.addWidget("org.example.TapMe", "TapMeWidget", family)
        try await app.setContent(path, content)
        return path
    }

    /// Removes a placed widget, as the app (or a gallery) does.
    func remove(_ widget: String) async throws {
        _ = try await app.connection.call(
            destination: "org.widgethost.Host1", path: widget, interface: "org.widgethost.Host1.Widget", member: "Remove", [])
    }

    /// The Tap Me example's five widgets.
    func placeTapMe() async throws {
        for colour in ["red", "green", "blue", "yellow"] {
            try await place(try exampleFile("tap-me/\(colour).json"))
        }
        try await place(try exampleFile("tap-me/show-red-link.json"), family: "systemMedium")
    }

    /// Starts the delivery example's Live Activity for order 1234, `eta` minutes away; returns its path.
    @discardableResult
    func startDelivery(eta: Int64 = 10, options: [String: DBusValue] = [:]) async throws -> String {
        try await app.startActivity(
            "DeliveryAttributes", try exampleFile("delivery/activity.json"),
            options.merging(["attributes": .vardict(["order": .string("1234")]), "state": .vardict(["eta_minutes": .int64(eta)])]) { given, _ in given })
    }

    /// Runs drive.py with `arguments`; fails the test with what it printed when it fails.
    @discardableResult
    func drive(_ arguments: String...) async throws -> String {
        let result = try await runCommand(
            "/usr/bin/python3", [repositoryRoot.appendingPathComponent("Tests/Fixtures/board/drive.py").path] + driveOptions + arguments,
            environment: fixture.environment.merging(environment) { _, new in new }, timeout: 60)
        if !result.succeeded {
            Issue.record("drive.py \(arguments.joined(separator: " ")) failed: \(result)\n\(rendererOutput)")
            throw PrivateBusError("drive.py failed")
        }
        return result.stdout
    }

    func element(_ name: String, role: String, timeout: Double = 10) async throws -> ScreenElement {
        let printed = try await drive("find", name, "--role", role, "--timeout", "\(timeout)")
        return try JSONDecoder().decode(ScreenElement.self, from: Data(printed.utf8))
    }

    func records() -> [[String: Any]] { fixture.records(record) }

    /// The first call the app recorded that `matching` accepts, waiting up to 10 s.
    func waitForRecord(_ matching: @escaping ([String: Any]) -> Bool) async throws -> [String: Any] {
        var found: [String: Any]?
        _ = await eventually(timeout: 10) {
            found = records().first(where: matching)
            return found != nil
        }
        guard let found else {
            Issue.record("the app received nothing matching; it recorded \(records()); \(rendererOutput)")
            throw PrivateBusError("no such call")
        }
        return found
    }

    /// Saves the screen, or the part of it `element` covers, as `name` under
    /// the screenshots folder: $WIDGETHOST_SCREENSHOTS (relative to the
    /// repository, `docs/images` to renew the docs' pictures), else
    /// .build/screenshots. Returns how many distinct colours a sample of its pixels has.
    func screenshot(_ name: String, of element: ScreenElement? = nil) async throws -> Int {
        let folder = ProcessInfo.processInfo.environment["WIDGETHOST_SCREENSHOTS"].map { repositoryRoot.appendingPathComponent($0) }
            ?? repositoryRoot.appendingPathComponent(".build/screenshots")
        let file = folder.appendingPathComponent(name)
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        let crop = element.map { [$0.x, $0.y, $0.width, $0.height].map(String.init) } ?? []
        let saved = try await runCommand(
            "/usr/bin/python3", ["-m", "widgetboard.screenshot", display.framebuffer, file.path] + crop,
            adding: ["PYTHONPATH": repositoryRoot.appendingPathComponent("renderers/gtk").path])
        guard saved.succeeded else {
            Issue.record("the screenshot failed: \(saved)")
            throw PrivateBusError("no screenshot")
        }
        return Int(saved.stdout.split(separator: " ").dropLast(2).last ?? "") ?? 0
    }
}

extension HostFixture {
    /// Makes the AT-SPI accessibility bus startable on the fixture's bus, where toolkits and
    /// drive.py find it as on a desktop. Its socket goes in the test's own runtime folder (made
    /// private); settings schemas and icons come from the machine's data folder, after the test's
    /// desktop entries. Returns that runtime folder and XDG_DATA_DIRS.
    func installAccessibilityBus() throws -> (runtime: URL, dataDirs: String) {
        let runtime = root.appendingPathComponent("runtime")
        try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: runtime.path)
        let dataDirs = dataDir.path + ":/usr/share"
        try bus.installService(
            name: "org.a11y.Bus",
            exec: "/usr/bin/env XDG_DATA_DIRS=\(dataDirs) XDG_RUNTIME_DIR=\(runtime.path) /usr/libexec/at-spi-bus-launcher")
        return (runtime, dataDirs)
    }
}
