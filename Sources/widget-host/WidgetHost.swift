import ArgumentParser
import FoundationEssentials
import Glibc
import WidgetHostKit

struct WidgetHost: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "widget-host",
        abstract: "Talk to the WidgetHost service (org.widgethost.Host1).",
        version: "widget-host \(WidgetHostVersion.current)",
        subcommands: [
            Apps.self, Bundles.self, Add.self, Widgets.self, Tap.self, Activities.self, TapActivity.self, Bar.self, Reload.self, Options.self, Timeline.self, Lint.self,
            Monitor.self, Wait.self,
        ])
}

/// Options shared by every subcommand.
struct BusOptions: ParsableArguments {
    @Option(name: .customLong("address"), help: "Use this D-Bus address instead of the session bus.")
    var address: String?

    var bus: BusAddress { address.map(BusAddress.address) ?? .session }

    /// Connects, runs `body` with a renderer's view of the host, and closes;
    /// a failure becomes a message that says what went wrong.
    func withHost<T>(_ body: (WidgetHostRenderer) async throws -> T) async throws -> T {
        let renderer: WidgetHostRenderer
        do {
            renderer = try await WidgetHostRenderer.connect(bus)
        } catch {
            throw CLIError("cannot connect to \(bus): \(describe(error))")
        }
        defer { renderer.close() }
        do {
            return try await body(renderer)
        } catch let error as WidgetHostUnavailable {
            throw CLIError(error.description)
        } catch let error as DBusError {
            throw CLIError("\(error.name): \(error.message)")
        }
    }
}

struct CLIError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

func describe(_ error: any Error) -> String {
    if let e = error as? DBusError { return e.message.isEmpty ? e.name : e.message }
    return String(describing: error)
}

/// What --json prints: keys sorted, one item or member a line, `[]` when there is nothing.
func printJSON(_ value: JSONValue) {
    print(value.stableJSONText(pretty: true))
}

/// Everything on standard input, until its end.
func readStandardInput() -> Data {
    var data = Data()
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
        let count = buffer.withUnsafeMutableBytes { read(STDIN_FILENO, $0.baseAddress, $0.count) }
        if count > 0 {
            data.append(contentsOf: buffer[0..<count])
        } else if count == 0 || errno != EINTR {
            return data
        }
    }
}

/// `2023-11-14T22:13:20Z`.
func iso8601(_ date: Date) -> String { UnixTime.iso8601(Int64((date.timeIntervalSince1970 * 1000).rounded(.down))) }

/// Prints rows as an aligned table.
func printTable(_ header: [String], _ rows: [[String]]) {
    var widths = header.map(\.count)
    for row in rows { for (i, cell) in row.enumerated() { widths[i] = max(widths[i], cell.count) } }
    func line(_ cells: [String]) -> String {
        cells.enumerated().map { i, c in i == cells.count - 1 ? c : c + String(repeating: " ", count: max(0, widths[i] - c.count)) }
            .joined(separator: "  ")
    }
    print(line(header))
    for row in rows { print(line(row)) }
}

struct Apps: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the apps the host knows: live registrations and DBusActivatable desktop entries.",
        discussion: """
            On a desktop the host knows every DBusActivatable app installed; name apps to list only those and the apps \
            below them ('widget-host apps org.example' lists org.example.TapMe and org.example.Delivery). \
            For a live registration, REGISTERED-BY is the registering connection and SANDBOX what the kernel says \
            its process is: none (unsandboxed), flatpak:<app id> or snap:<name>. A sandboxed caller may act only for \
            its own app id and ids below it.
            """)

    @OptionGroup var bus: BusOptions
    @Argument(help: ArgumentHelp("List only these apps and those whose ids lie below them.", valueName: "app-id"))
    var only: [String] = []
    @Flag(help: "Print JSON for scripts instead of a table.") var json = false

    func validate() throws {
        for id in only where id.wholeMatch(of: /[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*\.?/) == nil {
            throw ValidationError(
                "'\(id)' is neither an app id nor the start of one: name an app (org.example.TapMe) or the first elements of ids (org.example)")
        }
    }

    /// Whether `appID` is one of `only` or lies below one (`org.example` takes `org.example.TapMe`, not `org.examples.X`).
    func wanted(_ appID: String) -> Bool {
        only.isEmpty || only.contains { prefix in
            let prefix = prefix.hasSuffix(".") ? String(prefix.dropLast()) : prefix
            return appID == prefix || appID.hasPrefix(prefix + ".")
        }
    }

    func run() async throws {
        let apps = try await bus.withHost { try await $0.apps() }.filter { wanted($0.appID) }
        if json {
            printJSON(.array(apps.map { app in .object(app.details.mapValues(\.jsonValue).merging(["app_id": .string(app.appID)]) { _, id in id }) }))
            return
        }
        if apps.isEmpty {
            print(
                only.isEmpty
                    ? "No apps: none registered and no DBusActivatable desktop entries found."
                    : "No apps match \(only.joined(separator: ", ")): none of those ids is registered or has a DBusActivatable desktop entry.")
            return
        }
        func list(_ items: [String]) -> String { items.isEmpty ? "-" : items.joined(separator: ",") }
        // A live registration's caller: unsandboxed ("none"), or the Flatpak or Snap it runs in, as the kernel says.
        func sandbox(_ app: KnownApp) -> String {
            guard let kind = app.sandbox else { return "-" }
            return app.sandboxAppID.map { "\(kind):\($0)" } ?? kind
        }
        printTable(
            ["APP ID", "PROTOCOL", "SOURCE", "REGISTERED-BY", "SANDBOX", "SCHEMES", "SURFACES"],
            apps.map { app in
                [
                    app.appID, app.protocol.isEmpty ? "?" : app.protocol, app.source.isEmpty ? "?" : app.source,
                    app.registeredBy ?? "-", sandbox(app), list(app.schemes), list(app.surfaces),
                ]
            })
    }
}

/// Renders a tap's details as "key=value" pairs.
func describeDetails(_ details: [String: OptionValue]) -> String {
    details.keys.sorted().compactMap { key -> String? in
        let value = details[key]!
        if case .array(_, let items) = value, items.isEmpty { return nil }
        return "\(key)=\(value.jsonValue.stableJSONText())"
    }.joined(separator: " ")
}

/// An object's properties for --json, with its path.
func propertiesJSON(_ properties: [String: OptionValue], path: String) -> JSONValue {
    .object(properties.mapValues(\.jsonValue).merging(["Path": .string(path)]) { a, _ in a })
}

struct Bundles: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the widget kinds apps offer (ListBundles): what 'widget-host add' can place.",
        discussion: "PARAMETERS marks a dynamic parameter with '*': 'widget-host options APP KIND PARAMETER' lists its choices.")

    @OptionGroup var bus: BusOptions
    @Flag(help: "Print each app's bundle JSON, as the app sent it, for scripts.") var json = false

    func run() async throws {
        let bundles = try await bus.withHost { try await $0.bundles() }
        if json {
            printJSON(.array(bundles.map { .object(["app_id": .string($0.appID), "bundle": (try? JSONValue.decode($0.bundle.json, lenient: true).0) ?? .null]) }))
            return
        }
        let rows = bundles.flatMap { app, bundle in
            bundle.kinds.map { kind in
                [
                    app, kind.kind, kind.families.map(\.rawValue).joined(separator: ","), kind.displayName.isEmpty ? "-" : kind.displayName,
                    kind.parameters.isEmpty ? "-" : kind.parameters.map { $0.name + ($0.dynamic ? "*" : "") }.joined(separator: ","),
                ]
            }
        }
        if rows.isEmpty {
            print("No widget kinds: no app has published a bundle (RegisterWidgets).")
            return
        }
        printTable(["APP", "KIND", "FAMILIES", "NAME", "PARAMETERS"], rows)
    }
}

struct Add: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Place a widget (AddWidget), as a renderer does for the user; prints its id.",
        discussion: "Example: widget-host add org.example.EmojiRangers EmojiRangerWidget systemSmall --set hero=spouty")

    @OptionGroup var bus: BusOptions
    @Argument(help: "The app id.") var app: String
    @Argument(help: "A kind of the app's bundle ('widget-host bundles' lists them).") var kind: String
    @Argument(help: "One of the kind's families, e.g. systemSmall.") var family: WidgetFamily
    @Option(name: .customLong("set"), help: ArgumentHelp("A configuration parameter's value (repeat for more).", valueName: "name=value"))
    var settings: [String] = []

    func run() async throws {
        var configuration: [String: OptionValue] = [:]
        for setting in settings {
            guard let equals = setting.firstIndex(of: "="), equals != setting.startIndex else {
                throw ValidationError("--set takes name=value, like --set hero=spouty; got '\(setting)'")
            }
            configuration[String(setting[..<equals])] = .string(String(setting[setting.index(after: equals)...]))
        }
        let widget = try await bus.withHost { try await $0.addWidget(appID: app, kind: kind, family: family, configuration: configuration) }
        print(widget.id)
    }
}

struct Widgets: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List placed widgets.")

    @OptionGroup var bus: BusOptions
    @Flag(help: "Print JSON for scripts instead of a table.") var json = false

    func run() async throws {
        let rows = try await bus.withHost { try await $0.widgets() }
        if json {
            printJSON(.array(rows.map { propertiesJSON($0.properties, path: $0.path) }))
            return
        }
        if rows.isEmpty {
            print("No widgets placed.")
            return
        }
        printTable(
            ["ID", "APP", "KIND", "FAMILY", "CONTENT"],
            rows.map { widget in
                [
                    widget.id, widget.appID, widget.kind, widget.familyName,
                    widget.contentJSON.isEmpty ? "-" : "\(widget.contentJSON.utf8.count) bytes",
                ]
            })
    }
}

struct Activities: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List Live Activities, most relevant first (LiveActivities.Order).")

    @OptionGroup var bus: BusOptions
    @Flag(help: "Print JSON for scripts instead of a table.") var json = false

    func run() async throws {
        let rows = try await bus.withHost { try await $0.activitiesByRelevance() }
        if json {
            printJSON(.array(rows.map { propertiesJSON($0.properties, path: $0.path) }))
            return
        }
        if rows.isEmpty {
            print("No Live Activities.")
            return
        }
        func date(_ date: Date?) -> String { date.map { iso8601($0) } ?? "-" }
        printTable(
            ["ID", "APP", "TYPE", "STATE", "RELEVANCE", "STALE", "DISMISSAL"],
            rows.map { activity in
                [
                    activity.id, activity.appID, activity.attributesType, activity.state, "\(activity.relevance)",
                    date(activity.staleDate), date(activity.dismissalDate),
                ]
            })
    }
}

struct TapActivity: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tap-activity",
        abstract: "Tap a presentation of a Live Activity (by id or object path, or the most relevant one) and print the outcome and details.",
        discussion: """
            'widget-host tap-activity most-relevant compactTrailing' taps the activity 'widget-host bar' shows, as a \
            bar's click command: the app opens at the activity's URL.
            """)

    /// What names the first activity of LiveActivities.Order.
    static let mostRelevant = "most-relevant"

    @OptionGroup var bus: BusOptions
    @Argument(help: "The activity: its id (a1), its object path, or most-relevant (the first of LiveActivities.Order).") var activity: String
    @Argument(help: "lockScreen, compactLeading, compactTrailing, minimal or expanded.") var presentation: ActivityPresentation
    @Argument(help: "The id of the tapped element; empty for the background.") var element: String = ""
    @OptionGroup var tap: TapArguments

    func run() async throws {
        try await tap.run(bus) { renderer, surface, token, deliver in
            let target = activity == Self.mostRelevant ? try await renderer.mostRelevantActivity()?.path : activity
            guard let target else { throw CLIError("no Live Activity runs, so there is none to tap ('widget-host activities' lists them)") }
            return try await renderer.tapActivity(
                target, presentation: presentation, element: element, surface: surface, activationToken: token, deliver: deliver)
        }
    }
}

/// What tap and tap-activity share: the tap's options and how it is made and printed.
struct TapArguments: ParsableArguments {
    @Option(help: "desktop, lock-screen, car or watch.") var surface: Surface = .desktop
    @Option(help: "The activation token the renderer got from the compositor.") var token: String?
    @Flag(help: "Resolve only: deliver nothing.") var dryRun = false

    /// Makes the tap (`tap` gets the surface, the token and whether to
    /// deliver); prints the outcome and details.
    func run(
        _ bus: BusOptions,
        _ tap: (WidgetHostRenderer, Surface, String?, Bool) async throws -> TapResult
    ) async throws {
        let result = try await bus.withHost { try await tap($0, surface, token, !dryRun) }
        print("\(result.outcomeName) \(describeDetails(result.details))")
    }
}

struct Tap: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Tap a widget (by id or object path) and print the outcome and details.")

    @OptionGroup var bus: BusOptions
    @Argument(help: "The widget: its id (w1) or object path.") var widget: String
    @Argument(help: "The id of the tapped element; empty for the background.") var element: String = ""
    @OptionGroup var tap: TapArguments

    func run() async throws {
        try await tap.run(bus) { renderer, surface, token, deliver in
            try await renderer.tap(widget, element: element, surface: surface, activationToken: token, deliver: deliver)
        }
    }
}

struct Lint: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Check a view tree (content JSON) for a family.")

    @OptionGroup var bus: BusOptions
    @Argument(help: "The content JSON file ('-' for standard input).") var file: String
    @Option(help: "The widget family, e.g. systemSmall.") var family: WidgetFamily
    @Option(help: "Also check URL schemes against those this app declares.") var app: String?

    func run() async throws {
        let data = file == "-" ? readStandardInput() : try Data(contentsOf: URL(fileURLWithPath: file))
        let content = String(decoding: data, as: UTF8.self)
        let findings = try await bus.withHost { try await $0.lint(content, family: family, appID: app) }
        if findings.isEmpty { print("\(file): no findings") }
        for finding in findings {
            print("\(file): \(finding.severityName): \(finding.code): \(finding.message)")
        }
        if findings.contains(where: { $0.severityName == LintSeverity.error.rawValue }) { throw ExitCode(1) }
    }
}

struct Monitor: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print one line per tap the host resolves (on widgets and Live Activities), as they happen.")

    @OptionGroup var bus: BusOptions

    func run() async throws {
        try await bus.withHost { renderer in
            for await tap in try await renderer.taps() {
                print("\(tap.target) \(tap.result.outcomeName) \(describeDetails(tap.result.details))")
                fflush(nil)
            }
        }
    }
}

extension Surface: ExpressibleByArgument {}
extension WidgetFamily: ExpressibleByArgument {}
extension ActivityPresentation: ExpressibleByArgument {}
