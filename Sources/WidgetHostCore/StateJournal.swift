/// Where the host's changes go to become durable: written off the host's
/// thread, in the order they were queued, each reported once it is on disk
/// (WidgetHostSystem's `JournalWriter` writes a state directory with group
/// commit). The host applies a change to its model at once and answers its
/// caller when the journal reports it written; see `JournalWriter` for what
/// a failed write stops and how ``resume()`` starts again.
public protocol StateJournal: Sendable {
    /// Queues journal lines (``StateFile/line(_:)``) to be appended; returns
    /// the number ``JournalReport/written(through:wantsCompaction:)`` names
    /// once they are on disk.
    @discardableResult
    func append(_ lines: [String]) -> UInt64
    /// Queues `state` to be written whole as the snapshot, as a write: for
    /// files that can take only a snapshot (``JournalReport/failed(_:behind:)``).
    @discardableResult
    func writeSnapshot(_ state: DurableState) -> UInt64
    /// Queues `state` — everything queued so far applied — to be written as a
    /// snapshot that empties the journal; it only saves space and reading time.
    func compact(_ state: DurableState)
    /// Writes again after a ``JournalReport/failed(_:behind:)``; what was
    /// queued before this call is dropped.
    func resume()
    /// Returns once everything queued before it has been written or dropped,
    /// and the files closed.
    func finish() async
}

/// What a ``StateJournal`` tells the host, in the order it happened.
public enum JournalReport: Sendable {
    /// Every write queued up to `through` (a number ``StateJournal/append(_:)`` or
    /// ``StateJournal/writeSnapshot(_:)`` returned) is on disk; `wantsCompaction` when
    /// the journal has grown enough for a snapshot to pay.
    case written(through: UInt64, wantsCompaction: Bool)
    /// A write failed: no write after the last one reported written is on
    /// disk, and none is written before ``StateJournal/resume()``. `behind` when the
    /// files can take only a snapshot next (`StateDirectory.needsSnapshot`).
    case failed(StateDirectoryError, behind: Bool)
    /// A ``StateJournal/compact(_:)`` snapshot is in place.
    case compacted
    /// A ``StateJournal/compact(_:)`` snapshot could not be written; the files are as they were.
    case compactionFailed(StateDirectoryError)
}
