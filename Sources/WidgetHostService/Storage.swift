import DBus
import FoundationEssentials
import WidgetHostCore
import WidgetHostSystem

/// Durable state (`--state-dir`): every change the host acknowledges is
/// journalled, and synced, before the reply goes out — by the journal writer,
/// off the connection's thread, one sync for every change that arrived
/// meanwhile; at start-up the model is rebuilt from the directory before the
/// bus name is taken (``open(_:)``).
final class Storage: Store {
    private let context: HostContext
    private let timers: Deadlines
    /// The state directory once ``open(_:)`` read it; nil before, and once closed.
    private var opened: Opened?
    /// The state directory, for messages.
    private var path = ""
    private var writes = Writes()

    /// An open state directory: the journal that writes it off the host's
    /// thread, and the model it holds, which a snapshot writes whole and a
    /// refused write puts back. Its reports hold this store: ``closed()``
    /// lets both go.
    private struct Opened {
        fileprivate let journal: any StateJournal
        fileprivate let model: DurableModel
    }

    init(_ context: HostContext, timers: Deadlines) {
        self.context = context
        self.timers = timers
    }

    /// Writes are the host's: the callers waiting for one are answered by the
    /// writer whether or not they are still on the bus.
    func connectionLeft(_ connection: String) {}

    /// Reads the state directory and puts back bundles, widgets (same ids and
    /// paths), Live Activities and timelines. Damage is logged and kept aside
    /// by `StateDirectory`; what cannot be put back is logged and skipped.
    func open(_ model: DurableModel) throws {
        let configured = context.configuration.stateDirectory
        let directory: StateDirectory
        let durable: DurableState
        do {
            (directory, durable) = try StateDirectory.open(directory: configured)
        } catch {
            throw DBusError.failed("cannot use the state directory \(configured): \(error)")
        }
        for note in directory.notes { context.logger.warning("\(note)") }
        let restored = try model.restore(durable)
        let reports = Confined(self, on: context.connection)
        let journal = JournalWriter(directory) { [connection = context.connection] report in
            connection.async { reports.run { $0.journalReported(report) } }
        }
        opened = Opened(journal: journal, model: model)
        path = directory.path
        writes.filesBehind = directory.needsSnapshot
        // Opening may have left the files behind the model (a snapshot it could not write).
        armRetry()
        context.logger.info(
            "state restored",
            metadata: [
                "dir": "\(directory.path)", "widgets": "\(restored.widgets)", "activities": "\(durable.activities.count)",
                "timelines": "\(restored.timelines)",
            ])
    }

    /// A clean stop writes what is queued, then one snapshot and an empty
    /// journal, so the next start reads less: returns the journal, for the
    /// host to wait until it finished, then call ``closed()``.
    func closing() -> (any StateJournal)? {
        guard let opened else { return nil }
        opened.journal.compact(opened.model.image())
        return opened.journal
    }

    /// The journal finished: its reports, which hold this store, go.
    func closed() {
        opened = nil
    }

    /// Queues the records of `change` — made to the model just now, before
    /// anything announced it — for the journal writer, and returns at once:
    /// the sync happens off this thread, together with every other write
    /// queued meanwhile (group commit). A handler answered by
    /// ``answerOnceStored(_:_:)`` is answered once the change is on disk.
    ///
    /// When the disk refuses the write, what the change replaced is put back
    /// (``journalReported(_:)``), with every change queued after it, and
    /// their callers get `StorageFailed`.
    ///
    /// - Throws: `InvalidArgument` for a value that cannot be stored (it is
    ///   encoded here, so that nothing is queued): the caller's input, whose
    ///   store then takes the change back.
    func persist(_ change: DurableChange) throws {
        try queue(change.records, priors: change.priors)
    }

    /// Queues `records` of a change the host keeps whatever the disk says
    /// (timers, provider answers): nobody waits for it, and when the disk
    /// refuses it the whole state is written once the disk takes it again.
    func persistQuietly(_ records: [StateRecord]) {
        do { try queue(records, priors: nil) } catch {
            // A value that cannot be stored, which validation keeps out.
            context.logger.error("a change could not be stored: \(error)")
        }
    }

    /// Encodes `records` and queues them; `priors` is what to put back if the
    /// disk refuses them, nil for a change the host keeps.
    private func queue(_ records: [StateRecord], priors: [DurableChange.Prior]?) throws {
        guard let opened, !records.isEmpty else { return }
        let lines: [String]
        do {
            lines = try records.map(StateFile.line)
        } catch {
            throw HostError.invalidArgument("the change cannot be stored (\(error)); nothing was changed — send only finite numbers and valid strings")
        }
        let number: UInt64
        let whole = writes.filesBehind
        if whole {
            // The files lag behind the model: write it whole, with this change
            // (applied again: a timeline is journalled before its store takes it).
            var image = opened.model.image()
            for record in records { image.apply(record) }
            number = opened.journal.writeSnapshot(image)
        } else {
            number = opened.journal.append(lines)
        }
        if writes.queued(PendingWrite(number: number, priors: priors, isSnapshot: whole, queuedAt: context.now)) { armSlowWrites() }
    }

    /// Arms the timer for the oldest write with callers still waiting.
    private func armSlowWrites() {
        timers.arm(.slowWrites, at: writes.oldestWaiting.map { $0.addingTimeInterval(context.configuration.deliveryTimeout.timeInterval) })
    }

    /// A write the disk has not taken within the delivery timeout — a frozen
    /// or failing file system that neither syncs nor fails — answers its
    /// callers `StorageFailed` now rather than never: the change is in the
    /// model and may still reach the disk, so it is not put back, and what it
    /// changed is announced. Taps and reads never wait on a write.
    func answerSlowWrites() {
        let timeout = context.configuration.deliveryTimeout
        let due = context.now.addingTimeInterval(-timeout.timeInterval)
        let answered = writes.takeWaiters(queuedBy: due)
        let statePath = path
        if !answered.isEmpty {
            let count = answered.count
            context.logger.error(
                "the state directory has not taken changes within the delivery timeout; their callers are told they may still be stored",
                metadata: ["dir": "\(statePath)", "callers": "\(count)"])
            announceHeld()
            let failure = HostError(
                .storageFailed,
                "the state directory \(statePath) has not taken the change within \(timeout.seconds) s (its disk may be frozen, failing or very slow); it may still be stored — read the object back to see, and check that disk")
            for waiter in answered { waiter(failure) }
        }
        let next = writes.oldestWaiting(after: due)
        timers.arm(.slowWrites, at: next.map { $0.addingTimeInterval(timeout.timeInterval) })
    }

    /// Answers `reply` with what `body` returns or throws — at once when it
    /// changed nothing durable, else once the writer reports its changes on
    /// disk, or with `StorageFailed` (and the changes put back) when the disk
    /// refuses them. Nothing is acknowledged before it is on disk. An update
    /// refused past its app's ceiling is answered ten frames later.
    func answerOnceStored<T>(_ reply: TypedReply<T>, _ body: () throws -> T) {
        // Reports arrive between handlers, never during one: a new last write is this call's.
        let mark = writes.lastWrite
        let result = Result { try body() }
        if case .failure(let refused as RefusedUpdate) = result { return refused.pacing.run { $0.holdRefusal(refused, reply) } }
        guard writes.lastWrite != mark else { return reply.send(result) }
        writes.waitForLastWrite { refused in
            if let refused { reply.fail(refused) } else { reply.send(result) }
        }
    }

    /// What the journal writer reports, on the connection's thread, in order.
    private func journalReported(_ report: JournalReport) {
        switch report {
        case .written(let through, let wantsCompaction):
            let done = writes.written(through: through)
            works()
            announceHeld()
            for write in done { for waiter in write.waiters { waiter(nil) } }
            armSlowWrites()
            if wantsCompaction { compactSoon() }
        case .failed(let error, let behind):
            failed(error)
            // Nothing queued since the last write reported written is on disk, nor will be:
            // put the model back as the files hold it, newest first, then answer.
            // The refused writes count as pending until all are put back, so what the
            // put-backs change joins the held announcements: one signal per object.
            let refused = writes.pendingWrites
            writes.compactionQueued = false
            for write in refused.reversed() {
                guard let priors = write.priors else {
                    writes.filesBehind = true
                    continue
                }
                for prior in priors.reversed() { opened?.model.putBack(prior) }
            }
            writes.pendingWrites.removeFirst(refused.count)
            if behind { writes.filesBehind = true }
            opened?.model.putBackEnded()
            announceHeld()
            opened?.journal.resume()
            armRetry()
            let failure = HostError(
                .storageFailed,
                "the state directory \(path) cannot take the change (\(error)); nothing was changed and everything else goes on working — free space on that disk or make the directory writable, then send it again")
            for write in refused { for waiter in write.waiters { waiter(failure) } }
            armSlowWrites()
        case .compacted:
            writes.compactionQueued = false
            writes.nextCompactionAttempt = nil
        case .compactionFailed(let error):
            writes.compactionQueued = false
            writes.nextCompactionAttempt = context.now.addingTimeInterval(60)
            context.logger.warning("cannot compact the state directory (\(error)); the journal keeps every change, trying again in a minute")
        }
    }

    /// Announces that properties of the object at `path` changed: at once
    /// when no write waits for the disk, else when the writer next reports,
    /// once per object with the values current then. A burst of writes to one
    /// object costs one signal per sync instead of one per write, and the
    /// signals of a batch go out just before its callers' replies.
    func propertiesChanged(_ path: String, _ interface: String, _ names: [String]) {
        guard writes.hold(path, interface, names) else {
            try? context.connection.emitPropertiesChanged(path: path, interface: interface, properties: names)
            return
        }
    }

    /// Emits what ``propertiesChanged(_:_:_:)`` held back; an object gone
    /// meanwhile is skipped (its InterfacesRemoved said so).
    private func announceHeld() {
        for (path, interface, names) in writes.takeHeld() {
            try? context.connection.emitPropertiesChanged(path: path, interface: interface, properties: names)
        }
    }

    /// Queues a snapshot so the journal starts again. It only saves space and
    /// reading time: the journal already holds every change, so a failure is
    /// logged and tried again later, never a failed call.
    private func compactSoon() {
        guard let opened, writes.mayCompact(now: context.now) else { return }
        writes.compactionQueued = true
        opened.journal.compact(opened.model.image())
    }

    /// Logs the first failure of an outage.
    private func failed(_ error: any Error) {
        guard writes.failingSince == nil else { return }
        writes.failingSince = context.now
        context.logger.error(
            "the state directory refuses writes (\(error)); changes are refused with StorageFailed, everything else goes on working")
    }

    /// A write went through: the outage, if any, is over.
    private func works() {
        guard let since = writes.failingSince else { return }
        writes.failingSince = nil
        writes.retryDelay = 1
        context.logger.notice("the state directory takes writes again", metadata: ["after": "\(Int(context.now.timeIntervalSince(since))) s"])
        if !writes.filesBehind { timers.arm(.storage, at: nil) }
    }

    /// Retries, with a growing delay, while the files lag behind the model.
    private func armRetry() {
        guard writes.filesBehind else { return }
        timers.arm(.storage, at: context.now.addingTimeInterval(writes.retryDelay))
        writes.retryDelay = min(writes.retryDelay * 2, 60)
    }

    /// Writes the whole state once the directory takes it again; a failure
    /// arms the next try (``journalReported(_:)``).
    func retry() {
        timers.arm(.storage, at: nil)
        guard let opened, writes.filesBehind else { return }
        let number = opened.journal.writeSnapshot(opened.model.image())
        _ = writes.queued(PendingWrite(number: number, priors: nil, isSnapshot: true, queuedAt: context.now))
    }
}

/// ``Storage``'s bookkeeping: the writes queued and not yet on disk with the
/// callers waiting for them, the announcements held back meanwhile, and how
/// an outage and the compactions are paced.
struct Writes {
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
    /// The writer's number for it.
    let number: UInt64
    /// What it replaced, to put back (newest last) if the disk refuses it;
    /// nil for a change the host keeps whatever the disk says.
    let priors: [DurableChange.Prior]?
    /// The whole state, written because the files lagged behind.
    let isSnapshot: Bool
    /// When it was queued: its callers are answered at most the delivery timeout later.
    let queuedAt: Date
    /// Answers waiting for it: nil once it is on disk, else the error.
    var waiters: [(HostError?) -> Void] = []
}
