import FuzzSupport
import WidgetHostCore

// A caller's `/.flatpak-info`, which the sandboxed app can write to in part:
// the key-file reader and the app id the host takes as the caller's identity.

Fuzzer.run { input in
    guard let appID = try? CallerIdentity.flatpakAppID(input.text) else { return }
    Fuzzer.expect((try? Validate.appID(appID)) != nil, "the identity '\(appID)' is not an app id")
    Fuzzer.expect(CallerIdentity.flatpak(appID: appID).mayActFor(appID), "a Flatpak app may not act for itself")
}
