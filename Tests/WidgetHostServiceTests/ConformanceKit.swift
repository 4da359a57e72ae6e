import DBus
import Foundation
import PrivateBus
import WidgetHostCore

/// The renderer conformance kit (conformance/ at the repository root, docs/conformance.md):
/// widgets and Live Activities as data, each with what a renderer must show of it.
struct ConformanceKit {
    static let folder = repositoryRoot.appendingPathComponent("conformance")
    let cases: [ConformanceCase]

    /// Every conformance/cases/*.json, in the order of their names, with the kit's
    /// placeholders filled in: `{png:NAME}` is a `data:` URL of conformance/images/NAME.png,
    /// `{kit}` the conformance folder's path.
    static func load() throws -> ConformanceKit {
        let directory = folder.appendingPathComponent("cases")
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".json") }.sorted()
        guard !files.isEmpty else { throw ConformanceKitError("\(directory.path) has no .json case; the kit needs at least one") }
        return ConformanceKit(cases: try files.map { file in
            let name = String(file.dropLast(5))
            let text = try filled(String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8), in: "conformance/cases/\(file)")
            do {
                var loaded = try JSONDecoder().decode(ConformanceCase.self, from: Data(text.utf8))
                loaded.name = name
                try loaded.validate(in: "conformance/cases/\(file)")
                return loaded
            } catch let error as DecodingError {
                throw ConformanceKitError("conformance/cases/\(file) is not a case as docs/conformance.md describes: \(Self.describe(error))")
            }
        })
    }

    /// `text` with its placeholders replaced; an unknown image is an error naming it.
    static func filled(_ text: String, in file: String) throws -> String {
        var text = text.replacingOccurrences(of: "{kit}", with: folder.path)
        while let range = text.firstRange(of: /\{png:([a-z0-9-]+)\}/) {
            let name = String(text[range].dropFirst(5).dropLast())
            let image = folder.appendingPathComponent("images/\(name).png")
            guard let data = FileManager.default.contents(atPath: image.path) else {
                throw ConformanceKitError("\(file) uses {png:\(name)}, but there is no conformance/images/\(name).png; add it or use one of the images there")
            }
            text.replaceSubrange(range, with: "data:image/png;base64," + data.base64EncodedString())
        }
        return text
    }

    private static func describe(_ error: DecodingError) -> String {
        func path(_ context: DecodingError.Context) -> String {
            context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
        }
        switch error {
        case .keyNotFound(let key, let context): return "\(path(context)) has no '\(key.stringValue)'"
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .dataCorrupted(let context):
            return "\(path(context)): \(context.debugDescription)"
        @unknown default: return "\(error)"
        }
    }

    /// The app's widget bundle: one kind for each kind the cases use, in every family, displayed by its name.
    var bundle: String {
        let kinds = Set(cases.compactMap { $0.widget?.kind }).sorted()
        let families = WidgetFamily.allCases.map(\.rawValue)
        let widgets = kinds.map { kind in
            ["kind": kind, "families": families, "displayName": kind, "description": "A case of the renderer conformance kit"] as [String: Any]
        }
        let data = try? JSONSerialization.data(withJSONObject: ["widgets": widgets], options: [.sortedKeys])
        return data.map { String(decoding: $0, as: UTF8.self) } ?? ""
    }
}

/// A case file that is not what docs/conformance.md describes.
struct ConformanceKitError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// One case: a widget or a Live Activity, what a renderer must show of it, and
/// changes the app makes afterwards with what must show then.
struct ConformanceCase: Decodable {
    /// The file's name without `.json`.
    var name = ""
    let about: String
    /// The appearances it is drawn in (default: light).
    let appearances: [Appearance]?
    let widget: WidgetSpec?
    let activity: ActivitySpec?
    let expect: Expectations
    let steps: [Step]?

    private enum CodingKeys: String, CodingKey { case about, appearances, widget, activity, expect, steps }

    enum Appearance: String, Decodable, CaseIterable { case light, dark }

    struct WidgetSpec: Decodable {
        let kind: String
        let family: String
        let content: JSONValue
    }

    struct ActivitySpec: Decodable {
        let attributesType: String
        let content: JSONValue
        let attributes: [String: JSONValue]?
        let state: [String: JSONValue]?
    }

    /// What the app changes: the widget's tree (`content`) or the activity's state.
    struct Step: Decodable {
        let about: String
        let content: JSONValue?
        let state: [String: JSONValue]?
        let expect: Expectations
    }

    var shownIn: [Appearance] { appearances ?? [.light] }

    func validate(in file: String) throws {
        guard (widget == nil) != (activity == nil) else { throw ConformanceKitError("\(file) must have exactly one of 'widget' and 'activity'") }
        if let family = widget?.family, WidgetFamily(rawValue: family) == nil {
            throw ConformanceKitError("\(file): '\(family)' is not a family; use one of \(WidgetFamily.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        for (index, step) in (steps ?? []).enumerated() where (step.content == nil) == (step.state == nil) || (step.content != nil && activity != nil) {
            throw ConformanceKitError("\(file): steps[\(index)] must change either a widget's 'content' or an activity's 'state'")
        }
        let all = [expect] + (steps ?? []).map(\.expect)
        if activity != nil, all.contains(where: { $0.name != nil || $0.size != nil || $0.colours != nil || $0.ink != nil || $0.taps != nil }) {
            throw ConformanceKitError("\(file): where a renderer draws a Live Activity is its own, so an activity's expectations are only 'accessible' and 'gone'")
        }
        for colour in all.flatMap({ $0.colours ?? [] }) {
            let given = [colour.is != nil, colour.isNot != nil, colour.sameAs != nil, colour.differsFrom != nil].filter { $0 }.count
            guard given == 1, colour.at.count == 2, (colour.sameAs ?? colour.differsFrom ?? [0, 0]).count == 2 else {
                throw ConformanceKitError("\(file): the colour check '\(colour.what)' needs 'at': [x, y] and exactly one of 'is', 'isNot', 'sameAs' and 'differsFrom'")
            }
        }
        for ink in all.flatMap({ $0.ink ?? [] }) {
            guard (ink.near == nil) != (ink.unlike == nil), ink.atLeast != nil || ink.atMost != nil || ink.moreThan != nil,
                ink.region.count == 4, (ink.moreThan?.region ?? [0, 0, 0, 0]).count == 4
            else {
                throw ConformanceKitError("\(file): the ink check '\(ink.what)' needs 'region': [x, y, width, height], one of 'near' and 'unlike', and 'atLeast', 'atMost' or 'moreThan'")
            }
        }
        for tap in all.flatMap({ $0.taps ?? [] }) where tap.at.count != 2 {
            throw ConformanceKitError("\(file): the tap '\(tap.what)' needs 'at': [x, y]")
        }
    }
}

/// What a renderer must show. Points and regions are relative to the widget's top left corner.
struct Expectations: Decodable {
    /// The widget's accessible name (it is a push button).
    let name: String?
    /// The widget's width and height.
    let size: [Int]?
    let accessible: [AccessibleCheck]?
    /// Names no element may have any more.
    let gone: [String]?
    let colours: [ColourCheck]?
    let ink: [InkCheck]?
    let taps: [TapCheck]?

    struct AccessibleCheck: Decodable {
        let name: String
        /// Its AT-SPI role, or the roles any of which will do.
        let role: [String]
        /// A toggle's state: AT-SPI's `checked` or `pressed` when true, neither when false.
        let checked: Bool?

        private enum CodingKeys: String, CodingKey { case name, role, checked }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            name = try container.decode(String.self, forKey: .name)
            checked = try container.decodeIfPresent(Bool.self, forKey: .checked)
            let single = try? container.decode(String.self, forKey: .role)
            role = try single.map { [$0] } ?? container.decode([String].self, forKey: .role)
        }
    }

    struct ColourCheck: Decodable {
        let what: String
        let at: [Int]
        let `is`: ColourValue?
        let isNot: ColourValue?
        let sameAs: [Int]?
        let differsFrom: [Int]?
        /// The largest difference of a channel still counted as the same colour (default 8).
        let tolerance: Int?
    }

    /// How many pixels of a region are near a colour (or unlike every colour listed).
    struct InkCheck: Decodable {
        let what: String
        let region: [Int]
        let near: ColourValue?
        let unlike: [ColourValue]?
        let tolerance: Int?
        let atLeast: Int?
        let atMost: Int?
        let moreThan: Comparison?

        struct Comparison: Decodable {
            let region: [Int]
            let times: Double
        }
    }

    struct TapCheck: Decodable {
        let what: String
        let at: [Int]
        /// The element id the app receives (`""`: the background).
        let element: String
        /// The App1 method the host calls: OpenURL, PerformAction or ContinueUserActivity.
        let receives: String?
    }
}

/// A colour as the vocabulary gives one: a string, or a variant for each appearance.
struct ColourValue: Decodable {
    let light: String, dark: String

    init(from decoder: any Decoder) throws {
        if let single = try? decoder.singleValueContainer().decode(String.self) {
            (light, dark) = (single, single)
        } else {
            let variants = try decoder.singleValueContainer().decode([String: String].self)
            guard let light = variants["light"], let dark = variants["dark"] else {
                throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "a colour is \"#rrggbb\" or {\"light\": …, \"dark\": …}"))
            }
            (self.light, self.dark) = (light, dark)
        }
    }

    func pixel(_ appearance: ConformanceCase.Appearance) -> Pixel? { Pixel(hex: appearance == .dark ? dark : light) }
}

extension JSONValue {
    /// As a D-Bus value of a content state or attributes: integers as `x`, other numbers as `d`.
    var dbusValue: DBusValue {
        switch self {
        case .string(let value): .string(value)
        case .integer(let value): .int64(value)
        case .number(let value): .double(value)
        case .bool(let value): .bool(value)
        case .null, .array, .object: .string(jsonText)
        }
    }
}
