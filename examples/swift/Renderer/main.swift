// A small command-line renderer on WidgetHostKit: lists widgets, prints their
// view trees, taps by element id, and follows changes.
//
//     swift run widget-renderer list
//     swift run widget-renderer show w1
//     swift run widget-renderer tap w1 show-red [--token TOKEN]
//     swift run widget-renderer watch
import Foundation
import WidgetHostKit

func describe(_ node: ViewNode, depth: Int = 0) -> [String] {
    let pad = String(repeating: "  ", count: depth)
    var line = pad + node.type + (node.id.map { " #\($0)" } ?? "")
    if let text = node.fields["text"]?.stringValue { line += " \"\(text)\"" }
    if let url = node.fields["url"]?.stringValue ?? node.widgetURL { line += " → \(url)" }
    if let action = node.fields["action"]?.stringValue { line += " ⚙ \(action)" }
    return [line] + node.children.flatMap { describe($0, depth: depth + 1) }
}

let arguments = Array(CommandLine.arguments.dropFirst())
let renderer = try await WidgetHostRenderer.connect()
defer { renderer.close() }
switch arguments.first {
case "list", nil:
    for widget in try await renderer.widgets() {
        print("\(widget.id)\t\(widget.appID)\t\(widget.kind)\t\(widget.family?.rawValue ?? "?")")
    }
case "show":
    guard let id = arguments.dropFirst().first, let widget = try await renderer.widgets().first(where: { $0.id == id }) else {
        print("usage: widget-renderer show WIDGET")
        exit(2)
    }
    print(widget.content.map { describe($0).joined(separator: "\n") } ?? "(no content yet)")
case "tap":
    guard arguments.count >= 2 else {
        print("usage: widget-renderer tap WIDGET [ELEMENT] [--token TOKEN]")
        exit(2)
    }
    let token = arguments.firstIndex(of: "--token").map { arguments[$0 + 1] }
    let element = arguments.count > 2 && arguments[2] != "--token" ? arguments[2] : ""
    let result = try await renderer.tap(arguments[1], element: element, activationToken: token)
    print("\(result.outcome.rawValue) \(result.url ?? result.action ?? result.activityType ?? result.reason?.rawValue ?? "")")
case "watch":
    for await change in try await renderer.changes() { print(change) }
default:
    print("usage: widget-renderer list | show WIDGET | tap WIDGET [ELEMENT] [--token TOKEN] | watch")
    exit(2)
}
