/// The XDG Base Directory locations that desktop-entry discovery and
/// `mimeapps.list` lookup use.
public struct XDGDirectories: Sendable, Equatable {
    /// `$XDG_DATA_HOME`, default `$HOME/.local/share`.
    public var dataHome: String
    /// `$XDG_DATA_DIRS`, most important first; default `/usr/local/share`, `/usr/share`.
    public var dataDirs: [String]
    /// `$XDG_CONFIG_HOME`, default `$HOME/.config`.
    public var configHome: String
    /// `$XDG_CONFIG_DIRS`, most important first; default `/etc/xdg`.
    public var configDirs: [String]
    /// The desktop names of `$XDG_CURRENT_DESKTOP` (colon-separated), lowercased,
    /// in order — used for `<desktop>-mimeapps.list`.
    public var currentDesktops: [String]

    /// Creates a set of directories. Trailing slashes are removed from every path.
    public init(dataHome: String, dataDirs: [String], configHome: String, configDirs: [String], currentDesktops: [String] = []) {
        self.dataHome = Self.trimmed(dataHome)
        self.dataDirs = dataDirs.map(Self.trimmed)
        self.configHome = Self.trimmed(configHome)
        self.configDirs = configDirs.map(Self.trimmed)
        self.currentDesktops = currentDesktops
    }

    /// Reads the directories from an environment, applying the spec's defaults.
    ///
    /// An unset or empty variable means its default. Relative paths are invalid
    /// per the spec and are ignored (a list left with none means the default).
    /// A missing `HOME` is taken as `/`.
    public static func fromEnvironment(_ env: [String: String]) -> XDGDirectories {
        let home = nonEmpty(env["HOME"]).map(trimmed) ?? ""
        func single(_ name: String, default suffix: String) -> String {
            if let value = nonEmpty(env[name]), value.hasPrefix("/") { return value }
            return home + suffix
        }
        func list(_ name: String, default defaults: [String]) -> [String] {
            let values = (env[name] ?? "").split(separator: ":").map(String.init).filter { $0.hasPrefix("/") }
            return values.isEmpty ? defaults : values
        }
        let desktops = (env["XDG_CURRENT_DESKTOP"] ?? "")
            .split(separator: ":")
            .map { $0.lowercased() }
        return XDGDirectories(
            dataHome: single("XDG_DATA_HOME", default: "/.local/share"),
            dataDirs: list("XDG_DATA_DIRS", default: ["/usr/local/share", "/usr/share"]),
            configHome: single("XDG_CONFIG_HOME", default: "/.config"),
            configDirs: list("XDG_CONFIG_DIRS", default: ["/etc/xdg"]),
            currentDesktops: desktops
        )
    }

    /// Where desktop entries live: `dataHome/applications` first, then each
    /// `dataDir/applications`, duplicates removed.
    public var applicationDirectories: [String] {
        Self.unique(([dataHome] + dataDirs).map { Self.join($0, "applications") })
    }

    // MARK: - Helpers

    static func nonEmpty(_ s: String?) -> String? {
        guard let s, !s.isEmpty else { return nil }
        return s
    }

    static func trimmed(_ path: String) -> String {
        var p = Substring(path)
        while p.count > 1 && p.hasSuffix("/") { p = p.dropLast() }
        return String(p)
    }

    static func join(_ dir: String, _ name: String) -> String {
        dir.hasSuffix("/") ? dir + name : dir + "/" + name
    }

    static func unique(_ items: [String]) -> [String] {
        var seen = Set<String>()
        return items.filter { seen.insert($0).inserted }
    }
}
