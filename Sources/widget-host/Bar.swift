import ArgumentParser
import FoundationEssentials
import Glibc
import WidgetHostKit

/// `widget-host bar`: the most relevant Live Activity as a line that a status
/// bar shows (Waybar, eww, AGS, Quickshell, polybar, i3blocks, yambar: docs/bars.md).
struct Bar: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the most relevant Live Activity as a status bar's line: one when it starts and one each time what it shows changes.",
        discussion: """
            For status bars (docs/bars.md has each bar's configuration). The line shows the first activity of \
            LiveActivities.Order: its text is the words of its compactLeading and compactTrailing presentations, \
            joined by a space, with texts bound to its state filled in (an icon alone gives its label); its tooltip \
            the words of its expanded presentation; its class its state: active, stale or ended. An empty text means \
            no activity runs, or no host is on the bus: the bar then hides the module. It follows the host's signals \
            and prints nothing more while nothing changes (no timer); it never starts the host, and outlives its \
            restarts. It runs until the bus goes away. The bar's click command is \
            'widget-host tap-activity most-relevant compactTrailing', which opens the app at the activity's URL.
            """)

    enum Format: String, ExpressibleByArgument, CaseIterable {
        case waybar, json, text
    }

    @OptionGroup var bus: BusOptions
    @Option(
        help: ArgumentHelp(
            "waybar: a JSON object a line as Waybar's custom module reads it (return-type json), its text and tooltip Pango markup; json: a JSON object a line with every field, for eww's deflisten, AGS and Quickshell; text: the text alone, for i3blocks, polybar and yambar.",
            valueName: "format"))
    var format: Format = .waybar

    func run() async throws {
        let renderer: WidgetHostRenderer
        do {
            renderer = try await WidgetHostRenderer.connect(bus.bus)
        } catch {
            throw CLIError("cannot connect to \(bus.bus): \(describe(error))")
        }
        defer { renderer.close() }
        var shown: String?
        for await activity in try await renderer.mostRelevantActivityUpdates() {
            let line = BarLine(activity).formatted(format)
            guard line != shown else { continue }
            shown = line
            print(line)
            fflush(nil)
        }
        throw CLIError("the bus \(bus.bus) went away")
    }
}

/// What a bar shows of an activity, or of none.
struct BarLine: Equatable {
    var id = "", appID = "", state = "", leading = "", trailing = "", tooltip = ""

    init(_ activity: RenderedActivity?) {
        guard let activity else { return }
        id = activity.id
        appID = activity.appID
        state = activity.state
        leading = activity.text(of: .compactLeading)
        trailing = activity.text(of: .compactTrailing)
        tooltip = activity.text(of: .expanded)
    }

    /// One line: a line break inside would end the bar's line early.
    var text: String { Self.oneLine([leading, trailing].filter { !$0.isEmpty }.joined(separator: " ")) }
    /// The CSS classes: the state, none without an activity.
    var classes: [String] { state.isEmpty ? [] : [state] }

    func formatted(_ format: Bar.Format) -> String {
        switch format {
        case .text:
            return text
        case .waybar:
            return JSONValue.object([
                "text": .string(Self.markup(text)), "tooltip": .string(Self.markup(tooltip)), "alt": .string(state),
                "class": .array(classes.map(JSONValue.string)),
            ]).stableJSONText()
        case .json:
            return JSONValue.object([
                "id": .string(id), "app_id": .string(appID), "state": .string(state), "text": .string(text), "leading": .string(leading),
                "trailing": .string(trailing), "tooltip": .string(tooltip), "class": .array(classes.map(JSONValue.string)),
            ]).stableJSONText()
        }
    }

    static func oneLine(_ text: String) -> String {
        text.split(whereSeparator: \.isNewline).joined(separator: " ")
    }

    /// Text as Pango markup shows it literally: Waybar reads a custom module's text and tooltip as markup.
    static func markup(_ text: String) -> String {
        String(
            text.flatMap { character -> [Character] in
                switch character {
                case "&": Array("&amp;")
                case "<": Array("&lt;")
                case ">": Array("&gt;")
                default: [character]
                }
            })
    }
}
