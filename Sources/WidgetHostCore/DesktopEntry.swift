/// The `[Desktop Entry]` group of one `.desktop` file (freedesktop Desktop Entry spec).
public struct DesktopEntry: Sendable, Equatable {
    /// The desktop-file ID without `.desktop`; for a file in a subdirectory of an
    /// `applications` directory, the subdirectory separators become `-`
    /// (`vendor/app.desktop` → `vendor-app`).
    public var id: String
    /// The file it was read from.
    public var path: String
    /// The unlocalized `Name`, unescaped.
    public var name: String?
    /// `Hidden=true`: the entry is deleted, and masks entries of the same ID in
    /// less important directories.
    public var hidden: Bool
    /// `NoDisplay=true`: not shown in menus (still an app).
    public var noDisplay: Bool
    /// `DBusActivatable=true`: the app is started by D-Bus activation of its ID.
    public var dbusActivatable: Bool
    /// The `MimeType` list.
    public var mimeTypes: [String]
    /// Every unlocalized key of the group with its raw (still escaped) value.
    public var keys: [String: String]

    /// Creates an entry with every field given.
    public init(
        id: String,
        path: String,
        name: String? = nil,
        hidden: Bool = false,
        noDisplay: Bool = false,
        dbusActivatable: Bool = false,
        mimeTypes: [String] = [],
        keys: [String: String] = [:]
    ) {
        self.id = id
        self.path = path
        self.name = name
        self.hidden = hidden
        self.noDisplay = noDisplay
        self.dbusActivatable = dbusActivatable
        self.mimeTypes = mimeTypes
        self.keys = keys
    }

    /// Parses the contents of a desktop file.
    ///
    /// Comments, blank lines, other groups and localized keys (`Name[fr]`) are
    /// ignored; a repeated key keeps its last value. Booleans are `true`/`false`
    /// (`1`/`0` accepted too). Throws `InvalidContent` when there is no
    /// `[Desktop Entry]` group, or when a line of that group (or a line before
    /// any group) is not `Key=Value`.
    public static func parse(id: String, path: String, contents: String) throws(HostError) -> DesktopEntry {
        let file = KeyFile(parsing: contents)
        if let problem = file.problems.first(where: { $0.group == nil || $0.group == groupName }) {
            let where_ = problem.group == nil ? "before the [Desktop Entry] group" : "in the [Desktop Entry] group"
            throw .invalidContent("\(path): line \(problem.line) '\(problem.text)' \(where_) is not a 'Key=Value' line; fix or remove it (comments start with '#')")
        }
        guard let group = file.groups[groupName] else {
            throw .invalidContent("\(path) has no [Desktop Entry] group; a desktop file must start with '[Desktop Entry]'")
        }
        let keys = group.filter { !$0.key.contains("[") }
        return DesktopEntry(
            id: id,
            path: path,
            name: keys["Name"].map { KeyFile.unescape($0) },
            hidden: bool(keys["Hidden"]),
            noDisplay: bool(keys["NoDisplay"]),
            dbusActivatable: bool(keys["DBusActivatable"]),
            mimeTypes: keys["MimeType"].map { KeyFile.splitList($0) } ?? [],
            keys: keys
        )
    }

    /// The unescaped value of `key`, or `nil` when absent.
    public func string(_ key: String) -> String? {
        keys[key].map { KeyFile.unescape($0) }
    }

    /// The string list of `key` (split on unescaped `;`, unescaped, empty items
    /// dropped), or `nil` when absent. A present key with an empty value is `[]`.
    public func stringList(_ key: String) -> [String]? {
        keys[key].map { KeyFile.splitList($0) }
    }

    /// The boolean value of `key` (`true`/`1`), `false` when absent or anything else.
    public func bool(_ key: String) -> Bool {
        Self.bool(keys[key])
    }

    /// The group name of a desktop entry.
    public static let groupName = "Desktop Entry"

    static func bool(_ raw: String?) -> Bool {
        guard let raw else { return false }
        let v = raw.reversed().drop { $0 == " " || $0 == "\t" }.reversed()
        return String(v) == "true" || String(v) == "1"
    }
}
