import DBus
import WidgetHostCore

/// The apps' bundles and the placed widgets (the model's `WidgetStore`,
/// docs/widgets.md), their objects on the bus, their budgets and their
/// journal. What a widget's timeline does to it is ``Timelines``'s.
final class Widgets: Store {
    private var store = WidgetStore()
    private let context: HostContext
    private let apps: any AppDirectory
    private let storage: Storage
    private let budgets: Budgets
    private let pacing: Pacing
    /// The interfaces every widget object serves (``ObjectInterfaces``),
    /// handed over once the servers are built.
    var objectInterfaces: [ExportedInterface] = []

    init(_ context: HostContext, apps: any AppDirectory, storage: Storage, budgets: Budgets, pacing: Pacing) {
        self.context = context
        self.apps = apps
        self.storage = storage
        self.budgets = budgets
        self.pacing = pacing
        let configuration = context.configuration
        store.limits = configuration.contentLimits
        store.maxPerApp = configuration.maxWidgetsPerApp
        store.maxConfigurationBytes = configuration.maxConfigurationBytes
        store.maxBundleBytes = configuration.maxBundleBytes
        store.maxBundleBytesPerConnection = configuration.maxBundleBytesPerConnection
    }

    /// Widgets and bundles are an app's, but a bundle is kept only while
    /// something needs it: the bundles a registration that ended with the
    /// connection kept go (``Apps`` forgot it first).
    func connectionLeft(_ connection: String) {
        dropUnneededBundles(among: store.bundles.keys)
    }

    // MARK: Reading

    func widget(_ id: String) -> PlacedWidget? { store.widgets[id] }

    /// The widget at `id`, or the standard UnknownObject error.
    func existing(_ id: String) throws -> PlacedWidget {
        guard let widget = store.widgets[id] else { throw DBusError(name: DBusError.unknownObjectName, message: "No widget \(id)") }
        return widget
    }

    /// The placed widgets' ids.
    var ids: Dictionary<String, PlacedWidget>.Keys { store.widgets.keys }

    /// The ids of an app's placed widgets (of one kind, when given), in the order they were placed.
    func widgetIDs(appID: String, kind: String? = nil) -> [String] { store.widgetIDs(appID: appID, kind: kind) }

    func bundle(_ appID: String) -> WidgetBundle? { store.bundles[appID] }

    /// Every app's bundle, by app id.
    var bundles: [String: WidgetBundle] { store.bundles }

    /// What the resolution rules need about a widget.
    func tapContext(_ id: String, app: AppOptions) -> WidgetTapContext? { store.tapContext(id, app: app) }

    /// The kind `kind` of `appID`'s bundle, or the error saying what the bundle has.
    func requireKind(_ appID: String, _ kind: String) throws(HostError) -> WidgetKind {
        guard let bundle = store.bundles[appID] else {
            throw .noKinds(appID: appID, kind: Validate.prefix(kind))
        }
        guard let found = bundle.kind(kind) else {
            throw .unknownKind("\(appID) has no widget kind '\(kind)'; its kinds are \(bundle.kinds.map(\.kind).joined(separator: ", "))")
        }
        return found
    }

    // MARK: Changing

    /// Takes `appID`'s bundle from the connection `sender`, which holds its
    /// registration (``AppDirectory/requireOwner(_:_:_:doing:)``); returns the
    /// widgets it dropped — kinds or families it no longer has — which are gone.
    func registerBundle(_ appID: String, json: String, from sender: String) throws -> [String] {
        let bundle = try WidgetBundle.parse(json)
        try store.checkBundleBudget(appID: appID, bundle, sharing: apps.appIDs(registeredBy: sender))
        let dropped = store.dropped(byBundle: bundle, of: appID)
        try storing { $0.registerBundle(appID: appID, bundle, dropping: dropped) }
        for id in dropped { unexport(id) }
        context.logger.info("widgets registered", metadata: ["app": "\(appID)", "kinds": "\(bundle.kinds.map(\.kind))"])
        return dropped
    }

    /// Places a widget (`AddWidget`); it has no timeline yet.
    func place(appID: String, kind: String, family: String, configuration: [String: DBusValue]) throws -> PlacedWidget {
        let widget = try store.placement(appID: appID, kind: kind, family: family, configuration: OptionValue.dictionary(configuration))
        let bytes = try budgets.check(widget, entries: [])
        try storing { $0.insert(widget) }
        budgets.charge(widget.id, appID: appID, bytes: bytes)
        try context.connection.export(objectInterfaces, at: Host1Widget.objectPath(widget.id))
        context.logger.info("widget added", metadata: ["widget": "\(widget.id)", "app": "\(appID)", "kind": "\(widget.kind)"])
        return widget
    }

    /// Sets the content an app gives a widget whose timeline's entries are
    /// `entries`, counted against the app's updates before any of it is read.
    func setContent(_ id: String, json: String, entries: [TimelineEntry]) throws {
        let widget = try existing(id)
        let pace = try pacing.admit(widget.appID)
        let content = try store.content(json)
        var changed = widget
        changed.setContent(content?.tree, root: content?.root)
        let bytes = try budgets.check(changed, entries: entries)
        // The widget checked is the one stored: its tap index and memory are built once.
        try storing { $0.insert(changed) }
        budgets.charge(id, appID: widget.appID, bytes: bytes)
        pacing.announce(Host1Widget.objectPath(id), Host1Widget.name, [Host1Widget.Property.content.rawValue], pace: pace)
    }

    /// Sets a widget's configuration (`Configure`), its timeline's entries being `entries`.
    func configure(_ id: String, _ values: [String: DBusValue], entries: [TimelineEntry]) throws {
        let configuration = OptionValue.dictionary(values)
        try store.checkConfiguration(id, configuration)
        var changed = store.widgets[id]!
        changed.configuration = configuration
        let bytes = try budgets.check(changed, entries: entries)
        try storing { $0.setConfiguration(id, configuration) }
        budgets.charge(id, appID: changed.appID, bytes: bytes)
        pacing.announce(Host1Widget.objectPath(id), Host1Widget.name, [Host1Widget.Property.configuration.rawValue])
    }

    /// Removes a widget (`Remove`), and its app's bundle when nothing needs it any more.
    func remove(_ id: String) throws {
        let widget = try existing(id)
        try storing { $0.remove(id) }
        unexport(id)
        context.logger.info("widget removed", metadata: ["widget": "\(id)"])
        dropUnneededBundles(among: [widget.appID])
    }

    /// Shows what a widget's timeline made due: no new charge (a widget is
    /// charged with the largest of its entries already) and no write (the
    /// timeline is stored; what it shows follows from it).
    func show(_ id: String, _ content: ViewTree?) {
        store.setContent(id, tree: content)
        pacing.announce(Host1Widget.objectPath(id), Host1Widget.name, [Host1Widget.Property.content.rawValue])
    }

    /// Forgets the bundles of apps among `appIDs` that are gone (no live
    /// registration, no desktop entry) and have no placed widget, so that
    /// apps that come and go leave nothing behind. When the disk refuses,
    /// the bundles stay until the next chance.
    func dropUnneededBundles(among appIDs: some Sequence<String>) {
        let unneeded = store.unneededBundles(among: appIDs) { apps.app($0) != nil }
        guard !unneeded.isEmpty else { return }
        do {
            try storing { for appID in unneeded { $0.dropBundle(appID: appID) } }
        } catch {
            return context.logger.warning("could not forget the bundles of apps that are gone: \(error)")
        }
        context.logger.info("bundles of apps that are gone forgotten", metadata: ["apps": "\(unneeded)"])
    }

    /// Makes `change` to the bundles and widgets and stores what it did
    /// (``Storage/persist(_:)``); when that cannot be stored, the change is
    /// taken back before anything announced it, and the error thrown.
    @discardableResult
    private func storing<T>(_ change: (inout WidgetStore) -> T) throws -> T {
        let (result, made) = store.changing(change)
        do { try storage.persist(made) } catch {
            store.undo(made)
            throw error
        }
        return result
    }

    /// Charges widget `id` as it is now, or takes its charge off when it is gone.
    func charge(_ id: String, entries: [TimelineEntry]) {
        guard let widget = store.widgets[id] else { return budgets.release(id) }
        budgets.charge(widget, entries: entries)
    }

    private func unexport(_ id: String) {
        context.connection.unexport(Host1Widget.objectPath(id))
        budgets.release(id)
    }

    // MARK: Durable state (see DurableModel.swift)

    /// Puts back the bundles and widgets stored, and serves the widgets'
    /// objects; nobody can be watching before the name is owned, so nothing
    /// is announced.
    func restore(_ durable: DurableState) throws {
        for (appID, json) in durable.bundles.sorted(by: { $0.key < $1.key }) {
            do {
                try store.restoreBundle(appID: appID, json: json)
            } catch {
                context.logger.warning("stored bundle of \(appID) skipped: \(error)")
            }
        }
        var restored: [String] = []
        restored.reserveCapacity(durable.widgets.count)
        store.reserveCapacity(durable.widgets.count)
        budgets.reserveCapacity(durable.widgets.count + durable.activities.count)
        for stored in durable.widgets.values.sorted(by: { MintedID.areInOrder($0.id, $1.id) }) {
            do {
                try store.restore(stored, nextNumber: durable.nextWidgetNumber)
            } catch {
                context.logger.warning("stored widget \(stored.id) skipped: \(error)")
            }
            if store.widgets[stored.id] != nil { restored.append(Host1Widget.objectPath(stored.id)) }
        }
        // Ids minted before are never minted again, though no object kept holds them.
        store.reserveNumbers(upTo: durable.nextWidgetNumber)
        try context.connection.export(objectInterfaces, at: restored)
    }

    /// Writes the bundles and widgets into a snapshot.
    func store(into image: inout DurableState) {
        image.bundles = store.bundles.mapValues(\.json)
        for widget in store.widgets.values { image.widgets[widget.id] = StoredWidget(widget, content: widget.content?.json) }
        image.nextWidgetNumber = store.nextWidgetNumber
    }

    func putBackBundle(_ appID: String, _ old: WidgetBundle?) {
        store.putBackBundle(appID: appID, old)
    }

    /// What putting a widget back did to its object.
    enum PutBack { case placed, gone }

    /// Puts widget `id` back as `old` (nil: no widget), with `entries` as its
    /// timeline, and tells renderers; says whether the object came back or went.
    func putBack(_ id: String, _ old: PlacedWidget?, entries: [TimelineEntry]) -> PutBack? {
        let current = store.widgets[id]
        store.putBack(id, old)
        let path = Host1Widget.objectPath(id)
        switch (current, old) {
        case (nil, nil):
            return nil
        case (nil, .some):
            try? context.connection.export(objectInterfaces, at: path)
            charge(id, entries: entries)
            return .placed
        case (.some, nil):
            unexport(id)
            return .gone
        case (let current?, let old?):
            charge(id, entries: entries)
            var changed: [Host1Widget.Property] = []
            if current.content != old.content { changed.append(.content) }
            if current.configuration != old.configuration { changed.append(.configuration) }
            if !changed.isEmpty { storage.propertiesChanged(path, Host1Widget.name, changed.map(\.rawValue)) }
            return nil
        }
    }
}
