import ArgumentParser
import FoundationEssentials
import WidgetHostKit

/// `widget-host wait`: a script that starts an app in the background waits
/// with it until the app is ready, instead of racing its start-up.
struct Wait: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Wait until an app has registered with the host and, if asked, published its widget kinds, placed its widgets or started its Live Activities.",
        discussion: """
            For scripts that start an app and then use it: 'app & widget-host wait APP_ID --kinds' goes on once the app can \
            be placed. A registration counts while its connection is on the bus, so an app stopped and started again is \
            waited for afresh. Exits with status 0 once all is so, or with status 1 and what is missing when the timeout passes.
            """)

    @OptionGroup var bus: BusOptions
    @Argument(help: ArgumentHelp("The app id, e.g. org.example.TapMe.", valueName: "app-id")) var app: String
    @Flag(help: "Also wait until the app has published its widget kinds (RegisterWidgets), so widgets of it can be placed.")
    var kinds = false
    @Option(help: ArgumentHelp("Also wait until at least this many of the app's widgets are placed and have content.", valueName: "n"))
    var widgets: Int?
    @Option(help: ArgumentHelp("Also wait until the app has at least this many Live Activities that have not ended.", valueName: "n"))
    var activities: Int?
    @Option(help: ArgumentHelp("Seconds to wait at most (decimals allowed).", valueName: "seconds")) var timeout: Double = 30

    func validate() throws {
        guard timeout > 0, timeout.isFinite else {
            throw ValidationError("--timeout must be a positive number of seconds, e.g. 10")
        }
        for (name, value) in [("--widgets", widgets), ("--activities", activities)] where (value ?? 1) < 1 {
            throw ValidationError("\(name) must be at least 1")
        }
    }

    func run() async throws {
        let deadline = ContinuousClock.now + .milliseconds(Int64((timeout * 1000).rounded()))
        try await bus.withHost { renderer in
            while true {
                guard let missing = try await missing(renderer) else { return }
                guard ContinuousClock.now < deadline else {
                    throw CLIError("\(missing) after \(Self.seconds(timeout)); is it running? ('widget-host apps \(app)' shows what the host knows of it)")
                }
                // The host announces no bundles, so this asks again, briefly, rather than waiting on signals.
                try await Task.sleep(for: .milliseconds(100))
            }
        }
    }

    /// What the app still lacks, as a sentence; nil when it has all that was asked.
    func missing(_ renderer: WidgetHostRenderer) async throws -> String? {
        guard let registration = try await renderer.apps().first(where: { $0.appID == app })?.registeredBy,
            // The host hears of a connection's end a moment after the bus does.
            try await renderer.connection.nameOwner(registration) != nil
        else { return "\(app) has not registered" }
        if kinds, try await !renderer.bundles().contains(where: { $0.appID == app && !$0.bundle.kinds.isEmpty }) {
            return "\(app) has registered but published no widget kinds (RegisterWidgets)"
        }
        if let widgets {
            let shown = try await renderer.widgets().filter { $0.appID == app && !$0.contentJSON.isEmpty }.count
            if shown < widgets { return "\(app) has \(shown) widget\(shown == 1 ? "" : "s") with content, not \(widgets)" }
        }
        if let activities {
            let going = try await renderer.activities().filter { $0.appID == app && $0.state != "ended" }.count
            if going < activities { return "\(app) has \(going) Live Activit\(going == 1 ? "y" : "ies") going, not \(activities)" }
        }
        return nil
    }

    static func seconds(_ value: Double) -> String {
        value == value.rounded() ? "\(Int(value)) s" : "\(value) s"
    }
}
