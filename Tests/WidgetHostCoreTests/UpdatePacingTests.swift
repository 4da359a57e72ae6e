import Foundation
import Testing
@testable import WidgetHostCore

/// Frames, the per-app rate and the ceiling (docs/widgets.md#updates), on a clock that moves only when told.
@Suite("Update pacing")
struct UpdatePacingTests {
    static let options = UpdatePacingOptions(frameMs: 16, rate: 10, burst: 3, ceiling: 20)

    /// A pacing and its clock, with one change counted and marked.
    final class Paced {
        var pacing = UpdatePacing<String>(options: UpdatePacingTests.options)
        let clock = TestWallClock()

        func change(_ object: String, _ names: [String] = ["Content"], pace: UpdatePace = .withinRate) -> Bool {
            pacing.changed(object, names, pace: pace, now: clock.now())
        }

        func due() -> [String] {
            pacing.takeDue(now: clock.now()).map { "\($0.object):\($0.names.joined(separator: ","))" }
        }

        /// Milliseconds from now to the next deadline; nil when nothing is held.
        var untilNext: Int? {
            pacing.nextDeadline(now: clock.now()).map { Int(($0.timeIntervalSince(clock.now()) * 1000).rounded()) }
        }

        func advance(ms: Double) { clock.advance(by: ms / 1000) }
    }

    @Test("A quiet object's first change is announced at once; the next within the frame waits for the frame's end")
    func firstAtOnce() {
        let p = Paced()
        #expect(p.untilNext == nil, "nothing held: no timer")
        #expect(p.change("w"), "quiet: announced at once")
        #expect(p.untilNext == nil, "nothing held after an announcement made at once")
        p.advance(ms: 5)
        #expect(!p.change("w"), "within the frame: held")
        #expect(p.untilNext == 11, "held until the frame's end, 16 ms after the announcement")
        p.advance(ms: 10)
        #expect(p.due().isEmpty, "not due before the frame's end")
        p.advance(ms: 1)
        #expect(p.due() == ["w:Content"])
        #expect(p.untilNext == nil && p.pacing.heldCount == 0)
    }

    @Test("Changes within a frame are announced once, with every name that changed, in the order they first changed")
    func coalesced() {
        let p = Paced()
        #expect(p.change("a", ["Content"]))
        p.advance(ms: 2)
        #expect(!p.change("a", ["State", "Content"]))
        p.advance(ms: 2)
        #expect(!p.change("a", ["Relevance"]))
        #expect(!p.change("a", ["Content"]))
        p.advance(ms: 12)
        #expect(p.due() == ["a:State,Content,Relevance"], "one announcement for three changes")
    }

    @Test("A steady stream is announced once a frame; a frame of quiet makes the next change immediate again")
    func steadyStream() {
        let p = Paced()
        var announced = 0
        // 1000 changes a second for a second: one at once, then one per frame.
        for _ in 0..<1000 {
            if p.change("w") { announced += 1 }
            p.advance(ms: 1)
            announced += p.due().count
        }
        #expect(announced == 1 + 999 / 16, "one announcement per 16 ms frame")
        p.advance(ms: 16)
        announced += p.due().count
        #expect(p.untilNext == nil, "the last change was announced: nothing held")
        p.advance(ms: 16)
        #expect(p.change("w"), "quiet for a frame: at once")
    }

    @Test("Frames are slots of the clock: objects are held apart, and their held changes fall due together at a frame's start")
    func framesAreSlots() {
        let p = Paced()
        // The test clock starts on a frame's start (1 700 000 000 000 ms is 16 × 106 250 000 000).
        #expect(p.change("a"))
        p.advance(ms: 8)
        #expect(p.change("b"), "another object's change is not held by a's announcement")
        #expect(!p.change("a"))
        #expect(!p.change("b"))
        #expect(p.untilNext == 8, "both held to the end of the frame, 16 ms from its start")
        p.advance(ms: 8)
        #expect(p.due() == ["a:Content", "b:Content"], "one timer for both")
        #expect(p.untilNext == nil)
        // Announced late in a frame, a widget's next change in the next frame is announced at once.
        p.advance(ms: 15)
        #expect(!p.change("a"), "announced at the start of this frame: held to its end")
        p.advance(ms: 1)
        #expect(p.due() == ["a:Content"])
        p.advance(ms: 15)
        #expect(p.change("b"), "b was last announced a frame ago")
        p.advance(ms: 2)
        #expect(p.change("b"), "a new frame: at once, 2 ms after the last")
        #expect(!p.change("b"))
    }

    @Test("An app within its rate has its burst, then the rate: tokens come back at the rate")
    func rate() throws {
        let p = Paced()
        let burst = try (0..<3).map { _ in try p.pacing.admit(appID: "app", now: p.clock.now()) }
        #expect(burst == [.withinRate, .withinRate, .withinRate])
        #expect(try p.pacing.admit(appID: "app", now: p.clock.now()) == .pastRate, "burst spent")
        #expect(try p.pacing.admit(appID: "other", now: p.clock.now()) == .withinRate, "another app has a budget of its own")
        p.advance(ms: 99)
        #expect(try p.pacing.admit(appID: "app", now: p.clock.now()) == .pastRate, "10 a second: a token takes 100 ms")
        p.advance(ms: 100)
        #expect(try p.pacing.admit(appID: "app", now: p.clock.now()) == .withinRate)
        #expect(try p.pacing.admit(appID: "app", now: p.clock.now()) == .pastRate)
        p.advance(ms: 10_000)
        let refilled = try (0..<4).map { _ in try p.pacing.admit(appID: "app", now: p.clock.now()) }
        #expect(refilled == [.withinRate, .withinRate, .withinRate, .pastRate], "a bucket fills up to the burst, no further")
    }

    @Test("Past its rate an object is announced every ten frames, still the latest; back within it, every frame")
    func pastRate() {
        let p = Paced()
        #expect(p.change("w", pace: .pastRate), "a quiet object is announced at once even past the rate")
        p.advance(ms: 20)
        #expect(!p.change("w", pace: .pastRate), "past the rate, a frame of quiet is not enough")
        #expect(p.untilNext == 140, "ten frames after the last announcement")
        p.advance(ms: 100)
        #expect(!p.change("w", ["State"], pace: .pastRate))
        p.advance(ms: 40)
        #expect(p.due() == ["w:Content,State"])
        p.advance(ms: 20)
        #expect(p.change("w"), "within the rate again: a frame of quiet is enough")
    }

    @Test("Past its ceiling an update is refused, naming the ceiling and the rate, and costs the rate nothing")
    func ceiling() throws {
        let p = Paced()
        var paces: [UpdatePace] = []
        for _ in 0..<20 { paces.append(try p.pacing.admit(appID: "org.example.Flood", now: p.clock.now())) }
        #expect(paces.filter { $0 == .withinRate }.count == 3, "the burst, then past the rate but stored")
        expectHostError(.limitExceeded, mentioning: ["org.example.Flood", "20 updates in a second", "max-update-rate", "10 updates a second", "update-rate", "bursts of 3", "16 ms"]) {
            try p.pacing.admit(appID: "org.example.Flood", now: p.clock.now())
        }
        #expect(try p.pacing.admit(appID: "org.example.Other", now: p.clock.now()) == .withinRate, "other apps are not refused")
        p.advance(ms: 50)
        #expect(try p.pacing.admit(appID: "org.example.Flood", now: p.clock.now()) == .pastRate, "20 a second: one back after 50 ms")
        expectHostError(.limitExceeded, mentioning: ["max-update-rate"]) { try p.pacing.admit(appID: "org.example.Flood", now: p.clock.now()) }
        // Refusals take nothing from the rate: with a ceiling below the burst, the rate's tokens outlast them.
        var q = UpdatePacing<String>(options: UpdatePacingOptions(frameMs: 16, rate: 1, burst: 5, ceiling: 3))
        let now = p.clock.now()
        let first = try (0..<3).map { _ in try q.admit(appID: "app", now: now) }
        #expect(first == [.withinRate, .withinRate, .withinRate])
        for _ in 0..<10 { #expect(throws: HostError.self) { try q.admit(appID: "app", now: now) } }
        let later = now.addingTimeInterval(1)
        let next = try (0..<3).map { _ in try q.admit(appID: "app", now: later) }
        #expect(next == [.withinRate, .withinRate, .withinRate], "2 tokens left and 1 back: the refusals took none")
    }

    @Test("A refusal is answered ten frames after it came; past the ceiling's worth waiting, at once")
    func refusalsWait() {
        let p = Paced()
        let now = p.clock.now()
        var answers: [Date?] = []
        for _ in 0..<21 { answers.append(p.pacing.holdRefusal(of: "flood", now: now)) }
        #expect(answers.prefix(20).allSatisfy { $0 == now.addingTimeInterval(0.16) }, "ten frames later")
        #expect(answers.last == .some(nil), "a ceiling's worth (20) wait already: answered at once")
        #expect(p.pacing.holdRefusal(of: "other", now: now) != nil, "other apps' refusals wait on their own count")
        p.pacing.refusalAnswered(of: "flood")
        #expect(p.pacing.holdRefusal(of: "flood", now: now) != nil, "one answered makes room for one")
        for _ in 0..<30 { p.pacing.refusalAnswered(of: "flood") }
        let again = (0..<21).map { _ in p.pacing.holdRefusal(of: "flood", now: now) }
        #expect(!again.prefix(20).contains(nil) && again.last == .some(nil), "answering more than held never leaves fewer than none")
    }

    @Test("A clock set back neither holds a change for long nor refills a bucket")
    func clockSetBack() throws {
        let p = Paced()
        #expect(p.change("w") && p.change("x"))
        p.advance(ms: 5)
        #expect(!p.change("w"))
        p.advance(ms: -3_600_000)
        #expect(p.untilNext.map { $0 <= 160 } == true, "held at most the longest interval from the new now")
        #expect(p.due() == ["w:Content"], "an item an hour ahead is due")
        #expect(p.change("x"), "last announced an hour ahead of the clock: quiet")
        for _ in 0..<3 { _ = try p.pacing.admit(appID: "app", now: p.clock.now()) }
        p.advance(ms: -10_000)
        #expect(try p.pacing.admit(appID: "app", now: p.clock.now()) == .pastRate, "going back in time gives no tokens")
    }

    @Test("What is kept is bounded by the apps and objects active within the last few frames and seconds")
    func bounded() throws {
        let p = Paced()
        for n in 0..<1000 {
            _ = try p.pacing.admit(appID: "app\(n)", now: p.clock.now())
            _ = p.change("w\(n)")
            p.advance(ms: 1)
        }
        #expect(p.pacing.kept.budgets < 1000 && p.pacing.kept.announced < 1000, "\(p.pacing.kept)")
        // Ten seconds on, those are all quiet and full: the sweep a thousand new ones bring forgets every one of them.
        p.advance(ms: 10_000)
        for n in 0..<1000 {
            _ = try p.pacing.admit(appID: "new\(n)", now: p.clock.now())
            _ = p.change("new\(n)")
        }
        #expect(p.pacing.kept.budgets == 1000 && p.pacing.kept.announced == 1000, "\(p.pacing.kept)")
        _ = p.change("new0")
        #expect(p.pacing.kept.due == p.pacing.heldCount, "one deadline per held object")
    }
}
