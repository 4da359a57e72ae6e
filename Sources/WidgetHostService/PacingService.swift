import WidgetHostCore

/// An object's properties of one interface: what ``UpdatePacing`` holds back.
struct AnnouncedObject: Hashable, Sendable {
    let path: String
    let interface: String
}

/// Frames and update budgets (docs/widgets.md#updates): each widget's and
/// Live Activity's changes reach renderers at most once a frame, the latest,
/// and each app's updates are counted against its rate and its ceiling. One
/// timer, armed only while an announcement is held: an idle host has none.
extension HostService {
    /// Counts an update of `appID` (`SetContent`, `LiveActivity.Update`)
    /// before any of it is read: `LimitExceeded` past the app's ceiling.
    func admitUpdate(of appID: String) throws -> UpdatePace {
        try pacing.admit(appID: appID, now: now)
    }

    /// Announces that `names` of `interface` at `path` changed: now when the
    /// object was quiet for its frame, else once at the frame's end, with
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
