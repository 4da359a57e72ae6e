/// At most `limit` items of each key under way at once; the rest wait in the
/// order they came. The host holds its calls to one app's provider to a few
/// at a time with it, however many widgets ask at once.
public struct TurnLimiter<Key: Hashable & Sendable, Item: Sendable>: Sendable {
    public let limit: Int
    private var running: [Key: Int] = [:]
    private var waiting: [Key: [Item]] = [:]

    public init(limit: Int) {
        precondition(limit >= 1, "a limiter lets at least one item through")
        self.limit = limit
    }

    /// Whether `item` may start now (it is then counted under way until
    /// ``finished(_:)``); otherwise it waits its turn.
    public mutating func admit(_ item: Item, for key: Key) -> Bool {
        let count = running[key, default: 0]
        guard count < limit else {
            waiting[key, default: []].append(item)
            return false
        }
        running[key] = count + 1
        return true
    }

    /// One item of `key` is over. Returns the next one waiting, now counted
    /// under way in its place, or nil when none waits.
    public mutating func finished(_ key: Key) -> Item? {
        if var queue = waiting[key], !queue.isEmpty {
            let next = queue.removeFirst()
            waiting[key] = queue.isEmpty ? nil : queue
            return next
        }
        let count = running[key, default: 0]
        running[key] = count > 1 ? count - 1 : nil
        return nil
    }

    /// Items of `key` under way, and waiting.
    public func underWay(_ key: Key) -> Int { running[key, default: 0] }
    public func waitingCount(_ key: Key) -> Int { waiting[key]?.count ?? 0 }
}
