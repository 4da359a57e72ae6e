import Foundation
import Testing
@testable import WidgetHostCore
import WidgetHostSystem

/// Runs `body`, expecting it to throw a `HostError` named `name` whose message
/// contains every fragment. Records an issue otherwise.
func expectHostError<R>(
    _ name: HostError.Name,
    mentioning fragments: [String],
    sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () throws -> R
) {
    do {
        let result = try body()
        Issue.record("expected \(name.rawValue), but the call returned \(result)", sourceLocation: sourceLocation)
    } catch {
        guard let error = error as? HostError else {
            Issue.record("expected HostError \(name.rawValue), got \(error)", sourceLocation: sourceLocation)
            return
        }
        #expect(error.name == name, "message: \(error.message)", sourceLocation: sourceLocation)
        for fragment in fragments {
            #expect(error.message.contains(fragment), "message \"\(error.message)\" should mention \"\(fragment)\"", sourceLocation: sourceLocation)
        }
    }
}

/// A temporary directory tree, deleted when released.
final class TempTree {
    let root: String

    init() throws {
        let base = FileManager.default.temporaryDirectory.path
        root = base + "/widgethost-core-tests-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
    }

    deinit {
        try? FileManager.default.removeItem(atPath: root)
    }

    /// The absolute path of `relative`.
    func path(_ relative: String) -> String { root + "/" + relative }

    /// Writes `contents` to `relative`, creating parent directories.
    @discardableResult
    func write(_ relative: String, _ contents: String) throws -> String {
        try writeData(relative, Data(contents.utf8))
    }

    @discardableResult
    func writeData(_ relative: String, _ data: Data) throws -> String {
        let full = path(relative)
        let parent = (full as NSString).deletingLastPathComponent
        try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
        guard FileManager.default.createFile(atPath: full, contents: data) else {
            throw CocoaError(.fileWriteUnknown)
        }
        return full
    }

    func mkdir(_ relative: String) throws {
        try FileManager.default.createDirectory(atPath: path(relative), withIntermediateDirectories: true)
    }

    /// Creates a symbolic link at `relative` pointing to `destination` (absolute).
    func symlink(_ relative: String, to destination: String) throws {
        let full = path(relative)
        let parent = (full as NSString).deletingLastPathComponent
        try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: full, withDestinationPath: destination)
    }

    /// XDG directories inside the tree: data home `home/share`, data dirs
    /// `sys1/share` and `sys2/share`, config home `home/config`, config dir `etc/xdg`.
    func xdg(desktops: [String] = []) -> XDGDirectories {
        XDGDirectories(
            dataHome: path("home/share"),
            dataDirs: [path("sys1/share"), path("sys2/share")],
            configHome: path("home/config"),
            configDirs: [path("etc/xdg")],
            currentDesktops: desktops
        )
    }
}

/// A minimal D-Bus-activatable desktop entry.
func activatableEntry(name: String, extra: String = "") -> String {
    """
    [Desktop Entry]
    Type=Application
    Name=\(name)
    Exec=/usr/bin/true
    DBusActivatable=true
    \(extra)
    """
}

extension StateDirectory {
    /// Appends records as the journal writer does: encoded, then one sync.
    func append(_ records: [StateRecord]) throws {
        try append(lines: records.map(StateFile.line))
    }

    func append(_ record: StateRecord) throws { try append([record]) }
}
