import ArgumentParser
import FoundationEssentials
import WidgetHostKit

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
        try await bus.withHost { renderer in
            let rows = try await renderer.widgets().filter { $0.appID == app && (kind == nil || $0.kind == kind) }
            if rows.isEmpty {
                throw CLIError("\(app) has no placed widgets\(kind.map { " of kind \($0)" } ?? "")")
            }
            for row in rows {
                let answer = try await renderer.reloadTimeline(row.path)
                print("\(row.id) \(answer.state)\(answer.runsAtMs.map { " until \(UnixTime.iso8601($0))" } ?? "")")
            }
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
        let choices = try await bus.withHost {
            try await $0.configurationOptions(appID: app, kind: kind, parameter: parameter)
        }.map { [$0.id, $0.display] }
        if json {
            printJSON(.array(choices.map { .object(["identifier": .string($0[0]), "display": .string($0[1])]) }))
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
        let info = try await bus.withHost { try await $0.describeTimeline(widget) }
        if json {
            var object = info.details.mapValues(\.jsonValue)
            if info.tracked { object["entries"] = .array(info.entries.map { .array([.integer($0.unixMs), .string($0.contentJSON)]) }) }
            return printJSON(.object(object))
        }
        guard info.tracked else {
            print("\(widget): no timeline — its app names no provider, so its content comes only from SetContent.")
            return
        }
        func date(_ ms: Int64?) -> String? { ms.map(UnixTime.iso8601) }
        let policy = info.policy
        print("policy:       \(policy.isEmpty ? "- (no timeline yet)" : policy)\(date(info.reloadAtMs).map { " at \($0)" } ?? "")")
        if let received = date(info.receivedMs) { print("received:     \(received)") }
        print("entries:      \(info.entries.count)")
        for (index, entry) in info.entries.enumerated() {
            let marker = index == info.current ? "▶" : " "
            print("  \(marker) \(UnixTime.iso8601(entry.unixMs))  \(preview(entry.contentJSON))")
        }
        if info.current == nil && !info.entries.isEmpty { print("  (none due yet: the widget shows what it showed before)") }
        if let fetching = info.fetching {
            print("fetching:     since \(date(info.fetchStartedMs) ?? "?") (\(fetching))")
        }
        if let queued = info.queued { print("queued:       one more reload after it (\(queued))") }
        if let next = date(info.nextReloadMs) {
            let reason = info.nextReloadReason ?? "?"
            let budget = info.waitsForBudget ? ", waiting for the budget" : ""
            print("next reload:  \(next) (\(reason)\(budget))")
        } else if info.fetching == nil {
            print("next reload:  none planned (policy \(policy.isEmpty ? "-" : policy)); on request, configuration or action")
        }
        print("budget:       \(info.budgetLeft) of \(info.budgetLimit) left in 24 h\(date(info.budgetFreesAtMs).map { "; next slot \($0)" } ?? "")")
        if info.failures > 0 {
            print("failures:     \(info.failures) in a row; last: \(info.lastFailure ?? "?")")
        } else if let last = info.lastFailure {
            print("last failure: \(date(info.lastFailureAtMs) ?? "?") (recovered): \(last)")
        }
    }
}

/// A view tree in one line: its texts in depth-first order, else the start of its JSON.
func preview(_ json: String, width: Int = 72) -> String {
    func texts(_ node: JSONValue) -> [String] {
        guard case .object(let element) = node else { return [] }
        let own = element["text"]?.stringValue.map { [$0] } ?? []
        guard case .array(let children)? = element["children"] else { return own }
        return own + children.flatMap(texts)
    }
    let tree = (try? JSONValue.decode(json, lenient: true).0) ?? .null
    let found = texts(tree)
    let line = found.isEmpty ? json : found.joined(separator: " · ")
    return line.count > width ? String(line.prefix(width - 1)) + "…" : line
}
