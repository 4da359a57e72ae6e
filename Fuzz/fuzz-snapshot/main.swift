import FuzzSupport
@testable import WidgetHostCore

// The JSON of a state directory's snapshot (`state.json` after its header
// line): the hand reader, the general decoder behind it, and the model
// rebuilt from what they read. The header's checksum is left out: it would
// stop every input but the first at the first byte.

Fuzzer.run { input in
    let text = input.text
    _ = try? DurableState(jsonText: text)
    guard let state = try? StateDirectory.readState(text) else { return }
    Fuzzer.checkRead(state)
}
