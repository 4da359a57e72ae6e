import Dispatch
import Synchronization
import WidgetHostCore

#if canImport(Glibc)
import Glibc
#endif

/// Writes a ``StateDirectory`` away from the host's thread, with group commit:
/// the host queues journal lines and snapshots as it makes changes, and the
/// writer's own serial queue writes every line that arrived while the previous
/// sync ran with a single `fdatasync` (as PostgreSQL and SQLite's WAL do), then
/// reports, in order, which writes are on disk.
///
/// The host applies a change to its model at once and answers the caller only
/// when the writer reports that change written, so a caller's next change can
/// build on it while it waits for the disk, and other callers are served
/// meanwhile. A write that fails is reported ``Report/failed(_:behind:)``; from
/// then on the writer writes nothing — everything queued after the failed
/// write is dropped, unreported — until ``resume()``, which the host calls
/// once it has put its model back as the files hold it (undoing, newest first,
/// every change not reported written). So the files never hold a change the
/// host took back, and the host never acknowledges one the files lack.
///
/// Snapshots (``compact(_:)``) are written on the same queue, after what was
/// queued before them: a failed one changes nothing and stops nothing.
public final class JournalWriter: StateJournal {
    /// What the writer tells the host, on the writer's queue, in the order it happened.
    public typealias Report = JournalReport

    private enum Work: Sendable {
        case lines(UInt64, [String])
        case snapshot(UInt64, DurableState)
        case compaction(DurableState)
        case resume
        case finish(@Sendable () -> Void)
    }

    private struct Queued: Sendable {
        var work: [Work] = []
        var lastNumber: UInt64 = 0
        var draining = false
    }

    /// What only the writer's queue touches.
    private final class Owned: @unchecked Sendable {
        let directory: StateDirectory
        /// After a failed write, until `resume`.
        var halted = false
        init(_ directory: StateDirectory) { self.directory = directory }
    }

    /// The state directory's path.
    public let path: String
    private let owned: Owned
    private let queued = Mutex(Queued())
    private let queue = DispatchQueue(label: "widgethost.journal", qos: .userInitiated)
    private let report: @Sendable (Report) -> Void

    /// Takes over `directory`: from now on only the writer uses it.
    /// `report` is called on the writer's queue.
    public init(_ directory: StateDirectory, report: @escaping @Sendable (Report) -> Void) {
        path = directory.path
        owned = Owned(directory)
        self.report = report
    }

    /// Queues journal lines (``StateDirectory/line(_:)``) to be appended;
    /// returns the number ``Report/written(through:wantsCompaction:)`` names
    /// once they are on disk.
    @discardableResult
    public func append(_ lines: [String]) -> UInt64 {
        enqueue { .lines($0, lines) }
    }

    /// Queues `state` to be written whole as the snapshot, as a write: for
    /// files that can take only a snapshot (``Report/failed(_:behind:)``).
    @discardableResult
    public func writeSnapshot(_ state: DurableState) -> UInt64 {
        enqueue { .snapshot($0, state) }
    }

    /// Queues `state` — everything queued so far applied — to be written as a
    /// snapshot that empties the journal. It only saves space and reading
    /// time: a failure is reported and nothing else changes.
    public func compact(_ state: DurableState) {
        enqueue { _ in .compaction(state) }
    }

    /// Writes again after a ``Report/failed(_:behind:)``; what was queued
    /// before this call is dropped.
    public func resume() {
        enqueue { _ in .resume }
    }

    /// Returns once everything queued before it has been written or dropped,
    /// and the directory closed: it may be opened again as soon as this returns.
    public func finish() async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            enqueue { _ in .finish { done.resume() } }
        }
    }

    @discardableResult
    private func enqueue(_ make: (UInt64) -> Work) -> UInt64 {
        let (number, start) = queued.withLock { queued in
            queued.lastNumber += 1
            queued.work.append(make(queued.lastNumber))
            defer { queued.draining = true }
            return (queued.lastNumber, !queued.draining)
        }
        if start { queue.async { self.drain() } }
        return number
    }

    /// Runs on the writer's queue until nothing is queued: each round takes
    /// everything that arrived meanwhile, so its lines share one sync.
    private func drain() {
        while true {
            let work = queued.withLock { queued -> [Work] in
                if queued.work.isEmpty { queued.draining = false }
                defer { queued.work.removeAll(keepingCapacity: true) }
                return queued.work
            }
            if work.isEmpty { return }
            write(work)
        }
    }

    private func write(_ work: [Work]) {
        let directory = owned.directory
        var lines: [String] = []
        var through: UInt64 = 0
        func flush() {
            guard !lines.isEmpty else { return }
            defer { lines.removeAll(keepingCapacity: true) }
            do {
                try directory.append(lines: lines)
                report(.written(through: through, wantsCompaction: directory.wantsCompaction))
            } catch {
                fail(error)
            }
        }
        func fail(_ error: any Error) {
            owned.halted = true
            report(.failed(Self.storage(error), behind: directory.needsSnapshot))
        }
        for item in work {
            switch item {
            case .lines(let number, let more):
                guard !owned.halted else { continue }
                lines += more
                through = number
            case .snapshot(let number, let state):
                flush()
                guard !owned.halted else { continue }
                do {
                    try directory.compact(state)
                    report(.written(through: number, wantsCompaction: false))
                } catch {
                    fail(error)
                }
            case .compaction(let state):
                flush()
                guard !owned.halted else { continue }
                do {
                    try directory.compact(state)
                    report(.compacted)
                } catch {
                    report(.compactionFailed(Self.storage(error)))
                }
            case .resume:
                flush()
                owned.halted = false
            case .finish(let done):
                flush()
                directory.release()
                owned.halted = true
                done()
            }
        }
        flush()
    }

    private static func storage(_ error: any Error) -> StateDirectoryError {
        error as? StateDirectoryError ?? .failed("\(error)", EIO)
    }
}
