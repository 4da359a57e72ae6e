import Testing
import WidgetHostCore

@Suite("Turn limiter")
struct TurnLimiterTests {
    @Test("At most the limit per key at once; the rest wait in order and start as others finish; keys do not hold each other up")
    func turns() {
        var limiter = TurnLimiter<String, Int>(limit: 2)
        let started = [limiter.admit(1, for: "a"), limiter.admit(2, for: "a"), limiter.admit(3, for: "a"), limiter.admit(4, for: "a")]
        #expect(started == [true, true, false, false])
        let other = limiter.admit(10, for: "b")
        #expect(other)
        #expect(limiter.underWay("a") == 2 && limiter.waitingCount("a") == 2)
        var next = limiter.finished("a")
        #expect(next == 3)
        #expect(limiter.underWay("a") == 2 && limiter.waitingCount("a") == 1)
        next = limiter.finished("a")
        #expect(next == 4)
        for left in [1, 0, 0] {
            // Finishing more than started never goes below nothing.
            next = limiter.finished("a")
            #expect(next == nil && limiter.underWay("a") == left)
        }
        let again = limiter.admit(5, for: "a")
        #expect(again && limiter.underWay("b") == 1)
    }
}
