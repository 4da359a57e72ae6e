import Foundation
import Testing
import WidgetHostCore

@Suite("A tap's deadline")
struct TapDeadlineTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)
    var nowMs: Int64 { 1_800_000_000_000 }

    @Test("Without a deadline, or with one past the delivery timeout, the delivery waits the whole timeout")
    func hostsTimeout() {
        #expect(TapDeadline.wait(nil, now: now, timeout: 25) == .init(milliseconds: 25_000, deadline: nowMs + 25_000, renderers: false))
        #expect(TapDeadline.wait(nowMs + 30_000, now: now, timeout: 25) == .init(milliseconds: 25_000, deadline: nowMs + 25_000, renderers: false))
        #expect(TapDeadline.wait(nowMs + 25_000, now: now, timeout: 25) == .init(milliseconds: 25_000, deadline: nowMs + 25_000, renderers: false))
        #expect(TapDeadline.wait(.max, now: now, timeout: 1.5) == .init(milliseconds: 1500, deadline: nowMs + 1500, renderers: false))
        #expect(TapDeadline.late(nil, now: now) == nil && TapDeadline.late(nowMs + 30_000, now: now) == nil)
    }

    @Test("A deadline sooner than the delivery timeout shortens the wait to it, and is the deadline the app is told")
    func renderersDeadline() {
        #expect(TapDeadline.wait(nowMs + 2_000, now: now, timeout: 25) == .init(milliseconds: 2_000, deadline: nowMs + 2_000, renderers: true))
        #expect(TapDeadline.wait(nowMs + 1, now: now, timeout: 25) == .init(milliseconds: 1, deadline: nowMs + 1, renderers: true))
        #expect(TapDeadline.late(nowMs + 1, now: now) == nil)
    }

    @Test("A deadline that has come, or passed, delivers nothing and says how late the tap is")
    func passed() {
        #expect(TapDeadline.late(nowMs, now: now) == 0)
        #expect(TapDeadline.late(nowMs - 40_000, now: now) == 40_000)
        #expect(TapDeadline.late(0, now: now) == nowMs)
    }
}
