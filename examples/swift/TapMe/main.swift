// Tap Me, on WidgetHostKit: the app publishes its widget, places four colour
// widgets and a link widget, and prints every URL a tap opens.
//
//     swift run tap-me-swift          (against a running widget-hostd)
import Foundation
import WidgetHostKit

/// Prints a line at once, also into a pipe or a file.
func say(_ line: String) {
    print(line)
    fflush(nil)
}

let bundle = #"{"widgets":[{"kind":"TapMeWidget","families":["systemSmall","systemMedium"],"displayName":"Tap Me"}]}"#
let app = WidgetHostApp(appID: "org.example.TapMeSwift", schemes: ["tap-me-widget"], bundle: bundle)
app.onOpenURL { url, context in
    say("Tap Me opened \(url)" + (context.activationToken.map { " (activation token \($0))" } ?? ""))
}
try await app.connect()

let renderer = try await WidgetHostRenderer.connect()
for colour in ["red", "green", "blue", "yellow"] {
    let widget = try await renderer.addWidget(appID: app.appID, kind: "TapMeWidget", family: .systemSmall)
    try await app.setContent(
        widget.id,
        .zstack(widgetURL: "tap-me-widget://show-\(colour)", [
            .color(ViewNode.Colour(colour), id: "swatch"),
            .text("Tap for \(colour)", id: "label").foreground(colour == "yellow" ? "black" : "white").font(size: 16, weight: .semibold),
        ]))
    say("placed \(widget.id) (\(colour))")
}
let linked = try await renderer.addWidget(appID: app.appID, kind: "TapMeWidget", family: .systemMedium)
try await app.setContent(linked.id, .vstack([.link("tap-me-widget://show-red", id: "show-red", [.text("Show Red View")])]))
say("placed \(linked.id) (link)")
renderer.close()
say("Tap Me is ready.")
try await Task.sleep(for: .seconds(Double(ProcessInfo.processInfo.environment["TAP_ME_SECONDS"] ?? "") ?? 60))
app.close()
