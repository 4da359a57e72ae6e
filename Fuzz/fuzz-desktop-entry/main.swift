import FuzzSupport
@testable import WidgetHostCore

// A desktop entry (`.desktop` file) found in the XDG data directories: the
// key-file reader, the `[Desktop Entry]` group, and what the host makes of
// an app's entry (its X-WidgetHost-* keys as app options).

Fuzzer.run { input in
    guard let entry = try? DesktopEntry.parse(id: "org.example.Fuzz", path: "/fuzz/org.example.Fuzz.desktop", contents: input.text) else {
        return
    }
    for key in entry.keys.keys {
        _ = entry.string(key)
        _ = entry.stringList(key)
        _ = entry.bool(key)
    }
    _ = DesktopScan.isVisibleApplication(entry)
    _ = DesktopScan.schemes(of: entry)
    var warnings: [String] = []
    _ = DesktopScan.app(from: entry, warnings: &warnings)
}
