import Testing
import WidgetHostCore

@Suite("Delivery gate")
struct DeliveryGateTests {
    @Test("At most the limit of deliveries wait for one app's answer; others' are not counted against it")
    func limit() {
        var gate = DeliveryGate(maxPendingPerApp: 2)
        let admitted = [gate.admit("a"), gate.admit("a")]
        #expect(admitted == [.send, .send])
        let third = gate.admit("a")
        guard case .refuse(let error) = third else {
            Issue.record("a third delivery was admitted: \(third)")
            return
        }
        #expect(error.name == .limitExceeded && error.message.contains("max-pending-deliveries-per-app"))
        let other = gate.admit("b")
        #expect(other == .send)
        let probe = gate.ended("a", timedOut: false)
        #expect(!probe && gate.waiting("a") == 1)
        let again = gate.admit("a")
        #expect(again == .send)
    }

    @Test("An app that leaves a delivery unanswered is probed once and gets nothing until it answers the probe")
    func silentApp() {
        var gate = DeliveryGate(maxPendingPerApp: 8)
        let admitted = [gate.admit("a"), gate.admit("a")]
        #expect(admitted == [.send, .send])
        let probes = [gate.ended("a", timedOut: true), gate.ended("a", timedOut: true)]
        #expect(probes == [true, false], "the first delivery left unanswered starts a probe, and only it")
        let refused = gate.admit("a")
        guard case .refuse(let error) = refused else {
            Issue.record("a delivery went to a silent app: \(refused)")
            return
        }
        #expect(error.name == .activationFailed && error.message.contains("unanswered"))
        let other = gate.admit("b")
        #expect(other == .send, "other apps are not held up")
        gate.probeAnswered("a", stillSilent: true)
        let asked = [gate.admit("a"), gate.admit("a")]
        #expect(asked == [.refuseAndProbe(error), .refuse(error)], "a silent app is probed again by the next delivery, once")
        gate.probeAnswered("a", stillSilent: false)
        let back = gate.admit("a")
        #expect(back == .send && gate.waiting("a") == 1)
    }
}
