import FuzzSupport
@testable import WidgetHostCore

// A caller's `/proc/<pid>/cgroup` lines, which name a Snap's scope: the snap
// name the host takes as the caller's identity.

Fuzzer.run { input in
    guard let name = try? CallerIdentity.snapName(cgroupFile: input.text) else { return }
    Fuzzer.expect(CallerIdentity.isSnapName(Substring(name)), "the identity '\(name)' is not a snap name")
}
