/// A binary min-heap of deadlines, each for a key: widgets for
/// ``TimelineEngine``, announcements for ``UpdatePacing``.
///
/// Items are ordered by `(deadline, sequence)`; sequences are unique, so the
/// order is total and popping is deterministic whatever order items were
/// pushed or rebuilt in. The heap does not know which items are still wanted:
/// the timeline engine invalidates an item lazily by arming its widget with a
/// newer sequence, and discards stale items when they reach the top.
struct DeadlineHeap<Key: Sendable & Equatable>: Sendable {
    struct Item: Sendable, Equatable {
        /// Unix time in milliseconds.
        var deadline: Int64
        /// Unique per push; the tie-breaker and the validity token.
        var sequence: UInt64
        var key: Key

        static func precedes(_ a: Item, _ b: Item) -> Bool {
            a.deadline != b.deadline ? a.deadline < b.deadline : a.sequence < b.sequence
        }
    }

    private(set) var items: [Item] = []

    var count: Int { items.count }
    var isEmpty: Bool { items.isEmpty }
    /// The earliest item, or nil.
    var top: Item? { items.first }

    mutating func push(_ item: Item) {
        items.append(item)
        siftUp(items.count - 1)
    }

    /// Removes and returns the earliest item.
    @discardableResult
    mutating func pop() -> Item? {
        guard !items.isEmpty else { return nil }
        if items.count == 1 { return items.removeLast() }
        let first = items[0]
        items[0] = items.removeLast()
        siftDown(0)
        return first
    }

    /// Replaces the contents with `newItems`, in O(n).
    mutating func rebuild(_ newItems: [Item]) {
        items = newItems
        guard items.count > 1 else { return }
        for index in stride(from: items.count / 2 - 1, through: 0, by: -1) {
            siftDown(index)
        }
    }

    private mutating func siftUp(_ start: Int) {
        var child = start
        while child > 0 {
            let parent = (child - 1) / 2
            guard Item.precedes(items[child], items[parent]) else { return }
            items.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func siftDown(_ start: Int) {
        var parent = start
        let count = items.count
        while true {
            let left = 2 * parent + 1
            guard left < count else { return }
            let right = left + 1
            var smallest = left
            if right < count, Item.precedes(items[right], items[left]) { smallest = right }
            guard Item.precedes(items[smallest], items[parent]) else { return }
            items.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
