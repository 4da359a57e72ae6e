import Foundation
import Testing
import WidgetHostCore

@Suite("A tap's deadline")
struct TapDeadlineTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)
    var nowMs: Int64 { 1_800_000_000_000 }

    @Test("Without a deadline, or with one past the delivery timeout, the delivery waits the whole timeout")
    func hostsTimeout() {
        #expect(TapDeadline.window(deadline: nil, now: now, timeout: .seconds(25)) == .deliver(milliseconds: 25_000, deadline: nowMs + 25_000, renderers: false))
        #expect(TapDeadline.window(deadline: nowMs + 30_000, now: now, timeout: .seconds(25)) == .deliver(milliseconds: 25_000, deadline: nowMs + 25_000, renderers: false))
        #expect(TapDeadline.window(deadline: nowMs + 25_000, now: now, timeout: .seconds(25)) == .deliver(milliseconds: 25_000, deadline: nowMs + 25_000, renderers: false))
        #expect(TapDeadline.window(deadline: .max, now: now, timeout: .milliseconds(1500)) == .deliver(milliseconds: 1500, deadline: nowMs + 1500, renderers: false))
    }

    @Test("A deadline sooner than the delivery timeout shortens the wait to it, and is the deadline the app is told")
    func renderersDeadline() {
        #expect(TapDeadline.window(deadline: nowMs + 2_000, now: now, timeout: .seconds(25)) == .deliver(milliseconds: 2_000, deadline: nowMs + 2_000, renderers: true))
        #expect(TapDeadline.window(deadline: nowMs + 1, now: now, timeout: .seconds(25)) == .deliver(milliseconds: 1, deadline: nowMs + 1, renderers: true))
    }

    @Test("A deadline that has come, or passed, delivers nothing and says how late the tap is")
    func passed() {
        #expect(TapDeadline.window(deadline: nowMs, now: now, timeout: .seconds(25)) == .passed(late: 0))
        #expect(TapDeadline.window(deadline: nowMs - 40_000, now: now, timeout: .seconds(25)) == .passed(late: 40_000))
        #expect(TapDeadline.window(deadline: 0, now: now, timeout: .seconds(25)) == .passed(late: nowMs))
    }
}
