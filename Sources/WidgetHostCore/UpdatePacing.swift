#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The settings of ``UpdatePacing``; the daemon exposes them as options
/// (docs/daemon.md#updates).
public struct UpdatePacingOptions: Sendable, Equatable {
    /// How many frames an object of an app past its rate waits between two
    /// announcements, instead of one.
    public static let framesPastRate = 10

    /// One frame in milliseconds (``HostDefaults/updateFrameMs``): each
    /// object's changes within one are announced once, the latest.
    public var frameMs: Int
    /// Updates a second one app may make, sustained, and have each change
    /// announced within a frame (``HostDefaults/updateRate``).
    public var rate: Int
    /// Updates one app may make at once beyond its rate before it is past it
    /// (``HostDefaults/updateBurst``).
    public var burst: Int
    /// Updates a second one app may make at all, in bursts of as many; past it
    /// an update is refused (``HostDefaults/maxUpdateRate``).
    public var ceiling: Int

    /// Creates options; every parameter defaults to the documented default.
    public init(
        frameMs: Int = HostDefaults.updateFrameMs, rate: Int = HostDefaults.updateRate, burst: Int = HostDefaults.updateBurst,
        ceiling: Int = HostDefaults.maxUpdateRate
    ) {
        self.frameMs = frameMs
        self.rate = rate
        self.burst = burst
        self.ceiling = ceiling
    }

    /// The frames between two announcements of one object.
    func frames(_ pace: UpdatePace) -> Int64 {
        pace == .withinRate ? 1 : Int64(Self.framesPastRate)
    }

    /// The frame `ms` (Unix milliseconds) falls in: frames are consecutive
    /// slots of the clock, as a display's refreshes are.
    func frame(_ ms: Int64) -> Int64 {
        let length = Int64(max(1, frameMs))
        return ms >= 0 ? ms / length : -((-ms + length - 1) / length)
    }

    /// When frame `index` starts, in Unix milliseconds.
    func start(of index: Int64) -> Int64 { UnixTime.multiply(index, Int64(max(1, frameMs))) }
}

/// How an update stands against its app's rate (``UpdatePacing/admit(appID:now:)``).
public enum UpdatePace: Sendable, Equatable {
    /// Within the app's rate: the change is announced within a frame.
    case withinRate
    /// Past the app's rate: stored and acknowledged all the same, announced
    /// within ``UpdatePacingOptions/framesPastRate`` frames.
    case pastRate
}

/// When changes reach renderers, and how many one app may make
/// (docs/widgets.md#updates, docs/live-activities.md#updates).
///
/// - **Frames.** No renderer draws more than one change of an object per
///   frame, so each object is announced at most once per frame, frames
///   being consecutive slots of the clock (as a display's refreshes are):
///   the first change of an object not yet announced in the current frame
///   is announced at once; the next ones wait for the frame's end and are
///   announced once, at the start of the next frame, with every name that
///   changed (the announcement reads the values then: the latest). Held
///   announcements of every object fall due together, at frame starts, so
///   one timer serves them all; nothing is held while nothing changes, so
///   nothing needs a timer then (``nextDeadline(now:)`` is nil).
/// - **Rate.** Each app has a token bucket of ``UpdatePacingOptions/rate``
///   updates a second with room for ``UpdatePacingOptions/burst``. An update
///   that finds it empty is still stored and acknowledged, but its object
///   waits ``UpdatePacingOptions/framesPastRate`` frames between
///   announcements instead of one.
/// - **Ceiling.** A second bucket of ``UpdatePacingOptions/ceiling`` updates
///   a second (room for as many): an update that finds it empty is refused
///   with `LimitExceeded`, before anything of it is read or stored. The
///   refusal is answered ``UpdatePacingOptions/framesPastRate`` frames after
///   it came (``holdRefusal(of:now:)``): an app that sends again as soon as
///   it is answered is slowed to a few calls for each of those waits instead
///   of costing the host, and the bus, one answer per call as fast as both
///   can go. At most `ceiling` refusals of an app wait at once; past that
///   they are answered at once.
///
/// Plain bookkeeping on the dates it is given: the host stores and announces.
/// Every structure it keeps is bounded by the objects and apps that changed
/// within the last few frames or seconds.
public struct UpdatePacing<Object: Hashable & Sendable>: Sendable {
    public let options: UpdatePacingOptions
    /// Each app's two buckets, while either is not full.
    private var budgets: [String: Budget] = [:]
    /// The frame each object was last announced in, while that may still
    /// hold its next change back.
    private var announced: [Object: Int64] = [:]
    /// The names of each object held for its next announcement, in the order they first changed.
    private var held: [Object: [String]] = [:]
    /// One item per held object, for when it is due.
    private var due = DeadlineHeap<Object>()
    private var sequence: UInt64 = 0
    /// Refusals of each app waiting to be answered.
    private var heldRefusals: [String: Int] = [:]
    /// How many budgets and announcement dates were kept after the last sweep of each.
    private var budgetsSwept = 0
    private var announcedSwept = 0

    public init(options: UpdatePacingOptions = UpdatePacingOptions()) {
        self.options = options
    }

    // MARK: The budget

    /// Counts one update of `appID` at `now` against its rate and its ceiling.
    ///
    /// - Returns: whether it is within the app's rate.
    /// - Throws: `LimitExceeded`, giving the ceiling and the rate, when the app
    ///   is past its ceiling; the update is then not counted against its rate.
    public mutating func admit(appID: String, now: Date) throws(HostError) -> UpdatePace {
        var budget = budgets[appID] ?? Budget(options, now: now)
        defer {
            budgets[appID] = budget
            sweepBudgets(now: now)
        }
        guard budget.ceiling.take(now: now, capacity: options.ceiling, perSecond: options.ceiling) else {
            throw .limitExceeded(
                "\(Validate.prefix(appID)) sent more than \(options.ceiling) updates in a second, its ceiling (the limit max-update-rate), so this one was not stored; "
                    + "an app may send \(options.rate) updates a second (update-rate, in bursts of \(options.burst)), and renderers draw at most one change "
                    + "of a widget or Live Activity per frame (\(options.frameMs) ms): send only the latest, at most once a frame")
        }
        return budget.rate.take(now: now, capacity: options.burst, perSecond: options.rate) ? .withinRate : .pastRate
    }

    /// When to answer an update of `appID` refused at `now`: as many frames
    /// later as an object past its app's rate waits between announcements,
    /// or nil (now) when as many of its refusals as its ceiling wait already.
    /// Report each one answered with ``refusalAnswered(of:)``.
    public mutating func holdRefusal(of appID: String, now: Date) -> Date? {
        let held = heldRefusals[appID, default: 0]
        guard held < options.ceiling else { return nil }
        heldRefusals[appID] = held + 1
        return now.addingTimeInterval(Double(options.frameMs * UpdatePacingOptions.framesPastRate) / 1000)
    }

    /// A refusal ``holdRefusal(of:now:)`` held was answered.
    public mutating func refusalAnswered(of appID: String) {
        let held = heldRefusals[appID, default: 1] - 1
        heldRefusals[appID] = held > 0 ? held : nil
    }

    /// Forgets the buckets that are full again, once there are twice as many
    /// as after the last sweep: a full bucket is the same as none.
    private mutating func sweepBudgets(now: Date) {
        guard budgets.count >= max(64, 2 * budgetsSwept) else { return }
        budgets = budgets.filter { !$0.value.isFull(options, now: now) }
        budgetsSwept = budgets.count
    }

    // MARK: Frames

    /// `object` changed at `now` (its `names`), at `pace`.
    ///
    /// - Returns: true when the change is to be announced now, with `names`;
    ///   false when it is held, with what was held already, for
    ///   ``takeDue(now:)`` at the end of the frame it was announced in
    ///   (past the rate, of the tenth frame from it).
    public mutating func changed(_ object: Object, _ names: [String], pace: UpdatePace, now: Date) -> Bool {
        if var waiting = held[object] {
            for name in names where !waiting.contains(name) { waiting.append(name) }
            held[object] = waiting
            return false
        }
        let frame = options.frame(UnixTime.milliseconds(now))
        let frames = options.frames(pace)
        // Not announced in its last `frames` frames, or a clock set back before its last announcement.
        guard let last = announced[object], last <= frame, frame - last < frames else {
            announced[object] = frame
            sweepAnnounced(frame: frame)
            return true
        }
        held[object] = names
        sequence += 1
        due.push(.init(deadline: options.start(of: last + frames), sequence: sequence, key: object))
        return false
    }

    /// The held announcements due by `now`, each object once with every name
    /// that changed since its last one, in the order they were held. An item
    /// further ahead than the longest wait is due too: the clock was set back
    /// since it was held.
    public mutating func takeDue(now: Date) -> [(object: Object, names: [String])] {
        let nowMs = UnixTime.milliseconds(now), frame = options.frame(nowMs)
        let latest = nowMs + options.start(of: options.frames(.pastRate))
        var taken: [(object: Object, names: [String])] = []
        while let top = due.top, top.deadline <= nowMs || top.deadline > latest {
            due.pop()
            guard let names = held.removeValue(forKey: top.key) else { continue }
            announced[top.key] = frame
            taken.append((top.key, names))
        }
        sweepAnnounced(frame: frame)
        return taken
    }

    /// When ``takeDue(now:)`` next has something to announce (a frame's
    /// start); nil when nothing is held.
    public func nextDeadline(now: Date) -> Date? {
        guard let top = due.top else { return nil }
        return UnixTime.date(min(top.deadline, UnixTime.milliseconds(now) + options.start(of: options.frames(.pastRate))))
    }

    /// The objects with changes held.
    public var heldCount: Int { held.count }

    /// The apps and objects it keeps anything of (for tests).
    var kept: (budgets: Int, announced: Int, due: Int) { (budgets.count, announced.count, due.count) }

    /// Forgets the frames of announcements that can no longer hold a change
    /// back, once there are twice as many as after the last sweep.
    private mutating func sweepAnnounced(frame: Int64) {
        guard announced.count >= max(64, 2 * announcedSwept) else { return }
        let longest = options.frames(.pastRate), held = self.held
        announced = announced.filter { key, last in held[key] != nil || (last <= frame && frame - last < longest) }
        announcedSwept = announced.count
    }
}

/// An app's two buckets: its rate and its ceiling.
private struct Budget: Sendable {
    var rate: TokenBucket
    var ceiling: TokenBucket

    init(_ options: UpdatePacingOptions, now: Date) {
        rate = TokenBucket(tokens: Double(options.burst), at: now)
        ceiling = TokenBucket(tokens: Double(options.ceiling), at: now)
    }

    func isFull(_ options: UpdatePacingOptions, now: Date) -> Bool {
        rate.isFull(now: now, capacity: options.burst, perSecond: options.rate)
            && ceiling.isFull(now: now, capacity: options.ceiling, perSecond: options.ceiling)
    }
}

/// Tokens that come back at a steady rate up to a capacity; each update takes one.
struct TokenBucket: Sendable, Equatable {
    var tokens: Double
    /// When `tokens` was counted.
    var at: Date

    /// The tokens at `now`: none come back for a clock set back.
    func tokens(now: Date, capacity: Int, perSecond: Int) -> Double {
        min(Double(capacity), tokens + max(0, now.timeIntervalSince(at)) * Double(perSecond))
    }

    /// Takes a token at `now`; false when there is none.
    mutating func take(now: Date, capacity: Int, perSecond: Int) -> Bool {
        tokens = tokens(now: now, capacity: capacity, perSecond: perSecond)
        at = now
        // Dates are kept to a fraction of a microsecond: a token due now may count as 0.9999999.
        guard tokens >= 1 - 1e-6 else { return false }
        tokens = max(0, tokens - 1)
        return true
    }

    func isFull(now: Date, capacity: Int, perSecond: Int) -> Bool {
        tokens(now: now, capacity: capacity, perSecond: perSecond) >= Double(capacity)
    }
}
