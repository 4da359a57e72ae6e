// Tap Me, on WidgetHostKit: the app publishes its widget, places four colour
// widgets and a link widget, and prints every URL a tap opens. It places its
// widgets once: when the host already has the app's widgets (it ran before),
// it gives them their content again instead of placing more. It runs until it
// is stopped (Ctrl-C, SIGTERM), or for TAP_ME_SECONDS when that is set.
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

/// The view tree of the widget for `colour`; nil: the link widget.
func view(_ colour: String?) -> ViewNode {
    guard let colour else { return .vstack([.link("tap-me-widget://show-red", id: "show-red", [.text("Show Red View")])]) }
    return .zstack(widgetURL: "tap-me-widget://show-\(colour)", [
        .color(ViewNode.Colour(colour), id: "swatch"),
        .text("Tap for \(colour)", id: "label").foreground(colour == "yellow" ? "black" : "white").font(size: 16, weight: .semibold),
    ])
}
let colours: [String?] = ["red", "green", "blue", "yellow", nil]
let placed = try await app.currentConfigurations().sorted { $0.id.count == $1.id.count ? $0.id < $1.id : $0.id.count < $1.id.count }
if placed.count == colours.count {
    for (widget, colour) in zip(placed, colours) {
        try await app.setContent(widget.id, view(colour))
        say("found \(widget.id) (\(colour ?? "link")), placed before")
    }
} else {
    let renderer = try await WidgetHostRenderer.connect()
    for colour in colours {
        let widget = try await renderer.addWidget(appID: app.appID, kind: "TapMeWidget", family: colour == nil ? .systemMedium : .systemSmall)
        try await app.setContent(widget.id, view(colour))
        say("placed \(widget.id) (\(colour ?? "link"))")
    }
    renderer.close()
}
say("Tap Me is ready; Ctrl-C or kill \(getpid()) stops it.")
if let seconds = Double(ProcessInfo.processInfo.environment["TAP_ME_SECONDS"] ?? "") {
    try await Task.sleep(for: .seconds(seconds))
} else {
    while true { try await Task.sleep(for: .seconds(3600)) }
}
app.close()
