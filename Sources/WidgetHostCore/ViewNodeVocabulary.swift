/// The rendering vocabulary (docs/vocabulary.md) as Swift: element builders
/// and SwiftUI-like modifiers that set the presentational keys, so a tree
/// built in Swift draws the same on every renderer.
///
/// ```swift
/// ViewNode.color(.adaptive(light: "#d6ebff", dark: "#173049"), [
///     .vstack([
///         .text("🐳", id: "avatar").font(size: 40),
///         .text("Spouty", id: "name").font(size: 16, weight: .bold),
///         .progress(0.72, id: "health"),
///     ]).spacing(4).padding(10),
/// ]).label("Spouty, 72% health")
/// ```
extension ViewNode {
    /// A colour: a CSS colour (`"#0a84ff"`, `"red"`, `"rgb(…)"`), or one for each appearance.
    public struct Colour: Sendable, Equatable, ExpressibleByStringLiteral {
        public var json: JSONValue

        public init(stringLiteral value: String) { json = .string(value) }
        public init(_ css: String) { json = .string(css) }
        private init(json: JSONValue) { self.json = json }

        /// A colour for the light appearance and one for the dark.
        public static func adaptive(light: String, dark: String) -> Colour {
            Colour(json: .object(["light": .string(light), "dark": .string(dark)]))
        }
    }

    // FontWeight, the names `fontWeight` may be, is generated from
    // vocabulary/vocabulary.json with the lint's tables.

    // MARK: Elements

    /// A horizontal stack.
    public static func hstack(id: String? = nil, widgetURL: String? = nil, _ children: [ViewNode]) -> ViewNode {
        ViewNode("hstack", id: id, widgetURL: widgetURL, children)
    }

    /// Children on top of each other; the first sets the size.
    public static func zstack(id: String? = nil, widgetURL: String? = nil, _ children: [ViewNode]) -> ViewNode {
        ViewNode("zstack", id: id, widgetURL: widgetURL, children)
    }

    /// Text a Live Activity's renderer takes from its state or attributes:
    /// `bind` is `state.KEY` or `attributes.KEY`, put into `format` at `{}`;
    /// `placeholder` shows while the key is missing (and in a widget).
    public static func text(bind: String, format: String? = nil, placeholder: String, id: String? = nil) -> ViewNode {
        var fields: [String: JSONValue] = ["bind": .string(bind), "text": .string(placeholder)]
        if let format { fields["format"] = .string(format) }
        return ViewNode("text", id: id, fields: fields)
    }

    /// A freedesktop icon by name, such as `mail-unread-symbolic`.
    public static func image(icon: String, size: Double? = nil, id: String? = nil) -> ViewNode {
        ViewNode("image", id: id, fields: ["icon": .string(icon)].merging(size.map { ["size": .number($0)] } ?? [:]) { a, _ in a })
    }

    /// An image from a file path, a `file:` URL or a `data:` URL.
    public static func image(src: String, size: Double? = nil, id: String? = nil) -> ViewNode {
        ViewNode("image", id: id, fields: ["src": .string(src)].merging(size.map { ["size": .number($0)] } ?? [:]) { a, _ in a })
    }

    /// Room that pushes the stack's other children apart.
    public static func spacer(minLength: Double? = nil) -> ViewNode {
        ViewNode("spacer", fields: minLength.map { ["minLength": .number($0)] } ?? [:])
    }

    /// A thin line across the stack.
    public static var divider: ViewNode { ViewNode("divider") }

    /// A colour filling its parent, with its children on it.
    public static func color(_ colour: Colour, id: String? = nil, widgetURL: String? = nil, _ children: [ViewNode] = []) -> ViewNode {
        ViewNode("color", id: id, widgetURL: widgetURL, fields: ["color": colour.json], children)
    }

    /// A bar filled to `value` of `range`.
    public static func progress(_ value: Double, in range: ClosedRange<Double> = 0...1, id: String? = nil) -> ViewNode {
        ViewNode("progress", id: id, fields: meter(value, range))
    }

    /// A level meter at `value` of `range`.
    public static func gauge(_ value: Double, in range: ClosedRange<Double> = 0...1, id: String? = nil) -> ViewNode {
        ViewNode("gauge", id: id, fields: meter(value, range))
    }

    private static func meter(_ value: Double, _ range: ClosedRange<Double>) -> [String: JSONValue] {
        var fields: [String: JSONValue] = ["value": .number(value)]
        if range != 0...1 {
            fields["min"] = .number(range.lowerBound)
            fields["max"] = .number(range.upperBound)
        }
        return fields
    }

    // MARK: Modifiers

    /// The same element with `key` set to `value`.
    public func setting(_ key: String, _ value: JSONValue) -> ViewNode {
        var node = self
        node.fields[key] = value
        return node
    }

    /// The text's size (board units) and weight.
    public func font(size: Double? = nil, weight: FontWeight? = nil) -> ViewNode {
        var node = self
        if let size { node.fields["fontSize"] = .number(size) }
        if let weight { node.fields["fontWeight"] = .string(weight.rawValue) }
        return node
    }

    /// The colour of its text.
    public func foreground(_ colour: Colour) -> ViewNode { setting("foreground", colour.json) }
    /// The colour behind it.
    public func background(_ colour: Colour) -> ViewNode { setting("background", colour.json) }
    /// Room inside it, in board units.
    public func padding(_ points: Double) -> ViewNode { setting("padding", .number(points)) }
    /// The rounding of its background's corners.
    public func cornerRadius(_ points: Double) -> ViewNode { setting("cornerRadius", .number(points)) }
    /// From 0 (invisible) to 1.
    public func opacity(_ value: Double) -> ViewNode { setting("opacity", .number(value)) }
    /// The room between its children.
    public func spacing(_ points: Double) -> ViewNode { setting("spacing", .number(points)) }
    /// How its children line up across the stack: `leading`, `center`, `trailing`, `top`, `bottom`.
    public func alignment(_ alignment: String) -> ViewNode { setting("alignment", .string(alignment)) }
    /// Its accessible name: what a screen reader says for it.
    public func label(_ text: String) -> ViewNode { setting("label", .string(text)) }
}
