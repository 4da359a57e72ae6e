/// The bytes the host holds for each app, and the budgets that bound them.
///
/// Everything the host holds for an app travels on the bus: a widget's or Live
/// Activity's properties in `GetManagedObjects` and in its signals, a widget's
/// timeline in `DescribeTimeline`. D-Bus allows at most 64 MiB in one array, so
/// a limit on each value alone (content, configuration) does not keep the sum
/// within it: the sum needs budgets of its own. Each object is charged what it
/// takes on the bus (the service measures it); an app may hold at most
/// ``Budgets/perApp`` bytes and the host at most ``Budgets/total``, so that
/// `GetManagedObjects` of a full host still fits one message.
public struct Footprint: Sendable {
    public struct Budgets: Sendable, Equatable {
        /// The most bytes one app's objects may take (the limit max-app-bytes).
        public var perApp = HostDefaults.maxAppBytes
        /// The most bytes all apps' objects may take (the limit max-host-bytes).
        public var total = HostDefaults.maxHostBytes
        /// The largest host budget allowed: `GetManagedObjects` of a full host,
        /// with its own object and the message's header, stays well within
        /// D-Bus's 64 MiB array limit.
        public static let largestTotal = 56 << 20

        public init() {}
    }

    public var budgets: Budgets
    /// What each object (by id) is charged, and to which app: one entry per
    /// widget, activity and timeline, so an entry is kept to 8 bytes (the
    /// app as its place in ``apps``).
    private var charges: [String: Charge] = [:]
    private struct Charge {
        var app: UInt32
        var bytes: UInt32
    }
    /// Each app ever charged, once; ``appNumbers`` finds its place.
    private var apps: [String] = []
    private var appNumbers: [String: UInt32] = [:]
    private var byApp: [String: Int] = [:]
    /// The bytes all objects take.
    public private(set) var total = 0

    /// Makes room for `count` charges at once, before a restore charges them.
    public mutating func reserveCapacity(_ count: Int) { charges.reserveCapacity(count) }

    public init(budgets: Budgets = Budgets()) {
        self.budgets = budgets
    }

    /// The bytes an app's objects take.
    public func bytes(of appID: String) -> Int { byApp[appID, default: 0] }

    /// What object `id` is charged now (0 when it has no charge).
    public func charge(of id: String) -> Int { charges[id].map { Int($0.bytes) } ?? 0 }

    /// Checks that object `id` of `appID` may take `bytes`; changes nothing.
    ///
    /// Only growth is refused: a change that keeps or shrinks an object is
    /// always allowed, even when the budgets were lowered below what the host
    /// already holds (as after a restart with smaller limits).
    public func check(_ id: String, appID: String, bytes: Int) throws(HostError) {
        let growth = bytes - charge(of: id)
        guard growth > 0 else { return }
        let app = self.bytes(of: appID) + growth
        if app > budgets.perApp {
            throw .limitExceeded(
                "\(appID)'s widgets, timelines and Live Activities would take \(app) bytes on the bus; an app may have at most \(budgets.perApp) bytes (the limit max-app-bytes) — send smaller content, or remove widgets or end Live Activities first")
        }
        if total + growth > budgets.total {
            throw .limitExceeded(
                "all apps' widgets, timelines and Live Activities would take \(total + growth) bytes on the bus; the host holds at most \(budgets.total) bytes (the limit max-host-bytes) — send smaller content, or remove widgets or end Live Activities first")
        }
    }

    /// Charges object `id` of `appID` with `bytes`, replacing its earlier charge.
    ///
    /// `bytes` is at most a budget, which is below 4 GiB.
    public mutating func set(_ id: String, appID: String, bytes: Int) {
        release(id)
        let app = appNumbers[appID] ?? {
            apps.append(appID)
            appNumbers[appID] = UInt32(apps.count - 1)
            return UInt32(apps.count - 1)
        }()
        charges[id] = Charge(app: app, bytes: UInt32(bytes))
        byApp[appID, default: 0] += bytes
        total += bytes
    }

    /// Takes object `id`'s charge off (it is gone).
    public mutating func release(_ id: String) {
        guard let old = charges.removeValue(forKey: id) else { return }
        let appID = apps[Int(old.app)]
        let left = byApp[appID, default: 0] - Int(old.bytes)
        byApp[appID] = left > 0 ? left : nil
        total -= Int(old.bytes)
    }
}
