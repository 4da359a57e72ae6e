import Testing
import WidgetHostCore

/// The contract of the order of each sender's calls, on an executor the test
/// runs by hand: a job is a sender whose next turn is due.
@Suite("Sender lines")
struct SenderLinesTests {
    final class Executor {
        var jobs: [String] = []
        var ran: [String] = []
        lazy var lines = SenderLines<String, Int> { [unowned self] sender in self.jobs.append(sender) }

        /// A call that records `name` when it runs.
        func call(_ name: String) -> () -> Void { { [unowned self] in self.ran.append(name) } }

        /// Runs the jobs queued, in order, until none is left.
        func runJobs() {
            while !jobs.isEmpty { lines.turn(of: jobs.removeFirst()) }
        }
    }

    @Test("Calls of one sender run in order: at once when nothing waits, else behind what waits")
    func inOrder() {
        let e = Executor()
        e.lines.inOrder("a", e.call("a1"))
        #expect(e.ran == ["a1"] && e.jobs.isEmpty && e.lines.isIdle("a"))
        e.lines.inTurn("a", e.call("a2"))
        e.lines.inOrder("a", e.call("a3"))
        e.lines.inTurn("a", e.call("a4"))
        #expect(e.ran == ["a1"], "a call behind a turn waits for it")
        e.runJobs()
        #expect(e.ran == ["a1", "a2", "a3", "a4"])
        #expect(e.lines.isIdle("a"))
    }

    @Test("A burst of one sender is one call per job: other senders' calls run between its turns, never behind it")
    func turnsInterleave() {
        let e = Executor()
        for n in 1...3 { e.lines.inTurn("a", e.call("a\(n)")) }
        #expect(e.jobs == ["a"], "one job at a time per sender")
        e.lines.inOrder("b", e.call("b1"))
        #expect(e.ran == ["b1"], "another sender's call runs at once")
        e.lines.inTurn("b", e.call("b2"))
        e.lines.turn(of: e.jobs.removeFirst())
        #expect(e.ran == ["b1", "a1"])
        #expect(e.jobs == ["b", "a"], "the next turn of a is queued behind b's")
        e.runJobs()
        #expect(e.ran == ["b1", "a1", "b2", "a2", "a3"])
        #expect(e.lines.isIdle("a") && e.lines.isIdle("b"))
    }

    @Test("A held sender's later calls wait until it lets go, then run in order until one holds again; others go on")
    func holds() {
        let e = Executor()
        let lines = e.lines
        lines.inOrder("a") {
            e.ran.append("a1")
            lines.hold("a")
        }
        lines.inOrder("a", e.call("a2"))
        lines.inTurn("a") {
            e.ran.append("a3")
            lines.hold("a")
        }
        lines.inOrder("a", e.call("a4"))
        lines.inOrder("b", e.call("b1"))
        lines.inTurn("b", e.call("b2"))
        e.runJobs()
        #expect(e.ran == ["a1", "b1", "b2"], "nothing of a runs while it is held; b is not held up")
        lines.release("a")
        #expect(e.ran == ["a1", "b1", "b2", "a2", "a3"], "the waiting calls run until one holds again")
        #expect(!lines.isIdle("a"))
        lines.inOrder("a", e.call("a5"))
        lines.release("a")
        #expect(e.ran == ["a1", "b1", "b2", "a2", "a3", "a4", "a5"])
        #expect(lines.isIdle("a") && e.jobs.isEmpty)
        lines.release("a")
        #expect(lines.isIdle("a"), "letting go more than held changes nothing")
    }

    @Test("A turn due while its sender is held leaves the waiting calls to the release")
    func turnWhileHeld() {
        let e = Executor()
        e.lines.inTurn("a", e.call("a1"))
        e.lines.hold("a")
        e.runJobs()
        #expect(e.ran.isEmpty)
        e.lines.release("a")
        #expect(e.ran == ["a1"] && e.lines.isIdle("a"))
    }

    @Test("Two holds of one sender: its calls wait until both let go")
    func nestedHolds() {
        let e = Executor()
        e.lines.hold("a")
        e.lines.hold("a")
        e.lines.inOrder("a", e.call("a1"))
        e.lines.release("a")
        #expect(e.ran.isEmpty)
        e.lines.release("a")
        #expect(e.ran == ["a1"])
    }

    @Test("A sender that leaves is forgotten in one place: what is known of it, and what a hold under way learns")
    func forget() {
        let e = Executor()
        let lines = e.lines
        lines.remember(7, for: "a")
        lines.remember(8, for: "b")
        #expect(lines.known("a") == 7)
        lines.forget("a")
        #expect(lines.known("a") == nil && lines.known("b") == 8, "only the sender that left is forgotten")

        lines.hold("c")
        lines.inOrder("c", e.call("c1"))
        lines.forget("c")
        #expect(lines.hasLeft("c"))
        lines.remember(9, for: "c")
        #expect(lines.known("c") == nil, "a hold under way when its sender left keeps nothing")
        lines.release("c")
        #expect(e.ran == ["c1"], "its calls sent before it left still run, in order")
        #expect(!lines.hasLeft("c") && lines.isIdle("c"), "once its holds are over, nothing of it is left")
    }
}
