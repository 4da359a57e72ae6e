// Emoji Rangers, on WidgetHostKit: a timeline of a hero's health recovering
// entry by entry, dynamic hero options, a ⚡ button whose action heals the
// hero (the host then reloads the widget), and a Live Activity for a quest.
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

struct Rangers: WidgetTimelineProvider {
    let health: Health

    func timeline(for request: TimelineRequest) async throws -> WidgetTimeline {
        if request.kind == "LeaderboardWidget" {
            // Every hero in its own link, as the documents' leaderboard does.
            let rows = heroes.map { id, emoji, name in
                ViewNode.link("emoji-rangers://hero/\(id)", id: id, [.text("\(emoji) \(name) \(health.at(id, Date()))%")])
            }
            return WidgetTimeline(entries: [.init(date: Date(), content: .vstack(rows))], policy: .after(Date() + 15 * 60))
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
            entries.append(.init(date: date, content: .vstack(widgetURL: "emoji-rangers://hero/\(id)", [
                .text(emoji, id: "avatar"), .text(name, id: "name"), .text("\(level)%", id: "health-label"),
                .button(action: "superCharge", parameter: .string(id), id: "supercharge", [.text("⚡ Super Charge")]),
            ])))
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
let quest = try await app.startActivity(
    attributesType: "QuestAttributes",
    content: ActivityViews(
        widgetURL: "emoji-rangers://quest/1", lockScreen: .text("🐳 Spouty is on a quest"), compactLeading: .text("🐳"),
        compactTrailing: .text("12 min"), minimal: .text("🐳"), expanded: .vstack([.text("Spouty's quest"), .text("12 min left")])),
    state: ["minutes": .int(12)])
say("registered \(app.appID); quest \(quest) started")
try await Task.sleep(for: .seconds(Double(ProcessInfo.processInfo.environment["EMOJI_RANGERS_SECONDS"] ?? "") ?? 300))
try? await app.endActivity(quest, dismissal: "immediate")
app.close()
