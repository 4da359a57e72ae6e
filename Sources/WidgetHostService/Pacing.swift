import DBus
import FoundationEssentials
import WidgetHostCore

/// An object's properties of one interface: what ``UpdatePacing`` holds back.
struct AnnouncedObject: Hashable, Sendable {
    let path: String
    let interface: String
}

/// An update refused past its app's ceiling: ``Storage/answerOnceStored(_:_:)``
/// has ``Pacing`` answer it ten frames later (``Pacing/holdRefusal(_:_:)``).
struct RefusedUpdate: Error {
    let appID: String
    let error: HostError
    let pacing: Confined<Pacing>
}

/// When changes reach renderers and how many updates each app may send
/// (the model's `UpdatePacing`, docs/daemon.md#updates): each widget's and
/// Live Activity's changes are announced at most once a frame, the latest,
/// and each app's updates are counted against its rate and its ceiling. Two
/// timers, armed only while an announcement or a refusal is held: an idle
/// host has none.
final class Pacing: Store {
    private var pacing: UpdatePacing<AnnouncedObject>
    /// Refused updates waiting to be answered, oldest first.
    private var refusals: [HeldRefusal] = []
    private let context: HostContext
    private let storage: Storage
    private let timers: Deadlines

    /// A refusal waiting to be answered.
    private struct HeldRefusal {
        let at: Date
        let appID: String
        let answer: () -> Void
    }

    init(_ context: HostContext, storage: Storage, timers: Deadlines) {
        self.context = context
        self.storage = storage
        self.timers = timers
        pacing = UpdatePacing(options: context.configuration.updates)
    }

    /// Budgets are an app's, whichever connection sends its updates; a
    /// refusal held for a connection that left is answered into the void.
    func connectionLeft(_ connection: String) {}

    // MARK: The budget

    /// Counts an update of `appID` (`SetContent`, `LiveActivity.Update`)
    /// before any of it is read: `LimitExceeded`, answered ten frames later,
    /// past the app's ceiling.
    func admit(_ appID: String) throws -> UpdatePace {
        do {
            return try pacing.admit(appID: appID, now: context.now)
        } catch {
            throw RefusedUpdate(appID: appID, error: error, pacing: Confined(self, on: context.connection))
        }
    }

    /// Answers a refused update ten frames after it came, so that an app
    /// sending again as soon as it is answered floods neither the host nor
    /// the bus; at once when as many of the app's refusals as its ceiling wait.
    func holdRefusal<T>(_ refused: RefusedUpdate, _ reply: TypedReply<T>) {
        guard let at = pacing.holdRefusal(of: refused.appID, now: context.now) else { return reply.fail(refused.error) }
        refusals.append(HeldRefusal(at: at, appID: refused.appID) { reply.fail(refused.error) })
        if refusals.count == 1 { timers.arm(.refusals, at: at) }
    }

    /// Answers the refusals held to now (and any held further ahead than they
    /// are ever held: the clock was set back).
    func answerRefusals() {
        let now = context.now
        let latest = now.addingTimeInterval(Double(pacing.options.frameMs * UpdatePacingOptions.framesPastRate) / 1000)
        let due = refusals.prefix { $0.at <= now || $0.at > latest }
        refusals.removeFirst(due.count)
        for refusal in due {
            pacing.refusalAnswered(of: refusal.appID)
            refusal.answer()
        }
        timers.arm(.refusals, at: refusals.first?.at)
    }

    // MARK: Frames

    /// Announces that `names` of `interface` at `path` changed: now for the
    /// object's first change in a frame, else once at the frame's end, with
    /// the values then (see ``Storage/propertiesChanged(_:_:_:)`` for what
    /// waits for the disk).
    func announce(_ path: String, _ interface: String, _ names: [String], pace: UpdatePace = .withinRate) {
        let now = context.now
        if pacing.changed(AnnouncedObject(path: path, interface: interface), names, pace: pace, now: now) {
            storage.propertiesChanged(path, interface, names)
        } else {
            timers.arm(.announcements, at: pacing.nextDeadline(now: now))
        }
    }

    /// The announcements held to the end of their frame that are due now.
    /// One of an object gone meanwhile is dropped (its InterfacesRemoved said so).
    func announcementsDue() {
        let now = context.now
        for (object, names) in pacing.takeDue(now: now) { storage.propertiesChanged(object.path, object.interface, names) }
        timers.arm(.announcements, at: pacing.nextDeadline(now: now))
    }
}
