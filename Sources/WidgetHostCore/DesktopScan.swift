/// An app found through its desktop entry (docs/apps.md#desktop-entries).
public struct DiscoveredApp: Sendable, Equatable {
    /// The entry it came from; `entry.id` is the app id.
    public var entry: DesktopEntry
    /// Its options: protocol `freedesktop`; schemes from `MimeType=x-scheme-handler/<scheme>`;
    /// `X-WidgetHost-Surfaces`, `X-WidgetHost-LiveActivityLaunchTypes`,
    /// `X-WidgetHost-UserActivityAction` and `X-WidgetHost-ProviderPath` mirror the
    /// `RegisterApp` options (a list key present with an empty value is the empty
    /// list; an absent `X-WidgetHost-LiveActivityLaunchTypes` is `nil`).
    public var options: AppOptions

    /// The app id (the entry's desktop-file ID).
    public var id: String { entry.id }

    public init(entry: DesktopEntry, options: AppOptions) {
        self.entry = entry
        self.options = options
    }
}

/// The result of scanning the XDG application directories for D-Bus-activatable apps.
public struct DesktopScan: Sendable, Equatable {
    /// The apps found, sorted by id.
    public var apps: [DiscoveredApp]
    /// One line per skipped or broken entry, naming the file and why.
    public var warnings: [String]
    /// Every URL scheme some installed, visible application entry declares
    /// (`MimeType=x-scheme-handler/<scheme>;`), D-Bus-activatable or not,
    /// lowercased, with the desktop-file IDs of the entries declaring it: a
    /// scheme an installed app handles goes to that app, and never to a
    /// process that merely registered it (``AppRegistry/route(scheme:mimeDefaults:)``).
    public var installedHandlers: [String: Set<String>] = [:]
    public var installedSchemes: Set<String> { Set(installedHandlers.keys) }

    /// The desktop-entry keys that mirror `RegisterApp` options.
    public enum Key {
        public static let surfaces = "X-WidgetHost-Surfaces"
        public static let liveActivityLaunchTypes = "X-WidgetHost-LiveActivityLaunchTypes"
        public static let userActivityAction = "X-WidgetHost-UserActivityAction"
        public static let providerPath = "X-WidgetHost-ProviderPath"
    }

    public init(apps: [DiscoveredApp] = [], warnings: [String] = []) {
        self.apps = apps
        self.warnings = warnings
    }

    /// Scans `dirs.applicationDirectories`, recursively, following symbolic links.
    ///
    /// Per the Desktop Entry spec, the first directory holding a desktop-file ID
    /// wins — even when that entry is `Hidden=true` (which hides the ID) or broken
    /// (which produces a warning and no app). Within one directory tree, files
    /// are visited before subdirectories, each in name order, and the first file
    /// to yield an ID wins a collision (`a-b.desktop` before `a/b.desktop`).
    ///
    /// Only entries with `DBusActivatable=true` (and `Type=Application` or no
    /// `Type`) become apps; others are skipped silently. A D-Bus-activatable entry
    /// whose ID is not a valid app id, or whose `X-WidgetHost-*` keys are invalid,
    /// is skipped with a warning; an invalid scheme in `MimeType` is dropped with a
    /// warning. Never throws: missing directories are ignored, unreadable files
    /// and directories become warnings.
    public static func scan(_ dirs: XDGDirectories, files: some FileSource) -> DesktopScan {
        var warnings: [String] = []
        var claimed: [String: String] = [:]   // id -> path
        var order: [String] = []
        for dir in dirs.applicationDirectories {
            var visited = Set<String>()
            for (id, path) in walk(dir, files, prefix: [], depth: 0, visited: &visited, warnings: &warnings)
            where claimed[id] == nil {
                claimed[id] = path
                order.append(id)
            }
        }
        var apps: [DiscoveredApp] = []
        var installed: [String: Set<String>] = [:]
        for id in order {
            guard let path = claimed[id] else { continue }
            guard let data = files.contents(of: path) else {
                warnings.append("\(path): skipped: the file cannot be read; check its permissions")
                continue
            }
            guard let contents = String(validating: data, as: UTF8.self) else {
                warnings.append("\(path): skipped: the file is not valid UTF-8; save it as UTF-8")
                continue
            }
            let entry: DesktopEntry
            do throws(HostError) {
                entry = try DesktopEntry.parse(id: id, path: path, contents: contents)
            } catch {
                warnings.append("\(path): skipped: \(error.message)")
                continue
            }
            if let app = app(from: entry, warnings: &warnings) {
                apps.append(app)
                for scheme in app.options.schemes { installed[scheme, default: []].insert(id) }
            } else if isVisibleApplication(entry) {
                for scheme in schemes(of: entry) { installed[scheme, default: []].insert(id) }
            }
        }
        apps.sort { $0.entry.id < $1.entry.id }
        var scan = DesktopScan(apps: apps, warnings: warnings)
        scan.installedHandlers = installed
        return scan
    }

    /// The valid schemes an entry declares with `MimeType=x-scheme-handler/<scheme>;`,
    /// lowercased, without duplicates, in order; `invalid` hears of each bad one.
    static func schemes(of entry: DesktopEntry, invalid: (String, HostError) -> Void = { _, _ in }) -> [String] {
        let prefix = "x-scheme-handler/"
        var schemes: [String] = []
        for mimeType in entry.mimeTypes where mimeType.lowercased().hasPrefix(prefix) {
            do throws(HostError) {
                let scheme = try Validate.scheme(String(mimeType.dropFirst(prefix.count)))
                if !schemes.contains(scheme) { schemes.append(scheme) }
            } catch {
                invalid(mimeType, error)
            }
        }
        return schemes
    }

    /// An entry of `Type=Application` (or no `Type`) that is not `Hidden`.
    static func isVisibleApplication(_ entry: DesktopEntry) -> Bool {
        !entry.hidden && (entry.string("Type")?.trimmingWhitespace() ?? "Application") == "Application"
    }

    /// The app a single desktop entry describes, or `nil` (with a line added to
    /// `warnings` when the entry is D-Bus-activatable but unusable).
    public static func app(from entry: DesktopEntry, warnings: inout [String]) -> DiscoveredApp? {
        guard isVisibleApplication(entry), entry.dbusActivatable else { return nil }
        let file = entry.path
        do throws(HostError) {
            try Validate.appID(entry.id)
        } catch {
            warnings.append("\(file): skipped: DBusActivatable=true but its desktop-file ID '\(entry.id)' is not a valid app id (\(error.message)); rename the file after the app's D-Bus name, like org.example.TapMe.desktop")
            return nil
        }

        var options = AppOptions(defaultsFor: entry.id, appProtocol: .freedesktop)
        options.schemes = schemes(of: entry) { mimeType, error in
            warnings.append("\(file): ignoring MimeType '\(mimeType)': \(error.message)")
        }

        func list(_ key: String) -> [String]? {
            entry.stringList(key).map { items in
                items.map { $0.trimmingWhitespace() }.filter { !$0.isEmpty }
            }
        }
        do throws(HostError) {
            if let items = list(Key.surfaces) {
                options.surfaces = try AppOptions.parseSurfaces(items, label: "key \(Key.surfaces)")
            }
            if let items = list(Key.liveActivityLaunchTypes) {
                options.liveActivityLaunchTypes = try AppOptions.parseLaunchTypes(items, label: "key \(Key.liveActivityLaunchTypes)")
            }
            if let action = entry.string(Key.userActivityAction)?.trimmingWhitespace(), !action.isEmpty {
                try Validate.actionName(action, what: "key \(Key.userActivityAction)")
                options.userActivityAction = action
            }
            if let path = entry.string(Key.providerPath)?.trimmingWhitespace(), !path.isEmpty {
                options.providerPath = try AppOptions.parseObjectPath(path, label: "key \(Key.providerPath)")
            }
        } catch {
            warnings.append("\(file): skipped: \(error.message)")
            return nil
        }
        return DiscoveredApp(entry: entry, options: options)
    }

    // MARK: - Directory walking

    /// Desktop files under `dir`, as (desktop-file ID, path): the directory's own
    /// files first, then its subdirectories', each in name order.
    private static func walk(
        _ dir: String,
        _ files: some FileSource,
        prefix: [String],
        depth: Int,
        visited: inout Set<String>,
        warnings: inout [String]
    ) -> [(String, String)] {
        guard files.isDirectory(dir) == true else { return [] }
        let real = files.resolvingLinks(dir)
        guard visited.insert(real).inserted else { return [] }   // symlink loop
        guard depth < 32 else {
            warnings.append("\(dir): not scanned: directories nest more than 32 levels deep")
            return []
        }
        let names: [String]
        do {
            names = try files.names(in: dir).sorted()
        } catch {
            warnings.append("\(dir): not scanned: the directory cannot be read; check its permissions")
            return []
        }
        var out: [(String, String)] = []
        var subdirectories: [String] = []
        for name in names {
            let path = XDGDirectories.join(dir, name)
            guard let childIsDir = files.isDirectory(path) else { continue }  // dangling link
            if childIsDir {
                subdirectories.append(name)
            } else if name.hasSuffix(".desktop") && name.count > ".desktop".count {
                let id = (prefix + [String(name.dropLast(".desktop".count))]).joined(separator: "-")
                out.append((id, path))
            }
        }
        for name in subdirectories {
            let path = XDGDirectories.join(dir, name)
            out += walk(path, files, prefix: prefix + [name], depth: depth + 1, visited: &visited, warnings: &warnings)
        }
        return out
    }
}

extension String {
    func trimmingWhitespace() -> String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }
        return String(drop(while: isSpace).reversed().drop(while: isSpace).reversed())
    }
}
