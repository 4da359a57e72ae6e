import DBus
import FoundationEssentials
import WidgetHostCore

/// An object's properties of one interface: what ``UpdatePacing`` holds back.
struct AnnouncedObject: Hashable, Sendable {
    let path: String
    let interface: String
}

/// An update refused past its app's ceiling: ``HostService/answerOnceStored(_:_:)``
/// answers it ten frames later (``HostService/holdRefusal(_:_:)``).
struct RefusedUpdate: Error {
    let appID: String
    let error: HostError
}

/// A refusal waiting to be answered, oldest first.
struct HeldRefusal {
    let at: Date
    let appID: String
    let answer: () -> Void
}

/// Frames and update budgets (docs/widgets.md#updates): each widget's and
/// Live Activity's changes reach renderers at most once a frame, the latest,
/// and each app's updates are counted against its rate and its ceiling. Two
/// timers, armed only while an announcement or a refusal is held: an idle
/// host has none.
extension HostService {
    /// Counts an update of `appID` (`SetContent`, `LiveActivity.Update`)
    /// before any of it is read: `LimitExceeded`, answered ten frames later, past the app's ceiling.
    func admitUpdate(of appID: String) throws -> UpdatePace {
        do {
            return try pacing.admit(appID: appID, now: now)
        } catch {
            throw RefusedUpdate(appID: appID, error: error)
        }
    }

    /// Answers a refused update ten frames after it came, so that an app
    /// sending again as soon as it is answered floods neither the host nor
    /// the bus; at once when as many of the app's refusals as its ceiling wait.
    func holdRefusal<T>(_ refused: RefusedUpdate, _ reply: TypedReply<T>) {
        guard let at = pacing.holdRefusal(of: refused.appID, now: now) else { return reply.fail(refused.error) }
        refusals.append(HeldRefusal(at: at, appID: refused.appID) { reply.fail(refused.error) })
        if refusals.count == 1 { arm(.refusals, at: at) }
    }

    /// Answers the refusals held to now (and any held further ahead than they
    /// are ever held: the clock was set back).
    func answerRefusals() {
        let now = self.now
        let latest = now.addingTimeInterval(Double(configuration.updates.frameMs * UpdatePacingOptions.framesPastRate) / 1000)
        let due = refusals.prefix { $0.at <= now || $0.at > latest }
        refusals.removeFirst(due.count)
        for refusal in due {
            pacing.refusalAnswered(of: refusal.appID)
            refusal.answer()
        }
        arm(.refusals, at: refusals.first?.at)
    }

    /// Announces that `names` of `interface` at `path` changed: now for the
    /// object's first change in a frame, else once at the frame's end, with
    /// the values then (see ``propertiesChanged(_:_:_:)`` for what waits for the disk).
    func announcePaced(_ path: String, _ interface: String, _ names: [String], pace: UpdatePace = .withinRate) {
        let now = self.now
        if pacing.changed(AnnouncedObject(path: path, interface: interface), names, pace: pace, now: now) {
            propertiesChanged(path, interface, names)
        } else {
            arm(.announcements, at: pacing.nextDeadline(now: now))
        }
    }

    /// The announcements held to the end of their frame that are due now.
    /// One of an object gone meanwhile is dropped (its InterfacesRemoved said so).
    func announcementsDue() {
        let now = self.now
        for (object, names) in pacing.takeDue(now: now) { propertiesChanged(object.path, object.interface, names) }
        arm(.announcements, at: pacing.nextDeadline(now: now))
    }
}
