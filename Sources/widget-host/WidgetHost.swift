import ArgumentParser
import DBus
import Foundation
import WidgetHostCore
import WidgetHostInterfaces

@main
struct WidgetHost: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "widget-host",
        abstract: "Talk to the WidgetHost service (org.widgethost.Host1).",
        version: WidgetHostVersion.current,
        subcommands: [
            Apps.self, Widgets.self, Tap.self, Activities.self, TapActivity.self, Reload.self, Options.self, Timeline.self, Lint.self,
            Monitor.self,
        ])
}

/// Options shared by every subcommand.
struct BusOptions: ParsableArguments {
    @Option(name: .customLong("address"), help: "Use this D-Bus address instead of the session bus.")
    var address: String?

    var bus: BusAddress { address.map(BusAddress.address) ?? .session }

    /// Connects, or exits with a message that says what to do.
    func connect() async throws -> Connection {
        do {
            return try await Connection.connect(bus, label: "cli")
        } catch {
            throw CLIError("cannot connect to \(bus): \(describe(error))")
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

enum Host {
    /// The properties of every object serving `interface`, by path (plus "Path"), from GetManagedObjects.
    static func objects(_ connection: Connection, _ interface: String) async throws -> [String: [String: DBusValue]] {
        let objects = try await calling(StandardInterfaces.getManagedObjects) {
            try await connection.managedObjects(destination: Host1Apps.busName, path: Host1Apps.objectPath)
        }
        return objects.compactMapValues { $0[interface] }.reduce(into: [:]) { byPath, entry in
            byPath[entry.key] = entry.value.merging(["Path": .objectPath(entry.key)]) { a, _ in a }
        }
    }

    /// Makes a call to the host, turning "no host" into a clear error.
    static func calling<T>(_ member: String, _ call: () async throws -> T) async throws -> T {
        do {
            return try await call()
        } catch let error as DBusError
            where error.name == DBusError.serviceUnknownName || error.name == DBusError.nameHasNoOwnerName
            || error.name == "org.freedesktop.DBus.Error.Spawn.ChildExited"
            || error.name == "org.freedesktop.DBus.Error.Spawn.ExecFailed"
        {
            throw CLIError(
                "no WidgetHost service on this bus: \(Host1Apps.busName) is not running and could not be started (\(error.message)). "
                    + "Start it with `widget-hostd`, or install packaging/org.widgethost.Host1.service for D-Bus activation.")
        } catch let error as DBusError {
            throw CLIError("\(member) failed: \(error.name): \(error.message)")
        }
    }

}

/// Plain JSON from D-Bus values (variants unwrapped, dictionaries as objects).
func jsonObject(_ value: DBusValue) -> Any {
    switch value.unwrapped {
    case .bool(let b): return b
    case .double(let d): return d
    case .string(let s), .objectPath(let s), .signature(let s): return s
    case .array(_, let items): return items.map(jsonObject)
    case .structure(let fields): return fields.map(jsonObject)
    case .dictionary(_, _, let entries):
        var object: [String: Any] = [:]
        for entry in entries { object[entry.key.stringValue ?? "\(jsonObject(entry.key))"] = jsonObject(entry.value) }
        return object
    case let other: return other.integerValue ?? 0
    }
}

func printJSON(_ object: Any) throws {
    let data = try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
    print(String(decoding: data, as: UTF8.self))
}

/// Prints rows as an aligned table.
func printTable(_ header: [String], _ rows: [[String]]) {
    var widths = header.map(\.count)
    for row in rows { for (i, cell) in row.enumerated() { widths[i] = max(widths[i], cell.count) } }
    func line(_ cells: [String]) -> String {
        cells.enumerated().map { i, c in i == cells.count - 1 ? c : c.padding(toLength: widths[i], withPad: " ", startingAt: 0) }
            .joined(separator: "  ")
    }
    print(line(header))
    for row in rows { print(line(row)) }
}

struct Apps: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the apps the host knows: live registrations and DBusActivatable desktop entries.",
        discussion: """
            For a live registration, REGISTERED-BY is the registering connection and SANDBOX what the kernel says \
            its process is: none (unsandboxed), flatpak:<app id> or snap:<name>. A sandboxed caller may act only for \
            its own app id and ids below it.
            """)

    @OptionGroup var bus: BusOptions
    @Flag(help: "Print JSON for scripts instead of a table.") var json = false

    func run() async throws {
        let connection = try await bus.connect()
        defer { connection.close() }
        let apps = try await Host.calling(Host1Apps.Method.listApps.rawValue) { try await Host1Apps.Proxy(connection).listApps() }
        if json {
            try printJSON(apps.map { id, details in ["app_id": id].merging(details.mapValues(jsonObject)) { a, _ in a } })
            return
        }
        if apps.isEmpty {
            print("No apps: none registered and no DBusActivatable desktop entries found.")
            return
        }
        func list(_ key: String, _ details: [String: DBusValue]) -> String {
            let items = details[key]?.unwrapped.arrayElements?.compactMap(\.stringValue) ?? []
            return items.isEmpty ? "-" : items.joined(separator: ",")
        }
        // A live registration's caller: unsandboxed ("none"), or the Flatpak or Snap it runs in, as the kernel says.
        func sandbox(_ details: [String: DBusValue]) -> String {
            guard let kind = details["sandbox"]?.unwrapped.stringValue else { return "-" }
            return details["sandbox_app_id"]?.unwrapped.stringValue.map { "\(kind):\($0)" } ?? kind
        }
        printTable(
            ["APP ID", "PROTOCOL", "SOURCE", "REGISTERED-BY", "SANDBOX", "SCHEMES", "SURFACES"],
            apps.map { id, details in
                [
                    id, details["protocol"]?.unwrapped.stringValue ?? "?", details["source"]?.unwrapped.stringValue ?? "?",
                    details["registered_by"]?.unwrapped.stringValue ?? "-", sandbox(details),
                    list("schemes", details), list("surfaces", details),
                ]
            })
    }
}

/// Renders an a{sv} of details as "key=value" pairs.
func describeDetails(_ details: [String: DBusValue]) -> String {
    details.keys.sorted().compactMap { key -> String? in
        let value = details[key]!.unwrapped
        if case .array(_, let items) = value, items.isEmpty { return nil }
        let text: String
        if let data = try? JSONSerialization.data(withJSONObject: jsonObject(value), options: [.sortedKeys, .fragmentsAllowed, .withoutEscapingSlashes]) {
            text = String(decoding: data, as: UTF8.self)
        } else {
            text = "\(value)"
        }
        return "\(key)=\(text)"
    }.joined(separator: " ")
}

struct Widgets: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List placed widgets.")

    @OptionGroup var bus: BusOptions
    @Flag(help: "Print JSON for scripts instead of a table.") var json = false

    func run() async throws {
        let connection = try await bus.connect()
        defer { connection.close() }
        let objects = try await Host.objects(connection, Host1Widget.name)
        let rows = objects.keys.sorted(by: MintedID.areInOrder).map { objects[$0]! }
        if json {
            try printJSON(rows.map { $0.mapValues(jsonObject) })
            return
        }
        if rows.isEmpty {
            print("No widgets placed.")
            return
        }
        printTable(
            ["ID", "APP", "KIND", "FAMILY", "CONTENT"],
            rows.compactMap { try? Host1Widget.Properties($0) }.map { widget in
                [
                    widget.id, widget.appID, widget.kind, widget.family,
                    widget.content.isEmpty ? "-" : "\(widget.content.utf8.count) bytes",
                ]
            })
    }
}

struct Activities: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List Live Activities, most relevant first (LiveActivities.Order).")

    @OptionGroup var bus: BusOptions
    @Flag(help: "Print JSON for scripts instead of a table.") var json = false

    func run() async throws {
        let connection = try await bus.connect()
        defer { connection.close() }
        let byPath = try await Host.objects(connection, Host1LiveActivity.name)
        let paths = try await Host.calling(StandardInterfaces.getAll) { try await Host1LiveActivities.Proxy(connection).properties().order }
        let rows = paths.compactMap { byPath[$0] }
        if json {
            try printJSON(rows.map { $0.mapValues(jsonObject) })
            return
        }
        if rows.isEmpty {
            print("No Live Activities.")
            return
        }
        func date(_ seconds: Int64) -> String {
            seconds > 0 ? ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: TimeInterval(seconds))) : "-"
        }
        printTable(
            ["ID", "APP", "TYPE", "STATE", "RELEVANCE", "STALE", "DISMISSAL"],
            rows.compactMap { try? Host1LiveActivity.Properties($0) }.map { activity in
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
        abstract: "Tap a presentation of a Live Activity (by id or object path) and print the outcome and details.")

    @OptionGroup var bus: BusOptions
    @Argument(help: "The activity: its id (a1) or object path.") var activity: String
    @Argument(help: "lockScreen, compactLeading, compactTrailing, minimal or expanded.") var presentation: ActivityPresentation
    @Argument(help: "The id of the tapped element; empty for the background.") var element: String = ""
    @OptionGroup var tap: TapArguments

    func run() async throws {
        let path = Host1LiveActivity.objectPath(idOrPath: activity)
        try await tap.run(bus) { connection, options, dryRun in
            let activity = Host1LiveActivity.Proxy(connection, path: path)
            return dryRun
                ? try await activity.resolve(presentation: presentation.rawValue, elementID: element, options: options)
                : try await activity.tap(presentation: presentation.rawValue, elementID: element, options: options)
        }
    }
}

/// What tap and tap-activity share: the tap's options and how it is made and printed.
struct TapArguments: ParsableArguments {
    @Option(help: "desktop, lock-screen, car or watch.") var surface: Surface?
    @Option(help: "The activation token the renderer got from the compositor.") var token: String?
    @Flag(help: "Resolve only: deliver nothing.") var dryRun = false

    /// Makes the tap (`tap` gets the options and whether to resolve only);
    /// prints the outcome and details.
    func run(
        _ bus: BusOptions,
        _ tap: (Connection, [String: DBusValue], Bool) async throws -> (outcome: String, details: [String: DBusValue])
    ) async throws {
        var options: [String: DBusValue] = [:]
        if let surface { options["surface"] = .string(surface.rawValue) }
        if let token { options["activation_token"] = .string(token) }
        let connection = try await bus.connect()
        defer { connection.close() }
        let member = dryRun ? Host1Widget.Method.resolve.rawValue : Host1Widget.Method.tap.rawValue
        let reply = try await Host.calling(member) { try await tap(connection, options, dryRun) }
        print("\(reply.outcome) \(describeDetails(reply.details))")
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
        try await tap.run(bus) { connection, options, dryRun in
            let widget = Host1Widget.Proxy(connection, path: Host1Widget.objectPath(idOrPath: widget))
            return dryRun
                ? try await widget.resolve(elementID: element, options: options)
                : try await widget.tap(elementID: element, options: options)
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
        let data = file == "-" ? FileHandle.standardInput.readDataToEndOfFile() : try Data(contentsOf: URL(fileURLWithPath: file))
        let connection = try await bus.connect()
        defer { connection.close() }
        let content = String(decoding: data, as: UTF8.self)
        let widgets = Host1Widgets.Proxy(connection)
        let findings =
            if let app {
                try await Host.calling(Host1Widgets.Method.lintAppContent.rawValue) {
                    try await widgets.lintAppContent(appID: app, family: family.rawValue, contentJSON: content)
                }
            } else {
                try await Host.calling(Host1Widgets.Method.lintContent.rawValue) {
                    try await widgets.lintContent(family: family.rawValue, contentJSON: content)
                }
            }
        if findings.isEmpty { print("\(file): no findings") }
        var errors = 0
        for (severity, code, message) in findings {
            if severity == "error" { errors += 1 }
            print("\(file): \(severity): \(code): \(message)")
        }
        if errors > 0 { throw ExitCode(1) }
    }
}

struct Monitor: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print one line per tap the host resolves (on widgets and Live Activities), as they happen.")

    @OptionGroup var bus: BusOptions

    func run() async throws {
        let connection = try await bus.connect()
        defer { connection.close() }
        let taps = try await connection.signals(Host1Widgets.Tapped.rule(sender: Host1Apps.busName, path: Host1Widgets.objectPath))
        for await message in taps {
            guard let tap = Host1Widgets.Tapped(message) else { continue }
            print("\(tap.target) \(tap.outcome) \(describeDetails(tap.details))")
            fflush(nil)
        }
    }
}

extension Surface: ExpressibleByArgument {}
extension WidgetFamily: ExpressibleByArgument {}
extension ActivityPresentation: ExpressibleByArgument {}
