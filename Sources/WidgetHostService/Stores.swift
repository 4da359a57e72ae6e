import DBus
import FoundationEssentials
import Logging
import WidgetHostCore

/// What every part of the host uses and none owns: the connection (to export
/// objects, emit signals and call apps), the log, the options and the clock.
struct HostContext: Sendable {
    let connection: Connection
    let logger: Logger
    let configuration: HostConfiguration

    var now: Date { configuration.clock.now() }

    /// Emits a signal; a failure is logged, since nobody waits for it.
    func emitting(_ signal: String, _ emit: (Connection) throws -> Void) {
        do {
            try emit(connection)
        } catch let error as DBusError where error.name == DBusError.disconnectedName {
            // The host has let go of the bus — it is stopping, and an app that ended
            // just before is forgotten meanwhile — or the bus is gone: no one is left to tell.
            logger.debug("did not emit \(signal): \(error)")
        } catch {
            logger.error("could not emit \(signal): \(error)")
        }
    }
}

/// One part of the host's state, owned by the host (``Stores``) and handed to
/// the servers that need it; each server holds only the stores its calls use.
/// A store keeps its model private and offers what its users do with it.
///
/// Whatever a connection owns — its registrations, the bundles they keep, what
/// is known of it — is forgotten in one place when it leaves the bus:
/// `HostService.connectionClosed` tells every store, and each forgets what it
/// holds of the connection. A store that holds nothing of connections says why.
protocol Store: AnyObject {
    /// `connection` (a unique bus name) left the bus: forget what it owned here.
    func connectionLeft(_ connection: String)
}

/// The host's stores, built once and each handed to the servers that need it
/// (`HostService.makeServers()`): the model on the connection's thread.
struct Stores {
    let apps: Apps
    let widgets: Widgets
    let activities: Activities
    let timelines: Timelines
    let deliveries: Deliveries
    let storage: Storage
    let budgets: Budgets
    let pacing: Pacing

    init(_ context: HostContext, timers: Deadlines) {
        let configuration = context.configuration
        budgets = Budgets(configuration.budgets)
        storage = Storage(context, timers: timers)
        pacing = Pacing(context, storage: storage, timers: timers)
        deliveries = Deliveries(context)
        apps = Apps(context)
        widgets = Widgets(context, apps: apps, storage: storage, budgets: budgets, pacing: pacing)
        activities = Activities(context, storage: storage, budgets: budgets, pacing: pacing, timers: timers)
        timelines = Timelines(context, widgets: widgets, apps: apps, storage: storage, budgets: budgets, timers: timers)
    }

    /// Every store, in the order a connection that leaves is forgotten: the
    /// registry first, since what the others keep may hinge on a registration
    /// (a bundle is kept while its app is registered).
    var all: [any Store] { [apps, widgets, activities, timelines, deliveries, storage, budgets, pacing] }
}
