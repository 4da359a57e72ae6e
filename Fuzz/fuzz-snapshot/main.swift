import FuzzSupport
@testable import WidgetHostCore

// A state directory's snapshot (`state.json`): its header, then a record a
// line, each read on its own (or, for a version 1 snapshot, its JSON whole),
// and the model rebuilt from what was read.

Fuzzer.run { input in
    let (state, _) = StateFile.readSnapshot(Array(input.bytes))
    Fuzzer.checkRead(state)
}
