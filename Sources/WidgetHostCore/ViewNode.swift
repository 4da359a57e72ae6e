#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A view tree element as a Codable Swift value: what apps build and renderers
/// read, encoding to exactly the content JSON of docs/widgets.md that the host
/// validates with ``ViewTree/parse(_:limits:)``.
///
/// ```swift
/// let tree = ViewNode.vstack(widgetURL: "emoji-rangers://hero/spouty", [
///     .text("🐳", id: "avatar"),
///     .link("emoji-rangers://hero/spouty", id: "spouty", [.text("Spouty")]),
///     .button(action: "superCharge", parameter: .string("spouty"), id: "charge", [.text("⚡")]),
/// ])
/// try app.setContent(widget, tree)
/// ```
public struct ViewNode: Codable, Sendable, Equatable {
    /// The element type: `vstack`, `text`, `link`, `button`, `toggle`, or any other a renderer knows.
    public var type: String
    /// Unique within the tree; what a renderer reports when the element is tapped.
    public var id: String?
    public var children: [ViewNode]
    /// The `widgetURL` modifier.
    public var widgetURL: String?
    /// Every other key (`url`, `action`, `parameter`, `isOn`, `text`, …), as JSON.
    public var fields: [String: JSONValue]

    public init(
        _ type: String, id: String? = nil, widgetURL: String? = nil, fields: [String: JSONValue] = [:], _ children: [ViewNode] = []
    ) {
        self.type = type
        self.id = id
        self.widgetURL = widgetURL
        self.fields = fields
        self.children = children
    }

    /// A vertical stack.
    public static func vstack(id: String? = nil, widgetURL: String? = nil, _ children: [ViewNode]) -> ViewNode {
        ViewNode("vstack", id: id, widgetURL: widgetURL, children)
    }

    /// Text.
    public static func text(_ text: String, id: String? = nil) -> ViewNode {
        ViewNode("text", id: id, fields: ["text": .string(text)])
    }

    /// A link that opens `url` (honoured in families that support links).
    public static func link(_ url: String, id: String, _ children: [ViewNode]) -> ViewNode {
        ViewNode("link", id: id, fields: ["url": .string(url)], children)
    }

    /// A button that performs `action` in the app without opening it.
    public static func button(action: String, parameter: JSONValue? = nil, id: String, _ children: [ViewNode]) -> ViewNode {
        ViewNode("button", id: id, fields: ["action": .string(action)].merging(parameter.map { ["parameter": $0] } ?? [:]) { a, _ in a }, children)
    }

    /// A toggle showing `isOn`; a tap sends the app its new state.
    public static func toggle(action: String, isOn: Bool, parameter: JSONValue? = nil, id: String, _ children: [ViewNode] = []) -> ViewNode {
        var fields: [String: JSONValue] = ["action": .string(action), "isOn": .bool(isOn)]
        if let parameter { fields["parameter"] = parameter }
        return ViewNode("toggle", id: id, fields: fields, children)
    }

    /// The content JSON.
    public var json: String {
        (try? JSONEncoder().encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }

    /// Decodes content JSON (as `Content` properties and timelines carry it).
    public static func decode(_ json: String) throws -> ViewNode {
        try JSONDecoder().decode(ViewNode.self, from: Data(json.utf8))
    }

    // MARK: Codable: the fixed keys, and every other key flat beside them

    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ string: String) { stringValue = string }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Key.self)
        type = try container.decode(String.self, forKey: Key("type"))
        id = try container.decodeIfPresent(String.self, forKey: Key("id"))
        widgetURL = try container.decodeIfPresent(String.self, forKey: Key("widgetURL"))
        children = try container.decodeIfPresent([ViewNode].self, forKey: Key("children")) ?? []
        var fields: [String: JSONValue] = [:]
        for key in container.allKeys where !["type", "id", "widgetURL", "children"].contains(key.stringValue) {
            fields[key.stringValue] = try container.decode(JSONValue.self, forKey: key)
        }
        self.fields = fields
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        try container.encode(type, forKey: Key("type"))
        try container.encodeIfPresent(id, forKey: Key("id"))
        try container.encodeIfPresent(widgetURL, forKey: Key("widgetURL"))
        for (key, value) in fields.sorted(by: { $0.key < $1.key }) { try container.encode(value, forKey: Key(key)) }
        if !children.isEmpty { try container.encode(children, forKey: Key("children")) }
    }
}
