import DBus
import Foundation
import Testing

/// Timers of a connection's loop: they fire on the connection's thread, once,
/// at the deadline last set, and not at all while disarmed or once removed.
@Suite("Connection timers", .timeLimit(.minutes(1)))
struct TimerTests {
    @Test("A timer fires once, on the connection's thread, no sooner than its delay; setting it again replaces the deadline")
    func firesOnce() async throws {
        try await withBus { bus in
            let connection = try await bus.connect()
            let fired = Box<[(onThread: Bool, at: ContinuousClock.Instant)]>([])
            let timer = connection.makeTimer { fired.update { $0.append((connection.isCurrentThread, .now)) } }
            defer { timer.invalidate() }
            let armed = ContinuousClock.now
            timer.fire(after: .milliseconds(400))
            // Set again, sooner: the earlier deadline is the one.
            timer.fire(after: .milliseconds(50))
            try await eventually(2, "the timer to fire") { !fired.get().isEmpty }
            try await Task.sleep(for: .milliseconds(600))
            let shots = fired.get()
            #expect(shots.count == 1, "fired \(shots.count) times")
            #expect(shots.first?.onThread == true)
            let after = shots.first.map { $0.at - armed } ?? .zero
            #expect(after >= .milliseconds(50) && after < .milliseconds(400), "fired \(after) after it was set")
            // Set later than before: the later deadline is the one.
            fired.set([])
            let again = ContinuousClock.now
            timer.fire(after: .milliseconds(30))
            timer.fire(after: .milliseconds(300))
            try await eventually(2, "the timer to fire again") { !fired.get().isEmpty }
            #expect(fired.get().first.map { $0.at - again } ?? .zero >= .milliseconds(300))
        }
    }

    @Test("A disarmed or invalidated timer does not fire; a delay of zero or less fires at the loop's next look")
    func disarmed() async throws {
        try await withBus { bus in
            let connection = try await bus.connect()
            let count = Counter()
            let timer = connection.makeTimer { count.increment() }
            timer.fire(after: .milliseconds(50))
            timer.disarm()
            let gone = connection.makeTimer { count.increment() }
            gone.fire(after: .milliseconds(50))
            gone.invalidate()
            try await Task.sleep(for: .milliseconds(300))
            #expect(count.count == 0)
            timer.fire(after: .milliseconds(-5))
            try await eventually(2, "a timer set in the past to fire") { count.count == 1 }
            timer.invalidate()
        }
    }
}
