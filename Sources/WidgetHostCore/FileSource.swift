/// The files the model reads — desktop entries, `mimeapps.list` — as it needs
/// them. WidgetHostSystem's `LocalFiles` reads the disk.
public protocol FileSource: Sendable {
    /// The bytes of the file at `path`, or nil when it cannot be read.
    func contents(of path: String) -> [UInt8]?
    /// The names of what the directory at `path` holds; throws when it cannot be read.
    func names(in directory: String) throws -> [String]
    /// Whether `path`, symbolic links followed, is a directory; nil when
    /// nothing is there (a dangling link).
    func isDirectory(_ path: String) -> Bool?
    /// `path` with every symbolic link in it resolved: two paths to one
    /// directory resolve alike, so a walk notices a loop.
    func resolvingLinks(_ path: String) -> String
}
