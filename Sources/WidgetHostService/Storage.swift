import FoundationEssentials
import WidgetHostCore

/// The state directory as the host sees it (see StateService.swift): its
/// journal, the writes queued and not yet on disk with the callers waiting for
/// them, the announcements held back meanwhile, and how an outage and the
/// compactions are paced.
struct Storage {
    /// Writes the state directory off the host's thread; nil until `start()` opened it.
    var journal: (any StateJournal)?
    /// The state directory, for messages.
    var path = ""
    /// The files lag behind the model (a write the host keeps was refused, or
    /// opening could not write a snapshot): the next write is the whole state.
    var filesBehind = false
    /// Writes queued for the journal and not yet reported, oldest first.
    var pendingWrites: [PendingWrite] = []
    /// A compaction is queued and not yet reported.
    var compactionQueued = false
    /// PropertiesChanged held back while writes wait for the disk: object
    /// path → interface → property names, announced when the writer reports.
    private var held: [String: [String: [String]]] = [:]
    /// Since when the state directory refuses writes; nil while it takes them.
    var failingSince: Date?
    /// How long the next retry waits; doubles up to a minute while writes fail.
    var retryDelay: TimeInterval = 1
    /// No compaction is tried before this, after one failed.
    var nextCompactionAttempt: Date?

    init() {}

    init(journal: any StateJournal, path: String, filesBehind: Bool) {
        self.journal = journal
        self.path = path
        self.filesBehind = filesBehind
    }

    /// Queues `write`; whether it is the only one waiting (the slow-writes timer is then to be armed).
    mutating func queued(_ write: PendingWrite) -> Bool {
        pendingWrites.append(write)
        return pendingWrites.count == 1
    }

    /// The number of the last write queued.
    var lastWrite: UInt64? { pendingWrites.last?.number }

    /// Answers `waiter` once the last write queued is on disk (nil) or refused.
    mutating func waitForLastWrite(_ waiter: @escaping (HostError?) -> Void) {
        pendingWrites[pendingWrites.count - 1].waiters.append(waiter)
    }

    /// When the oldest write with callers waiting was queued (else the oldest write).
    var oldestWaiting: Date? { pendingWrites.first { !$0.waiters.isEmpty }?.queuedAt ?? pendingWrites.first?.queuedAt }

    /// When the oldest write queued after `date` with callers waiting was queued.
    func oldestWaiting(after date: Date) -> Date? {
        pendingWrites.first { !$0.waiters.isEmpty && $0.queuedAt > date }?.queuedAt
    }

    /// Takes the callers of the writes queued by `date`, to answer them now.
    mutating func takeWaiters(queuedBy date: Date) -> [(HostError?) -> Void] {
        var taken: [(HostError?) -> Void] = []
        for index in pendingWrites.indices where pendingWrites[index].queuedAt <= date {
            taken += pendingWrites[index].waiters
            pendingWrites[index].waiters = []
        }
        return taken
    }

    /// The writes up to `through` are on disk: they are no longer pending.
    mutating func written(through: UInt64) -> ArraySlice<PendingWrite> {
        let done = pendingWrites.prefix { $0.number <= through }
        pendingWrites.removeFirst(done.count)
        if done.contains(where: \.isSnapshot) { filesBehind = false }
        return done
    }

    /// Holds back the announcement of `names` of `interface` at `path` while
    /// a write waits for the disk; false when none waits (announce it now).
    mutating func hold(_ path: String, _ interface: String, _ names: [String]) -> Bool {
        guard !pendingWrites.isEmpty else { return false }
        var announced = held[path, default: [:]][interface, default: []]
        for name in names where !announced.contains(name) { announced.append(name) }
        held[path, default: [:]][interface] = announced
        return true
    }

    /// The announcements held back, once per object and interface, in path order.
    mutating func takeHeld() -> [(path: String, interface: String, names: [String])] {
        guard !held.isEmpty else { return [] }
        defer { held = [:] }
        return held.sorted(by: { $0.key < $1.key }).flatMap { path, interfaces in
            interfaces.sorted(by: { $0.key < $1.key }).map { (path, $0.key, $0.value) }
        }
    }

    /// Whether a compaction may be queued now: none is, the files hold the
    /// whole state, and the last failure is a minute old.
    func mayCompact(now: Date) -> Bool {
        !compactionQueued && !filesBehind && nextCompactionAttempt.map { $0 <= now } ?? true
    }
}

/// A write queued for the journal writer and not yet reported on disk.
struct PendingWrite {
    /// What an object was before a change, to put it back.
    enum Prior {
        case bundle(String, WidgetBundle?)
        case widget(String, PlacedWidget?)
        case activity(String, LiveActivity?)
    }

    /// The writer's number for it.
    let number: UInt64
    /// What it replaced, to put back (newest last) if the disk refuses it;
    /// nil for a change the host keeps whatever the disk says.
    let priors: [Prior]?
    /// The whole state, written because the files lagged behind.
    let isSnapshot: Bool
    /// When it was queued: its callers are answered at most the delivery timeout later.
    let queuedAt: Date
    /// Answers waiting for it: nil once it is on disk, else the error.
    var waiters: [(HostError?) -> Void] = []
}
