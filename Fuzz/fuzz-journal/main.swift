import FuzzSupport
@testable import WidgetHostCore

// A state directory's journal: lines of a checksum, a space and a record's
// JSON, replayed onto an empty state as at start-up (a bad line costs that
// line), then the model rebuilt from it. Each line is also read with its
// checksum made right, so that the record's reader is reached.

Fuzzer.run { input in
    var state = DurableState()
    _ = StateFile.readJournal(Array(input.bytes), onto: &state)
    Fuzzer.checkRead(state)
    var fixed = DurableState()
    for line in input.text.split(separator: "\n", omittingEmptySubsequences: false).prefix(64) {
        let json = String(line)
        guard let record = StateFile.record(Array((StateFile.checksum(json) + " " + json).utf8)[...]) else { continue }
        // The line the host writes of a record it read reads back the same.
        let written = try? StateFile.line(record)
        Fuzzer.expect(written.flatMap { StateFile.record(Array($0.utf8).dropLast()) } == record, "a record read back does not read back the same")
        fixed.apply(record)
    }
    Fuzzer.checkRead(fixed)
}
