#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Where a Live Activity is shown (docs/names.md): each has its own view tree.
///
/// The raw values are the names used on the bus and as keys of the content JSON.
public enum ActivityPresentation: String, Sendable, CaseIterable, Hashable {
    /// The banner on the lock screen (and in notification lists).
    case lockScreen
    /// The leading side of the compact presentation (one activity in the Dynamic Island).
    case compactLeading
    /// The trailing side of the compact presentation.
    case compactTrailing
    /// The minimal presentation, when several activities share the island.
    case minimal
    /// The expanded presentation, shown on a long press.
    case expanded

    /// What a tap here honours, as in ActivityKit: interactive controls only on the
    /// lock screen and in the expanded presentation, links only in `expanded`.
    /// Elsewhere a control or a link is no more than its area.
    public var capabilities: TapCapabilities {
        TapCapabilities(controls: self == .lockScreen || self == .expanded, links: self == .expanded)
    }

    /// Whether `button` and `toggle` elements run their action when tapped here.
    public var allowsInteractiveControls: Bool { capabilities.controls }

    /// Whether `link` elements open their URL when tapped here.
    public var supportsLinks: Bool { capabilities.links }

    /// `"lockScreen, compactLeading, compactTrailing, minimal, expanded"`, for messages.
    public static var allowedList: String { allCases.map(\.rawValue).joined(separator: ", ") }

    /// Parses a presentation name; anything else is `InvalidArgument` listing the names.
    public static func parse(_ s: String) throws(HostError) -> ActivityPresentation {
        guard let presentation = ActivityPresentation(rawValue: s) else {
            throw .invalidArgument("'\(s)' is not a Live Activity presentation; use one of \(allowedList)")
        }
        return presentation
    }
}

/// The content of a Live Activity: one view tree per presentation and an optional
/// activity-level `widgetURL` (docs/live-activities.md).
///
/// The JSON is an object
/// `{"widgetURL":"…","lockScreen":tree,"compactLeading":tree,"compactTrailing":tree,"minimal":tree,"expanded":tree}`
/// whose trees follow the view-tree rules of docs/widgets.md#view-trees; element ids are unique
/// within each tree (a tap names its presentation, so two trees may share ids).
public struct ActivityContent: Sendable, Equatable {
    /// The activity-level `widgetURL`: what a tap opens when the tapped
    /// presentation's tree has no `widgetURL` of its own.
    public private(set) var widgetURL: String?
    /// The JSON text as given: the `Content` property of the activity's object.
    /// It is all that is kept: the trees are read from it when a tap asks for
    /// one, as an update (up to the app's rate, many a second) need not write
    /// out five trees of its own that a tap (one now and then) can read.
    public private(set) var json: String

    /// The keys the content object may have: `widgetURL` and the presentations.
    public static let allowedKeys: [String] = ["widgetURL"] + ActivityPresentation.allCases.map(\.rawValue)

    /// The `lockScreen` tree.
    public var lockScreen: ViewTree { tree(for: .lockScreen) }
    /// The `compactLeading` tree.
    public var compactLeading: ViewTree { tree(for: .compactLeading) }
    /// The `compactTrailing` tree.
    public var compactTrailing: ViewTree { tree(for: .compactTrailing) }
    /// The `minimal` tree.
    public var minimal: ViewTree { tree(for: .minimal) }
    /// The `expanded` tree.
    public var expanded: ViewTree { tree(for: .expanded) }

    /// The tree of `presentation`, as its own JSON text.
    public func tree(for presentation: ActivityPresentation) -> ViewTree {
        ViewTree(validated: subtree(presentation)?.jsonText ?? "{}")
    }

    /// The root element of `presentation`'s tree, read from the content once.
    public func root(for presentation: ActivityPresentation) -> ViewElement {
        ViewTree.root(of: subtree(presentation) ?? .object([:]))
    }

    /// `presentation`'s tree as decoded from ``json``: text that was validated
    /// when the content was made, read leniently as a restore reads it.
    private func subtree(_ presentation: ActivityPresentation) -> JSONValue? {
        guard case .object(let top)? = try? JSONValue.decode(json, lenient: true).value else { return nil }
        return top[presentation.rawValue]
    }

    /// The URL a tap on the background of `presentation` opens by the rules
    /// (``TapRules``): the tree's `widgetURL` (the first in depth-first pre-order),
    /// else the activity-level ``widgetURL``, else `nil`.
    ///
    /// In `compactLeading`, `compactTrailing` and `minimal`, which honour neither
    /// links nor controls, this is what every tap opens.
    public func defaultURL(for presentation: ActivityPresentation) -> String? {
        Self.defaultURL(for: presentation, root: root(for: presentation), activityURL: widgetURL)
    }

    /// ``defaultURL(for:)`` of a presentation whose tree's root is `root`.
    static func defaultURL(for presentation: ActivityPresentation, root: ViewElement, activityURL: String?) -> String? {
        let background = TapTarget(
            surface: .desktop, capabilities: presentation.capabilities, tapped: TappedTree("", in: root)!, activityURL: activityURL,
            app: AppOptions(defaultsFor: ""))
        return TapRules.resolve(background) { UserActivity(activityType: ActivityTapRules.userActivityType, userInfo: [:]) }.outcome.url
    }

    /// Parses and validates content JSON.
    ///
    /// - Text longer than `limits.maxBytes` (or nested too deep) → `LimitExceeded`.
    /// - Not a JSON object, an unknown top-level key, a missing presentation, a
    ///   `widgetURL` that is not an absolute URL, or an invalid tree → `InvalidContent`
    ///   saying where and what to fix.
    /// - `compactLeading` and `compactTrailing` that would open different URLs →
    ///   `InconsistentLinks` (see ``checkCompactConsistency()``).
    ///
    /// All trees together may hold at most `limits.maxElements` elements.
    ///
    /// Content the host `stored` itself is read back under ``ViewTreeLimits/stored``
    /// and without the duplicate-key rule, which an earlier host may not have had.
    public static func parse(_ json: String, limits: ViewTreeLimits = ViewTreeLimits(), stored: Bool = false) throws(HostError)
        -> ActivityContent
    {
        let limits = stored ? ViewTreeLimits.stored : limits
        guard json.utf8.count <= limits.maxBytes else {
            throw .limitExceeded(
                "Live Activity content is \(json.utf8.count) bytes; the limit max-content-bytes is \(limits.maxBytes) bytes — send smaller view trees")
        }
        // One level more than a view tree: the object holding the presentations.
        guard ViewTree.depthOfNesting(json) <= limits.maxDepth * 2 + 3 else {
            throw .limitExceeded("Live Activity content nests deeper than \(limits.maxDepth) elements (the limit max-content-depth); flatten its view trees")
        }
        let value: JSONValue
        let duplicates: [JSONDuplicateKey]
        do {
            (value, duplicates) = try JSONValue.decode(json, lenient: stored)
        } catch {
            throw .invalidContent("Live Activity content is not valid JSON (\(error)); send an object such as \(example)")
        }
        if !stored, let duplicate = duplicates.first { throw .invalidContent(duplicate.message(in: "Live Activity content")) }
        guard case .object(let top) = value else {
            throw .invalidContent("Live Activity content must be a JSON object, not \(value.typeName); send an object such as \(example)")
        }

        let missing = ActivityPresentation.allCases.filter { top[$0.rawValue] == nil }.map(\.rawValue)
        let unknown = top.keys.filter { !allowedKeys.contains($0) }.sorted()
        if !unknown.isEmpty {
            let list = unknown.map { "'\($0)'" }.joined(separator: ", ")
            let noun = unknown.count == 1 ? "key" : "keys"
            var message = "Live Activity content has the unknown \(noun) \(list); the allowed keys are \(allowedKeys.joined(separator: ", "))"
            if !missing.isEmpty { message += " (\(missing.joined(separator: ", ")) \(missing.count == 1 ? "is" : "are") missing)" }
            throw .invalidContent(message)
        }
        if !missing.isEmpty {
            let noun = missing.count == 1 ? "presentation" : "presentations"
            throw .invalidContent(
                "Live Activity content lacks the \(noun) \(missing.joined(separator: ", ")); every presentation (\(ActivityPresentation.allowedList)) needs a view tree")
        }

        var widgetURL: String?
        if let raw = top["widgetURL"] {
            guard case .string(let url) = raw else {
                throw .invalidContent("$.widgetURL must be a string holding an absolute URL, not \(raw.typeName)")
            }
            try ViewTree.checkURL(url, what: "$.widgetURL", limits: limits)
            widgetURL = url
        }

        var count = 0
        var roots: [ActivityPresentation: ViewElement] = [:]
        // In the order of `allCases`, which the elements are counted and the errors found in.
        for presentation in ActivityPresentation.allCases {
            roots[presentation] = try ViewTree.root(of: top[presentation.rawValue]!, at: "$.\(presentation.rawValue)", limits: limits, count: &count)
        }
        // The compact trees' elements, as validation just built them: read
        // from the content's text, both would be parsed and validated again.
        try checkCompactConsistency(
            leading: defaultURL(for: .compactLeading, root: roots[.compactLeading]!, activityURL: widgetURL),
            trailing: defaultURL(for: .compactTrailing, root: roots[.compactTrailing]!, activityURL: widgetURL))
        return ActivityContent(widgetURL: widgetURL, json: json)
    }

    /// Checks that `compactLeading` and `compactTrailing` do not open different URLs.
    ///
    /// Both sides of the compact presentation are one view on the system's side, so a
    /// tap on either must go to the same place. Each side opens its
    /// ``defaultURL(for:)`` — its tree's first `widgetURL`, else the activity-level
    /// `widgetURL`; links are not honoured in compact presentations. When both sides
    /// open a URL and the URLs differ, this throws `InconsistentLinks` naming both.
    ///
    /// One side opening a URL while the other opens none is *not* an inconsistency and
    /// is allowed: a tap on the side without a URL continues the activity's user
    /// activity instead.
    public func checkCompactConsistency() throws(HostError) {
        try Self.checkCompactConsistency(leading: defaultURL(for: .compactLeading), trailing: defaultURL(for: .compactTrailing))
    }

    /// ``checkCompactConsistency()`` of the URLs the two compact sides open.
    static func checkCompactConsistency(leading: String?, trailing: String?) throws(HostError) {
        guard let leading, let trailing, leading != trailing else { return }
        throw .inconsistentLinks(
            "compactLeading opens \(leading) but compactTrailing opens \(trailing); a tap on either side of the compact presentation must open the same URL — give both trees the same widgetURL, or drop their widgetURLs and set the activity-level widgetURL")
    }

    static let example = #"{"widgetURL":"tap-me://order","lockScreen":{"type":"text"},"compactLeading":{"type":"image"},"compactTrailing":{"type":"text"},"minimal":{"type":"image"},"expanded":{"type":"vstack"}}"#
}
