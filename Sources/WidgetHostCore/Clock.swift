#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Synchronization

/// The wall clock the model reads, injectable so that timers can be tested.
public protocol WallClock: Sendable {
    /// The current date.
    func now() -> Date
}

/// The real clock.
public struct SystemWallClock: WallClock {
    public init() {}
    public func now() -> Date { Date() }
}

/// A clock that only moves when told to. Thread-safe.
public final class TestWallClock: WallClock {
    private let current: Mutex<Date>

    /// Starts at `start` (default 2023-11-14T22:13:20Z, Unix time 1 700 000 000).
    public init(_ start: Date = Date(timeIntervalSince1970: 1_700_000_000)) {
        current = Mutex(start)
    }

    public func now() -> Date { current.withLock { $0 } }

    /// Moves the clock forward by `seconds` (backward when negative).
    public func advance(by seconds: TimeInterval) {
        current.withLock { $0 = $0.addingTimeInterval(seconds) }
    }

    /// Sets the clock to `date`.
    public func set(_ date: Date) {
        current.withLock { $0 = date }
    }
}
