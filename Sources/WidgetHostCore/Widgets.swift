#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One kind of widget an app offers (an entry of its bundle).
public struct WidgetKind: Sendable, Equatable {
    public struct Parameter: Sendable, Equatable {
        public var name: String
        public var dynamic: Bool
    }
    public var kind: String
    public var families: [WidgetFamily]
    public var displayName: String
    public var description: String
    /// The configuration intent's name; nil when the kind is not configurable.
    public var intent: String?
    public var parameters: [Parameter]

    /// Checks that `name` is a parameter declared `"dynamic": true`, whose
    /// choices the app provides (`GetConfigurationOptions`).
    public func requireDynamic(_ name: String, appID: String) throws(HostError) {
        guard let parameter = parameters.first(where: { $0.name == name }) else {
            throw .invalidArgument(
                "'\(name)' is not a configuration parameter of \(appID)'s '\(kind)'; "
                    + (parameters.isEmpty ? "it takes none" : "its parameters are \(parameters.map(\.name).joined(separator: ", "))"))
        }
        guard parameter.dynamic else {
            let dynamic = parameters.filter(\.dynamic).map(\.name)
            throw .invalidArgument(
                "'\(name)' of \(appID)'s '\(kind)' is not dynamic, so the app provides no options for it; "
                    + (dynamic.isEmpty ? "the kind has no dynamic parameters" : "its dynamic parameters are \(dynamic.joined(separator: ", "))"))
        }
    }
}

/// An app's widget bundle (`RegisterWidgets`).
public struct WidgetBundle: Sendable, Equatable {
    public var kinds: [WidgetKind]
    /// The JSON it was parsed from, as the app sent it (kept in the state directory).
    public var json: String = ""

    public func kind(_ name: String) -> WidgetKind? { kinds.first { $0.kind == name } }

    /// The most bytes of bundle JSON the host takes: a bundle describes kinds, not content.
    public static let maxBytes = 64 * 1024
    /// The most kinds one bundle may hold (WidgetKit bundles hold a handful).
    public static let maxKinds = 32
    /// The most configuration parameters one kind may have.
    public static let maxParameters = 32

    /// Parses and validates bundle JSON in time linear in its size; errors name
    /// the offending field; a bundle over ``maxBytes``, ``maxKinds`` or
    /// ``maxParameters`` is `LimitExceeded` naming the limit. A bundle the host
    /// `stored` itself is read back without the limits and the duplicate-key
    /// rule, which an earlier host may not have had.
    public static func parse(_ json: String, stored: Bool = false) throws(HostError) -> WidgetBundle {
        guard stored || json.utf8.count <= maxBytes else {
            throw .limitExceeded("the bundle is \(json.utf8.count) bytes; a bundle may have at most \(maxBytes) bytes — describe kinds only, and send content with SetContent")
        }
        let value: JSONValue
        let duplicates: [JSONDuplicateKey]
        do {
            (value, duplicates) = try JSONValue.decode(json, lenient: stored)
        } catch {
            throw .invalidContent("the bundle is not valid JSON (\(error)); send {\"widgets\":[{\"kind\":\"…\",\"families\":[\"systemSmall\"]}]}")
        }
        if !stored, let duplicate = duplicates.first { throw .invalidContent(duplicate.message(in: "the bundle")) }
        guard case .object(let top) = value, case .array(let widgets)? = top["widgets"] else {
            throw .invalidContent("the bundle must be an object with a \"widgets\" array")
        }
        guard stored || widgets.count <= maxKinds else {
            throw .limitExceeded("the bundle has \(widgets.count) kinds; a bundle may have at most \(maxKinds)")
        }
        var kinds: [WidgetKind] = []
        var seen = Set<String>()
        for (index, item) in widgets.enumerated() {
            let at = "widgets[\(index)]"
            guard case .object(let w) = item else { throw .invalidContent("\(at) must be an object") }
            guard case .string(let kind)? = w["kind"], !kind.isEmpty else {
                throw .invalidContent("\(at).kind must be a non-empty string naming the widget kind")
            }
            guard seen.insert(kind).inserted else {
                throw .invalidContent("\(at).kind '\(Validate.prefix(kind))' appears twice; each kind must be unique in the bundle")
            }
            guard case .array(let rawFamilies)? = w["families"], !rawFamilies.isEmpty else {
                throw .invalidContent("\(at).families must be a non-empty array such as [\"systemSmall\"]")
            }
            var families: [WidgetFamily] = []
            for raw in rawFamilies {
                guard case .string(let s) = raw, let family = WidgetFamily(rawValue: s) else {
                    throw .invalidContent(
                        "\(at).families holds \(raw.stringValue.map { "'\($0)'" } ?? raw.typeName), which is not a family; use \(WidgetFamily.allCases.map(\.rawValue).joined(separator: ", "))")
                }
                if !families.contains(family) { families.append(family) }
            }
            func text(_ key: String) throws(HostError) -> String {
                guard let raw = w[key] else { return "" }
                guard case .string(let s) = raw else { throw .invalidContent("\(at).\(key) must be a string") }
                return s
            }
            var intent: String?
            var parameters: [WidgetKind.Parameter] = []
            if let raw = w["configuration"] {
                guard case .object(let c) = raw, case .string(let i)? = c["intent"], !i.isEmpty else {
                    throw .invalidContent("\(at).configuration must be an object with an \"intent\" name")
                }
                intent = i
                if let rawParameters = c["parameters"] {
                    guard case .array(let items) = rawParameters else {
                        throw .invalidContent("\(at).configuration.parameters must be an array")
                    }
                    guard stored || items.count <= maxParameters else {
                        throw .limitExceeded("\(at).configuration has \(items.count) parameters; a kind may have at most \(maxParameters)")
                    }
                    for (p, item) in items.enumerated() {
                        guard case .object(let o) = item, case .string(let name)? = o["name"], !name.isEmpty else {
                            throw .invalidContent("\(at).configuration.parameters[\(p)] needs a \"name\"")
                        }
                        guard !parameters.contains(where: { $0.name == name }), name != "intent" else {
                            throw .invalidContent("\(at).configuration.parameters[\(p)]: '\(Validate.prefix(name))' is used twice or reserved")
                        }
                        var dynamic = false
                        if let d = o["dynamic"] {
                            guard case .bool(let b) = d else {
                                throw .invalidContent("\(at).configuration.parameters[\(p)].dynamic must be true or false")
                            }
                            dynamic = b
                        }
                        parameters.append(.init(name: name, dynamic: dynamic))
                    }
                }
            }
            kinds.append(
                WidgetKind(
                    kind: kind, families: families, displayName: try text("displayName"), description: try text("description"),
                    intent: intent, parameters: parameters))
        }
        return WidgetBundle(kinds: kinds, json: json)
    }
}

/// A widget placed by a renderer.
///
/// A value like any other, kept in one allocation of its own that nothing
/// changes (a change makes a new one): a table of 100,000 widgets then holds
/// 8 bytes per slot rather than the whole widget, in a table that keeps a
/// quarter of its slots empty and moves every one each time it grows. The
/// allocation holds the names, and after them the configuration packed into
/// bytes, the content's text and what a tap reads of the content
/// (``TapIndex``), derived when the content is set: one allocation of about
/// 200 bytes for a widget with a small tree and one parameter, where a field
/// each took four of 430 (docs/daemon.md#footprint). Reading
/// ``configuration`` or ``content`` makes them from those bytes, which a
/// property read or a restore's charge does once for the widget it concerns.
public struct PlacedWidget: Sendable, Equatable {
    private struct Header {
        let id: String
        let appID: String
        let kind: String
        let family: WidgetFamily
        /// The packed configuration's bytes, first in the tail (0: none).
        var configurationCount = 0
        /// The content's UTF-8 bytes, after the configuration (-1: no content).
        var contentCount = -1
        /// The tap index's bytes, after the content (0: no content).
        var tapIndexCount = 0
    }

    /// The tail's three parts.
    private struct Tail {
        var configuration: UnsafeRawBufferPointer
        var content: UnsafeRawBufferPointer?
        var tapIndex: UnsafeRawBufferPointer
    }

    private final class Box: ManagedBuffer<Header, UInt8> {}

    // Never changed once made, so it may be shared across threads.
    nonisolated(unsafe) private let box: Box

    public init(id: String, appID: String, kind: String, family: WidgetFamily, configuration: [String: OptionValue], content: ViewTree?) {
        let header = Header(id: id, appID: appID, kind: kind, family: family)
        let tapIndex = content.map(TapIndex.packed) ?? []
        self = OptionValue.packed(configuration).withUnsafeBytes { configuration in
            Self.withUTF8(content) { content in
                tapIndex.withUnsafeBytes { tapIndex in
                    PlacedWidget(header, Tail(configuration: configuration, content: content, tapIndex: tapIndex))
                }
            }
        }
    }

    /// A widget of `header`'s names whose tail holds `tail`'s parts, in order.
    private init(_ header: Header, _ tail: Tail) {
        var header = header
        header.configurationCount = tail.configuration.count
        header.contentCount = tail.content?.count ?? -1
        header.tapIndexCount = tail.tapIndex.count
        let parts = [tail.configuration, tail.content ?? UnsafeRawBufferPointer(start: nil, count: 0), tail.tapIndex]
        let made = Box.create(minimumCapacity: parts.reduce(0) { $0 + $1.count }) { _ in header }
        box = unsafeDowncast(made, to: Box.self)
        box.withUnsafeMutablePointerToElements { bytes in
            var at = 0
            for part in parts where !part.isEmpty {
                UnsafeMutableRawBufferPointer(start: bytes + at, count: part.count).copyMemory(from: part)
                at += part.count
            }
        }
    }

    private static func withUTF8<R>(_ content: ViewTree?, _ body: (UnsafeRawBufferPointer?) -> R) -> R {
        guard var json = content?.json else { return body(nil) }
        return json.withUTF8 { body(UnsafeRawBufferPointer($0)) }
    }

    /// The packed configuration's bytes, the content's, and the tap index's.
    private func withTail<R>(_ body: (Tail) -> R) -> R {
        box.withUnsafeMutablePointers { header, tail in
            let (configurationCount, contentCount) = (header.pointee.configurationCount, header.pointee.contentCount)
            let contentEnd = configurationCount + max(contentCount, 0)
            return body(
                Tail(
                    configuration: UnsafeRawBufferPointer(start: tail, count: configurationCount),
                    content: contentCount < 0 ? nil : UnsafeRawBufferPointer(start: tail + configurationCount, count: contentCount),
                    tapIndex: UnsafeRawBufferPointer(start: tail + contentEnd, count: header.pointee.tapIndexCount)))
        }
    }

    public var id: String { box.header.id }
    public var appID: String { box.header.appID }
    public var kind: String { box.header.kind }
    public var family: WidgetFamily { box.header.family }
    public var configuration: [String: OptionValue] {
        get { withTail { OptionValue.unpack($0.configuration) } }
        set {
            self = OptionValue.packed(newValue).withUnsafeBytes { configuration in
                withTail { tail in
                    var tail = tail
                    tail.configuration = configuration
                    return PlacedWidget(box.header, tail)
                }
            }
        }
    }
    /// The content; setting it derives what a tap reads of it from its text
    /// (``setContent(_:root:)`` takes a tree whose root is at hand).
    public var content: ViewTree? {
        get { withTail { tail in tail.content.map { ViewTree(validated: String(decoding: $0, as: UTF8.self)) } } }
        set { setContent(newValue) }
    }

    /// Sets the content to `tree` and derives what a tap reads of it from
    /// `root`, the tree's root element when it is at hand, else from its text.
    public mutating func setContent(_ tree: ViewTree?, root: ViewElement? = nil) {
        let tapIndex = tree.map { tree in root.map(TapIndex.packed(root:)) ?? TapIndex.packed(tree) } ?? []
        self = Self.withUTF8(tree) { content in
            tapIndex.withUnsafeBytes { tapIndex in
                withTail { tail in PlacedWidget(box.header, Tail(configuration: tail.configuration, content: content, tapIndex: tapIndex)) }
            }
        }
    }

    /// What a tap on `elementID` (`""`: the background) reads of the content;
    /// nil when the content has no element `elementID`.
    public func tapped(_ elementID: String) -> TappedTree? {
        withTail { TapIndex.tapped(elementID, in: $0.tapIndex, text: $0.content ?? UnsafeRawBufferPointer(start: nil, count: 0)) }
    }

    public static func == (a: PlacedWidget, b: PlacedWidget) -> Bool {
        if a.box === b.box { return true }
        let (x, y) = (a.box.header, b.box.header)
        guard x.id == y.id, x.appID == y.appID, x.kind == y.kind, x.family == y.family,
            x.configurationCount == y.configurationCount, x.contentCount == y.contentCount
        else { return false }
        // The tap index follows from the content.
        return a.withTail { x in
            b.withTail { y in
                // Keys are packed in order, so equal configurations pack the
                // same, but for numbers that compare equal with other bits (0 and -0).
                (x.content ?? UnsafeRawBufferPointer(start: nil, count: 0)).elementsEqual(y.content ?? UnsafeRawBufferPointer(start: nil, count: 0))
                    && (x.configuration.elementsEqual(y.configuration) || a.configuration == b.configuration)
            }
        }
    }
}

/// Bundles and placed widgets.
public struct WidgetStore: Sendable {
    public internal(set) var bundles: [String: WidgetBundle] = [:]
    public internal(set) var widgets: [String: PlacedWidget] = [:]
    private var nextNumber: UInt64 = 1
    public var limits = ViewTreeLimits()
    /// The most bytes one widget's configuration may take, serialized as an
    /// a{sv} (the limit max-configuration-bytes): it travels in every
    /// PropertiesChanged, GetManagedObjects reply and provider call.
    public var maxConfigurationBytes = HostDefaults.maxConfigurationBytes
    /// The most widgets one app may have placed (the limit max-widgets-per-app).
    public var maxPerApp = HostDefaults.maxWidgetsPerApp
    /// Placed widgets by app, so that a placement need not count them.
    private var countsByApp: [String: Int] = [:]
    /// What the change under way (``changing(_:)``) has replaced so far.
    var recorder: ChangeRecorder?
    /// The most bytes of JSON all bundles may take together (the limit
    /// max-bundle-bytes): they live in memory, in the state directory and in
    /// every `ListBundles` reply.
    public var maxBundleBytes = HostDefaults.maxBundleBytes
    /// The most bytes of JSON the bundles of the apps one connection holds
    /// may take together (max-bundle-bytes-per-connection): one connection
    /// holding many ids takes no more than its share of the pool.
    public var maxBundleBytesPerConnection = HostDefaults.maxBundleBytesPerConnection

    public init() {}

    /// Checks that `appID`'s bundle may become `bundle`: with it, all bundles
    /// stay within ``maxBundleBytes``, and those of `sharing` (the apps the
    /// same connection holds, `appID` among them or not) within
    /// ``maxBundleBytesPerConnection``. A bundle that does not grow is always taken,
    /// so a host started with lower limits still lets apps shrink.
    public func checkBundleBudget(appID: String, _ bundle: WidgetBundle, sharing: some Sequence<String>) throws(HostError) {
        let old = bundles[appID]?.json.utf8.count ?? 0
        let new = bundle.json.utf8.count
        guard new > old else { return }
        let total = bundles.values.reduce(0) { $0 + $1.json.utf8.count } - old + new
        if total > maxBundleBytes {
            throw .limitExceeded(
                "the widget bundles of all apps would take \(total) bytes of JSON, more than the host's pool of \(maxBundleBytes) (the limit max-bundle-bytes); publish a smaller bundle — descriptions short, kinds few — or ask the user to remove apps' widgets")
        }
        var shared = new
        for other in Set(sharing) where other != appID { shared += bundles[other]?.json.utf8.count ?? 0 }
        if shared > maxBundleBytesPerConnection {
            throw .limitExceeded(
                "the widget bundles of the apps this connection holds would take \(shared) bytes of JSON, more than one connection's share of \(maxBundleBytesPerConnection) (the limit max-bundle-bytes-per-connection); unregister apps this connection no longer serves, or publish smaller bundles")
        }
    }

    // Each change comes as a check that changes nothing and a step that cannot
    // fail; the steps note each object before they change it, so that a change
    // made through ``changing(_:)`` can be put back when the disk refuses it.

    /// Notes, while a change is under way, what widget `id` is before the change touches it.
    mutating func willChange(widget id: String) { recorder?.note(.widget(id: id, widgets[id])) }

    /// Notes, while a change is under way, what `appID`'s bundle is before the change touches it.
    mutating func willChange(bundle appID: String) { recorder?.note(.bundle(appID: appID, bundles[appID])) }

    /// Replaces an app's bundle; returns the ids of placed widgets whose kind it dropped (removed):
    /// `known`, when ``dropped(byBundle:of:)`` already gave them.
    @discardableResult
    public mutating func registerBundle(appID: String, _ bundle: WidgetBundle, dropping known: [String]? = nil) -> [String] {
        let dropped = known ?? dropped(byBundle: bundle, of: appID)
        willChange(bundle: appID)
        bundles[appID] = bundle
        for id in dropped { remove(id) }
        return dropped
    }

    /// The ids of placed widgets that `bundle` would drop: kinds or families it no longer has.
    public func dropped(byBundle bundle: WidgetBundle, of appID: String) -> [String] {
        widgets.values.filter { widget in
            widget.appID == appID && !(bundle.kind(widget.kind)?.families.contains(widget.family) ?? false)
        }.map(\.id).sorted()
    }

    /// The apps among `appIDs` whose bundle nobody needs any more: the app is
    /// not known (`isKnown`: no live registration, no desktop entry) and has
    /// no placed widget. A renderer offers kinds only of apps it can reach,
    /// and a placed widget keeps its kind's description.
    public func unneededBundles(among appIDs: some Sequence<String>, isKnown: (String) -> Bool) -> [String] {
        Set(appIDs).filter { bundles[$0] != nil && countsByApp[$0] == nil && !isKnown($0) }.sorted()
    }

    /// Forgets an app's bundle (see ``unneededBundles(among:isKnown:)``).
    public mutating func dropBundle(appID: String) {
        willChange(bundle: appID)
        bundles[appID] = nil
    }

    /// Sets a bundle as is (restoring; no widget is dropped).
    mutating func setBundle(appID: String, _ bundle: WidgetBundle) {
        willChange(bundle: appID)
        bundles[appID] = bundle
    }

    /// Makes sure the next widget placed gets a number of at least `next`.
    public mutating func reserveNumbers(upTo next: UInt64) { nextNumber = max(nextNumber, next) }

    /// The number the next widget placed will get.
    public var nextWidgetNumber: UInt64 { nextNumber }

    /// Places a widget: ``placement(appID:kind:family:configuration:)`` then ``insert(_:)``.
    public mutating func add(appID: String, kind: String, family: String, configuration: [String: OptionValue]) throws(HostError)
        -> PlacedWidget
    {
        let widget = try placement(appID: appID, kind: kind, family: family, configuration: configuration)
        insert(widget)
        return widget
    }

    /// The widget `add` would place, checked, under the next id; changes nothing.
    public func placement(appID: String, kind: String, family: String, configuration: [String: OptionValue]) throws(HostError)
        -> PlacedWidget
    {
        guard let bundle = bundles[appID] else {
            try Validate.appID(appID)
            throw .noKinds(appID: appID, kind: Validate.prefix(kind))
        }
        guard let widgetKind = bundle.kind(kind) else {
            throw .unknownKind(
                "\(appID) has no widget kind '\(Validate.prefix(kind))'; its kinds are \(bundle.kinds.map(\.kind).joined(separator: ", "))")
        }
        let parsedFamily = try WidgetFamily.parse(family)
        guard widgetKind.families.contains(parsedFamily) else {
            throw .unsupportedFamily(
                "\(appID)'s '\(kind)' does not support \(Validate.prefix(family)); it supports \(widgetKind.families.map(\.rawValue).joined(separator: ", "))")
        }
        try Self.check(configuration, widgetKind, maxBytes: maxConfigurationBytes)
        let placed = countsByApp[appID, default: 0]
        guard placed < maxPerApp else {
            throw .limitExceeded(
                "\(appID) already has \(placed) placed widgets, the most allowed (the limit max-widgets-per-app is \(maxPerApp)); remove some before placing another")
        }
        return PlacedWidget(
            id: "w\(nextNumber)", appID: appID, kind: kind, family: parsedFamily, configuration: configuration, content: nil)
    }

    /// Places a widget that ``placement(appID:kind:family:configuration:)`` made.
    public mutating func insert(_ widget: PlacedWidget) {
        willChange(widget: widget.id)
        nextNumber = max(nextNumber, MintedID.number(widget.id, prefix: "w") + 1)
        if widgets.updateValue(widget, forKey: widget.id) == nil { countsByApp[widget.appID, default: 0] += 1 }
    }

    /// Checks that every key of `configuration` is a parameter of `kind`, that
    /// every number in it is finite, and that it takes at most `maxBytes` serialized.
    public static func check(_ configuration: [String: OptionValue], _ kind: WidgetKind, maxBytes: Int = .max) throws(HostError) {
        try Validate.storable(configuration, "configuration")
        if let size = OptionValue.serializedSize(ofDictionaries: [configuration]), size > maxBytes {
            throw .limitExceeded(
                "the configuration is \(size) bytes serialized; the limit max-configuration-bytes is \(maxBytes) bytes — keep only the parameters' choices in it, and the data they name in the app")
        }
        for key in configuration.keys.sorted() where !kind.parameters.contains(where: { $0.name == key }) {
            let known = kind.parameters.map(\.name)
            throw .invalidArgument(
                "'\(Validate.prefix(key))' is not a configuration parameter of '\(kind.kind)'; "
                    + (known.isEmpty ? "it takes none" : "its parameters are \(known.joined(separator: ", "))"))
        }
    }


    /// The view tree `json` gives a widget (nil for `""`), checked against
    /// the limits, and its root element; changes nothing.
    public func content(_ json: String) throws(HostError) -> (tree: ViewTree, root: ViewElement)? {
        json.isEmpty ? nil : try ViewTree.parseWithRoot(json, limits: limits)
    }

    /// Shows a view tree already checked (a timeline entry that came due), or
    /// none; what a tap reads of it is derived from `root`, its root element,
    /// or when that is not at hand, from its text.
    public mutating func setContent(_ id: String, tree: ViewTree?, root: ViewElement? = nil) {
        willChange(widget: id)
        widgets[id]?.setContent(tree, root: root)
    }

    /// The ids of an app's placed widgets (of one kind, when given), in the order they were placed.
    public func widgetIDs(appID: String, kind: String? = nil) -> [String] {
        widgets.values.filter { $0.appID == appID && (kind == nil || $0.kind == kind) }.sorted(by: Self.placementOrder).map(\.id)
    }

    /// `w2` before `w10`.
    public static func placementOrder(_ a: PlacedWidget, _ b: PlacedWidget) -> Bool { MintedID.areInOrder(a.id, b.id) }


    /// Sets a configuration ``checkConfiguration(_:_:)`` accepted.
    public mutating func setConfiguration(_ id: String, _ configuration: [String: OptionValue]) {
        willChange(widget: id)
        widgets[id]?.configuration = configuration
    }

    /// Checks a new configuration for widget `id`; changes nothing.
    public func checkConfiguration(_ id: String, _ configuration: [String: OptionValue]) throws(HostError) {
        guard let widget = widgets[id], let kind = bundles[widget.appID]?.kind(widget.kind) else {
            throw .invalidArgument("no widget \(id)")
        }
        try Self.check(configuration, kind, maxBytes: maxConfigurationBytes)
    }

    public mutating func remove(_ id: String) {
        willChange(widget: id)
        guard let widget = widgets.removeValue(forKey: id) else { return }
        let remaining = countsByApp[widget.appID, default: 1] - 1
        countsByApp[widget.appID] = remaining > 0 ? remaining : nil
    }

    /// Puts widget `id` back as it was before a change the disk refused:
    /// `old`, or no widget at all, giving its number back when it was the
    /// last one minted (changes are put back newest first).
    public mutating func putBack(_ id: String, _ old: PlacedWidget?) {
        willChange(widget: id)
        if let old {
            if widgets.updateValue(old, forKey: id) == nil { countsByApp[old.appID, default: 0] += 1 }
        } else if widgets[id] != nil {
            remove(id)
            if MintedID.number(id, prefix: "w") + 1 == nextNumber { nextNumber -= 1 }
        }
    }

    /// Puts an app's bundle back as it was before a change the disk refused.
    public mutating func putBackBundle(appID: String, _ old: WidgetBundle?) {
        willChange(bundle: appID)
        bundles[appID] = old
    }

    /// Counts a widget put back by ``restore(_:nextNumber:)``.
    mutating func countRestored(_ appID: String) { countsByApp[appID, default: 0] += 1 }

    /// Makes room for `count` widgets at once, before a restore puts them back.
    public mutating func reserveCapacity(_ count: Int) { widgets.reserveCapacity(count) }

    /// What the resolution rules need about a widget.
    public func tapContext(_ id: String, app: AppOptions) -> WidgetTapContext? {
        guard let widget = widgets[id] else { return nil }
        return WidgetTapContext(widget, intent: bundles[widget.appID]?.kind(widget.kind)?.intent, app: app)
    }
}

/// How much a lint finding matters (its wire name is the raw value).
public enum LintSeverity: String, Sendable, CaseIterable {
    /// SetContent would refuse the content.
    case error
    /// Part of the tree does nothing a renderer or the rules would honour.
    case warning
    /// Worth knowing; nothing is lost.
    case info
}

/// The `LintContent` codes (docs/daemon.md#lint-codes); the raw value is the code on the bus.
public enum LintCode: String, Sendable, CaseIterable {
    case duplicateKey = "duplicate-key"
    case duplicateID = "duplicate-id"
    case invalidURL = "invalid-url"
    /// ``TapDiagnostic/multipleWidgetURLs``, found before any tap.
    case multipleWidgetURLs = "multiple-widget-urls"
    case linkIgnoredInFamily = "link-ignored-in-family"
    case linkWithoutID = "link-without-id"
    case controlIgnoredInFamily = "control-ignored-in-family"
    case controlWithoutID = "control-without-id"
    /// ``TapDiagnostic/undeclaredScheme``, found before any tap.
    case undeclaredScheme = "undeclared-scheme"
    /// The rendering vocabulary's (``Vocabulary``).
    case unknownType = "unknown-type"
    case unknownKey = "unknown-key"
    case invalidValue = "invalid-value"
    case invalidBinding = "invalid-binding"

    public var severity: LintSeverity {
        switch self {
        case .duplicateKey, .duplicateID, .invalidURL: .error
        case .multipleWidgetURLs, .linkIgnoredInFamily, .linkWithoutID, .controlIgnoredInFamily, .controlWithoutID, .unknownType, .unknownKey,
            .invalidValue, .invalidBinding:
            .warning
        case .undeclaredScheme: .info
        }
    }
}

/// One `LintContent` finding.
public struct LintFinding: Sendable, Equatable {
    public var code: LintCode
    public var message: String
    public var severity: LintSeverity { code.severity }

    public init(_ code: LintCode, _ message: String) {
        self.code = code
        self.message = message
    }
}

/// Checks a view tree for what renderers and the rules (``TapRule``) would ignore
/// (docs/daemon.md#lint-codes).
public enum ContentLint {
    public static func lint(_ tree: ViewTree, family: WidgetFamily, policy: LinkPolicy, schemes: [String]? = nil) -> [LintFinding] {
        var findings: [LintFinding] = []
        let elements = tree.elements
        let urls = elements.compactMap(\.widgetURL)
        if urls.count > 1 {
            findings.append(
                .init(.multipleWidgetURLs,
                      "\(urls.count) elements carry widgetURL; only the first in depth-first order (\(urls[0])) is used — keep one"))
        }
        let capabilities = family.capabilities(policy)
        for element in elements {
            findings += Vocabulary.findings(for: element)
            for rule in TapRule.rules(takingTapsOn: element) {
                if !rule.isHonoured(by: capabilities) { findings.append(ignored(element, by: rule, family, policy)) }
                if !hasID(element) { findings.append(unreachable(element, by: rule)) }
            }
            if let schemes {
                for url in [element.widgetURL, element.isLink ? element.url : nil].compactMap({ $0 }) where !TapRules.declares(url, schemes) {
                    findings.append(
                        .init(.undeclaredScheme, "\(url) uses the scheme '\(URLParts.scheme(of: url) ?? "")', which the app does not declare"))
                }
            }
        }
        return findings
    }

    /// An element `rule` would take a tap on, in a family that does not honour the rule.
    static func ignored(_ element: ViewElement, by rule: TapRule, _ family: WidgetFamily, _ policy: LinkPolicy) -> LintFinding {
        let name = element.id.map { "\(element.type) '\($0)'" } ?? element.type
        if rule == .link {
            let other = LinkPolicy.allCases.first { $0 != policy && family.supportsLinks($0) }
            return .init(
                .linkIgnoredInFamily,
                "\(name) is ignored in \(family.rawValue) under the \(policy.rawValue) link policy"
                    + (other.map { "; the \($0.rawValue) policy would honour it" } ?? "; use widgetURL instead"))
        }
        return .init(.controlIgnoredInFamily, "\(name) does nothing in \(family.rawValue), which has no interactive controls")
    }

    /// An element `rule` would take a tap on, which a renderer cannot report.
    static func unreachable(_ element: ViewElement, by rule: TapRule) -> LintFinding {
        if rule == .link {
            return .init(.linkWithoutID, "a link to \(element.url ?? "?") has no id, so a renderer cannot report a tap on it")
        }
        return .init(.controlWithoutID, "a \(element.type) for '\(element.action ?? "?")' has no id, so a renderer cannot report a tap on it")
    }

    /// A renderer reports the innermost element with an id, so an element is
    /// tappable when it or anything inside it has one.
    static func hasID(_ element: ViewElement) -> Bool {
        element.id != nil || element.children.contains(where: hasID)
    }

    /// Findings for content JSON: every key given twice in one object, duplicate
    /// id and bad URL (as `duplicate-key`, `duplicate-id` and `invalid-url`
    /// errors), then the findings of the
    /// tree those leave. JSON that is not a tree at all throws, as SetContent would.
    public static func lint(
        json: String, family: WidgetFamily, policy: LinkPolicy, schemes: [String]? = nil, limits: ViewTreeLimits = ViewTreeLimits()
    ) throws(HostError)
        -> [LintFinding]
    {
        let (tree, problems) = try ViewTree.parseRecovering(json, limits: limits)
        // A URL over the length limit is LimitExceeded for SetContent, invalid-url here.
        let findings = problems.map { LintFinding($0.code, $0.error.message) }
        return findings + lint(tree, family: family, policy: policy, schemes: schemes)
    }
}
