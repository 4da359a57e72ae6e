import FuzzSupport
@testable import WidgetHostCore

// A state directory's journal: lines of a checksum, a space and a record's
// JSON, replayed onto an empty state, and the model rebuilt from it. Each
// line is read as it stands (the checksum), then with its checksum made
// right so that the record's reader is reached.

Fuzzer.run { input in
    var state = DurableState()
    for line in input.text.split(separator: "\n", omittingEmptySubsequences: false).prefix(64) {
        _ = StateDirectory.decode(line)
        let json = String(line)
        guard let record = StateDirectory.decode(Substring(StateDirectory.checksum(json) + " " + json)) else { continue }
        // The line the host writes of a record it read reads back the same.
        let written = try? StateDirectory.line(record)
        Fuzzer.expect(written.flatMap { StateDirectory.decode($0.dropLast()) } == record, "a record read back does not read back the same")
        state.apply(record)
    }
    Fuzzer.checkRead(state)
}
