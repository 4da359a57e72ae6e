// Emoji Rangers, on WidgetHostKit: a timeline of a hero's health recovering
// entry by entry, dynamic hero options, a ⚡ button whose action heals the
// hero (the host then reloads the widget), and a Live Activity for a quest.
//
// It starts its quest once: when the host still has the app's quest (it ran
// before), it goes on with that one. It runs until it is stopped (Ctrl-C,
// SIGTERM), or for EMOJI_RANGERS_SECONDS when that is set, and then ends the quest.
//
//     swift run emoji-rangers-swift   (against a running widget-hostd)
import Foundation
import Synchronization
import WidgetHostKit

/// Prints a line at once, also into a pipe or a file.
func say(_ line: String) {
    print(line)
    fflush(nil)
}

let heroes = [("spouty", "🐳", "Spouty"), ("egghead", "🦄", "Egghead"), ("spook", "👻", "Spook")]
let step = Double(ProcessInfo.processInfo.environment["EMOJI_RANGERS_STEP"] ?? "") ?? 10

/// Each hero's health and when it was measured; recovers 20 points per step.
final class Health: Sendable {
    private let values: Mutex<[String: (Int, Date)]>
    init(start: Int) { values = Mutex(Dictionary(uniqueKeysWithValues: heroes.map { ($0.0, (start, Date())) })) }
    func at(_ hero: String, _ date: Date) -> Int {
        values.withLock { values in
            let (health, since) = values[hero] ?? (100, date)
            return min(100, health + Int(date.timeIntervalSince(since) / step) * 20)
        }
    }
    func charge(_ hero: String) { values.withLock { $0[hero] = (100, Date()) } }
}

/// Each hero's card, in both appearances.
let heroColours: [String: ViewNode.Colour] = [
    "spouty": .adaptive(light: "#d6ebff", dark: "#173049"), "egghead": .adaptive(light: "#ffe1f1", dark: "#45203a"),
    "spook": .adaptive(light: "#ebe4ff", dark: "#2c2545"),
]

/// A hero's widget in the rendering vocabulary (docs/vocabulary.md): the
/// avatar on the hero's colour, its name, a health bar and a button.
func heroCard(_ id: String, _ emoji: String, _ name: String, _ level: Int) -> ViewNode {
    .color(heroColours[id] ?? "white", widgetURL: "emoji-rangers://hero/\(id)", [
        .vstack([
            .text(emoji, id: "avatar").font(size: 40),
            .text(name, id: "name").font(size: 16, weight: .bold),
            .progress(Double(level) / 100, id: "health"),
            .text("\(level)%", id: "health-label").font(size: 12).opacity(0.8),
            .button(action: "superCharge", parameter: .string(id), id: "supercharge", [.text("⚡ Super Charge")]).label("Super charge \(name)"),
        ]).spacing(4).padding(10),
    ]).label("\(name), \(level)% health")
}

struct Rangers: WidgetTimelineProvider {
    let health: Health

    func timeline(for request: TimelineRequest) async throws -> WidgetTimeline {
        if request.kind == "LeaderboardWidget" {
            // Every hero in its own link, as the documents' leaderboard does.
            let rows = heroes.map { id, emoji, name in
                let level = health.at(id, Date())
                return ViewNode.link("emoji-rangers://hero/\(id)", id: id, [
                    .hstack([.text(emoji).font(size: 22), .text(name).font(weight: .semibold), .spacer(), .text("\(level)%")]).spacing(8)
                ]).label("\(name), \(level)% health")
            }
            let board = ViewNode.vstack([.text("Leaderboard").font(size: 15, weight: .bold), .divider] + rows)
                .spacing(6).padding(14).label("Ranger Leaderboard")
            return WidgetTimeline(entries: [.init(date: Date(), content: board)], policy: .after(Date() + 15 * 60))
        }
        let hero = request.configuration["hero"]?.stringValue ?? "spouty"
        guard let (id, emoji, name) = heroes.first(where: { $0.0 == hero }) else {
            throw AppError(name: "org.example.EmojiRangers.Error.UnknownHero", message: "no hero '\(hero)'")
        }
        say("timeline for \(id) (\(request.reason))")
        var entries: [WidgetTimeline.Entry] = []
        var date = Date()
        while true {
            let level = health.at(id, date)
            entries.append(.init(date: date, content: heroCard(id, emoji, name, level)))
            if level >= 100 { return WidgetTimeline(entries: entries, policy: .atEnd) }
            date += step
        }
    }

    func options(kind: String, parameter: String, configuration: [String: OptionValue]) async throws -> [ConfigurationOption] {
        heroes.map { ConfigurationOption(id: $0.0, display: "\($0.1) \($0.2)") }
    }
}

let bundle = """
    {"widgets":[{"kind":"EmojiRangerWidget","families":["systemSmall","systemMedium"],"displayName":"Ranger Detail",\
    "configuration":{"intent":"SelectCharacterIntent","parameters":[{"name":"hero","dynamic":true}]}},\
    {"kind":"LeaderboardWidget","families":["systemMedium","systemLarge"],"displayName":"Ranger Leaderboard"}]}
    """
let health = Health(start: 40)
let app = WidgetHostApp(appID: "org.example.EmojiRangersSwift", schemes: ["emoji-rangers"], bundle: bundle)
app.provideTimelines(with: Rangers(health: health))
app.onPerformAction { action, parameter, _ in
    guard action == "superCharge", let hero = parameter?.stringValue else { return }
    health.charge(hero)
    say("super charged \(hero)")
}
app.onOpenURL { url, _ in say("showing \(url)") }
try await app.connect()
let renderer = try await WidgetHostRenderer.connect()
let running = try await renderer.activities().first { $0.appID == app.appID && $0.attributesType == "QuestAttributes" && $0.endDate == nil }
renderer.close()
let quest: String
if let running { quest = running.id } else { quest = try await startQuest() }
/// Starts the quest Live Activity; its id.
func startQuest() async throws -> String {
    try await app.startActivity(
        attributesType: "QuestAttributes",
        content: ActivityViews(
            widgetURL: "emoji-rangers://quest/1",
            lockScreen: .hstack([
                .text("🐳").font(size: 32),
                .vstack([.text("Spouty is on a quest").font(weight: .bold), .text(bind: "state.minutes", format: "{} min left", placeholder: "On the way")])
                    .alignment("leading"),
            ]).spacing(12),
            // The times bind to the state, so an Update of "minutes" alone redraws them (docs/vocabulary.md#binding).
            compactLeading: .text("🐳"), compactTrailing: .text(bind: "state.minutes", format: "{} min", placeholder: "…"),
            minimal: .text("🐳"),
            expanded: .vstack([
                .text("Spouty's quest").font(size: 17, weight: .bold), .text(bind: "state.minutes", format: "{} min left", placeholder: "On the way"),
            ]).spacing(6).padding(12)),
        state: ["minutes": .int(12)])
}
say("registered \(app.appID); quest \(quest) \(running == nil ? "started" : "goes on"); Ctrl-C or kill \(getpid()) stops it.")
if let seconds = Double(ProcessInfo.processInfo.environment["EMOJI_RANGERS_SECONDS"] ?? "") {
    try await Task.sleep(for: .seconds(seconds))
    try? await app.endActivity(quest, dismissal: "immediate")
} else {
    while true { try await Task.sleep(for: .seconds(3600)) }
}
app.close()
