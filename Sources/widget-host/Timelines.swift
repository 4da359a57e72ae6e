import ArgumentParser
import DBus
import Foundation
import WidgetHostCore
import WidgetHostInterfaces

struct Reload: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Ask for new timelines of an app's placed widgets (all, or one kind's) and print what each will do.",
        discussion: """
            Calls Reload on each widget: a reload that counts against the widget's daily budget. (An app \
            reloads its own widgets outside the budget with Widgets.ReloadTimelines on its registered connection.)
            """)

    @OptionGroup var bus: BusOptions
    @Argument(help: "The app id, e.g. org.example.EmojiRangers.") var app: String
    @Argument(help: "Only widgets of this kind.") var kind: String?

    func run() async throws {
        let connection = try await bus.connect()
        defer { connection.close() }
        let rows = try await Host.objects(connection, Host1Widget.name).values.compactMap { try? Host1Widget.Properties($0) }
            .filter { $0.appID == app && (kind == nil || $0.kind == kind) }
            .sorted { MintedID.areInOrder($0.id, $1.id) }
        if rows.isEmpty {
            throw CLIError("\(app) has no placed widgets\(kind.map { " of kind \($0)" } ?? "")")
        }
        for row in rows {
            let id = row.id
            let (state, at) = try await Host.calling(Host1Widget.Method.reload.rawValue) {
                try await Host1Widget.Proxy(connection, path: Host1Widget.objectPath(id)).reload()
            }
            print("\(id) \(state)\(at > 0 ? " until \(UnixTime.iso8601(at))" : "")")
        }
    }
}

struct Options: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the choices an app provides for a dynamic configuration parameter (GetConfigurationOptions).")

    @OptionGroup var bus: BusOptions
    @Argument(help: "The app id.") var app: String
    @Argument(help: "The widget kind.") var kind: String
    @Argument(help: "The dynamic parameter, e.g. hero.") var parameter: String
    @Flag(help: "Print JSON for scripts instead of a table.") var json = false

    func run() async throws {
        let connection = try await bus.connect()
        defer { connection.close() }
        let choices = try await Host.calling(Host1Widgets.Method.getConfigurationOptions.rawValue) {
            try await Host1Widgets.Proxy(connection).getConfigurationOptions(appID: app, kind: kind, parameter: parameter, configuration: [:])
        }.map { [$0.0, $0.1] }
        if json {
            try printJSON(choices.map { ["identifier": $0[0], "display": $0[1]] })
        } else if choices.isEmpty {
            print("\(app) offers no choices for \(parameter).")
        } else {
            printTable(["IDENTIFIER", "DISPLAY"], choices)
        }
    }
}

struct Timeline: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show a widget's timeline: its entries, the one shown, the next reload and why, and the budget left.")

    @OptionGroup var bus: BusOptions
    @Argument(help: "The widget: its id (w1) or object path.") var widget: String
    @Flag(help: "Print JSON for scripts instead of text.") var json = false

    func run() async throws {
        let connection = try await bus.connect()
        defer { connection.close() }
        let info = try await Host.calling(Host1Widget.Method.describeTimeline.rawValue) {
            try await Host1Widget.Proxy(connection, path: Host1Widget.objectPath(idOrPath: widget)).describeTimeline()
        }
        if json { return try printJSON(info.mapValues(jsonObject)) }
        guard info["tracked"]?.boolValue == true else {
            print("\(widget): no timeline — its app names no provider, so its content comes only from SetContent.")
            return
        }
        func date(_ key: String) -> String? { info[key]?.integerValue.flatMap { $0 > 0 ? UnixTime.iso8601($0) : nil } }
        let current = info["current"]?.integerValue ?? -1
        let entries = info["entries"]?.arrayElements ?? []
        let policy = info["policy"]?.stringValue ?? ""
        print("policy:       \(policy.isEmpty ? "- (no timeline yet)" : policy)\(date("reload_at").map { " at \($0)" } ?? "")")
        if let received = date("received") { print("received:     \(received)") }
        print("entries:      \(entries.count)")
        for (index, entry) in entries.enumerated() {
            guard case .structure(let fields) = entry, fields.count == 2 else { continue }
            let marker = index == current ? "▶" : " "
            print("  \(marker) \(UnixTime.iso8601(fields[0].integerValue ?? 0))  \(preview(fields[1].stringValue ?? ""))")
        }
        if current < 0 && !entries.isEmpty { print("  (none due yet: the widget shows what it showed before)") }
        if let fetching = info["fetching"]?.stringValue {
            print("fetching:     since \(date("fetch_started") ?? "?") (\(fetching))")
        }
        if let queued = info["queued"]?.stringValue { print("queued:       one more reload after it (\(queued))") }
        if let next = date("next_reload") {
            let reason = info["next_reload_reason"]?.stringValue ?? "?"
            let budget = info["waits_for_budget"]?.boolValue == true ? ", waiting for the budget" : ""
            print("next reload:  \(next) (\(reason)\(budget))")
        } else if info["fetching"] == nil {
            print("next reload:  none planned (policy \(policy.isEmpty ? "-" : policy)); on request, configuration or action")
        }
        let left = info["budget_left"]?.integerValue ?? 0
        let limit = info["budget_limit"]?.integerValue ?? 0
        print("budget:       \(left) of \(limit) left in 24 h\(date("budget_frees_at").map { "; next slot \($0)" } ?? "")")
        if let failures = info["failures"]?.integerValue, failures > 0 {
            print("failures:     \(failures) in a row; last: \(info["last_failure"]?.stringValue ?? "?")")
        } else if let last = info["last_failure"]?.stringValue {
            print("last failure: \(date("last_failure_at") ?? "?") (recovered): \(last)")
        }
    }
}

/// A view tree in one line: its texts in depth-first order, else the start of its JSON.
func preview(_ json: String, width: Int = 72) -> String {
    func texts(_ node: Any) -> [String] {
        guard let element = node as? [String: Any] else { return [] }
        let own = (element["text"] as? String).map { [$0] } ?? []
        return own + ((element["children"] as? [Any]) ?? []).flatMap(texts)
    }
    let tree = (try? JSONSerialization.jsonObject(with: Data(json.utf8))) ?? [:]
    let found = texts(tree)
    let line = found.isEmpty ? json : found.joined(separator: " · ")
    return line.count > width ? String(line.prefix(width - 1)) + "…" : line
}
