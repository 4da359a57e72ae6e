#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import WidgetHostCore

/// The files of this machine's disk, for the model (``FileSource``).
public struct LocalFiles: FileSource {
    public init() {}

    public func contents(of path: String) -> [UInt8]? {
        FileManager.default.contents(atPath: path).map { [UInt8]($0) }
    }

    public func names(in directory: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory)
    }

    public func isDirectory(_ path: String) -> Bool? {
        #if canImport(FoundationEssentials)
        var isDir = false
        #else
        var isDir: ObjCBool = false
        #endif
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDir) else { return nil }
        #if canImport(FoundationEssentials)
        return isDir
        #else
        return isDir.boolValue
        #endif
    }

    public func resolvingLinks(_ path: String) -> String {
        URL(fileURLWithPath: path).resolvingSymlinksInPath().path
    }
}

extension DesktopScan {
    /// Scans the desktop entries on disk; see ``DesktopScan/scan(_:files:)``.
    /// Blocking file I/O: call it off the bus thread.
    public static func scan(_ dirs: XDGDirectories) -> DesktopScan {
        scan(dirs, files: LocalFiles())
    }
}

extension MimeApps {
    /// The default handlers the `mimeapps.list` files on disk name; see
    /// ``MimeApps/defaultHandlers(forScheme:dirs:files:)``. Blocking file I/O.
    public static func defaultHandlers(forScheme scheme: String, dirs: XDGDirectories) -> [String] {
        defaultHandlers(forScheme: scheme, dirs: dirs, files: LocalFiles())
    }
}
