import Foundation
import Testing
@testable import WidgetHostCore

/// Damage costs only what is damaged: a record per damaged line, never an
/// acknowledged record beside it, never an id minted twice.
@Suite("Damaged state files")
struct StateDamageTests {
    @Test("Every id a record names counts as minted, a removal's too; ids a scan found move the counters past them")
    func recordsNameIDs() {
        var state = DurableState()
        state.apply(.widgetRemoved(id: "w7"))
        state.apply(.activityRemoved(id: "a3"))
        #expect(state.nextWidgetNumber == 8 && state.nextActivityNumber == 4)
        var scan = MintedIDScan()
        scan.scan(Array(#""w5" "a9""#.utf8))
        #expect(state.reserve(scan) == ["a9"])
        #expect(state.nextWidgetNumber == 8 && state.nextActivityNumber == 10)
        #expect(state.reserve(scan).isEmpty)
    }

    @Test("Ids are found in any bytes, read in pieces; numbers no host mints are passed over")
    func mintedIDScan() {
        var scan = MintedIDScan()
        scan.scan(Array(#"{"id":"w7","x":"w12"}, "a3" "w9x" "#.utf8))
        scan.scan(Array(#""w1"#.utf8))
        scan.scan(Array(#"00" "a"#.utf8))
        #expect(scan.widget == 100 && scan.activity == 3)
        scan.scan(Array(#"4" "w99999999999999999999" "w\#(MintedIDScan.plausible + 1)" "a5" "#.utf8))
        #expect(scan.widget == 100 && scan.activity == 5)
        scan.scan(Array(#""w500"#.utf8))
        scan.end()
        scan.scan(Array(#"""#.utf8))
        #expect(scan.widget == 100, "an id is never read across two pieces of text")
        var store = WidgetStore()
        store.reserveNumbers(upTo: 56)
        #expect(store.nextWidgetNumber == 56)
        var activities = LiveActivityStore()
        activities.reserveNumbers(upTo: 6)
        #expect(activities.nextActivityNumber == 6)
    }
}
