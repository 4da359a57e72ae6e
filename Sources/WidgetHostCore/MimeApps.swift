/// `mimeapps.list` lookup (XDG MIME Applications Associations spec), for `OpenURL` routing.
public enum MimeApps {
    /// The `mimeapps.list` files in the spec's precedence order, most important first:
    /// `$XDG_CONFIG_HOME/<desktop>-mimeapps.list` (for each current desktop, in
    /// order), `$XDG_CONFIG_HOME/mimeapps.list`, then for each `$XDG_CONFIG_DIRS`
    /// entry the same two, then `$XDG_DATA_HOME/applications/…` and each
    /// `$XDG_DATA_DIRS/applications/…` likewise. Duplicates removed.
    public static func listFiles(_ dirs: XDGDirectories) -> [String] {
        let configDirs = [dirs.configHome] + dirs.configDirs
        let dataDirs = ([dirs.dataHome] + dirs.dataDirs).map { XDGDirectories.join($0, "applications") }
        var files: [String] = []
        for dir in configDirs + dataDirs {
            for desktop in dirs.currentDesktops {
                files.append(XDGDirectories.join(dir, "\(desktop)-mimeapps.list"))
            }
            files.append(XDGDirectories.join(dir, "mimeapps.list"))
        }
        return XDGDirectories.unique(files)
    }

    /// The `[Default Applications]` candidates for `x-scheme-handler/<scheme>`, in
    /// preference order across ``listFiles(_:)``: desktop IDs without `.desktop`,
    /// de-duplicated, minus any listed for the same MIME type under
    /// `[Removed Associations]` in the same or a more important file.
    ///
    /// MIME types and the scheme are compared case-insensitively. Missing or
    /// unreadable files are skipped; malformed lines are ignored.
    public static func defaultHandlers(forScheme scheme: String, dirs: XDGDirectories, files: some FileSource) -> [String] {
        let mimeType = "x-scheme-handler/" + scheme.lowercased()
        var removed = Set<String>()
        var result: [String] = []
        for file in listFiles(dirs) {
            guard let data = files.contents(of: file),
                  let contents = String(validating: data, as: UTF8.self) else { continue }
            let keyFile = KeyFile(parsing: contents)
            for id in ids(in: keyFile, group: "Removed Associations", mimeType: mimeType) {
                removed.insert(id)
            }
            for id in ids(in: keyFile, group: "Default Applications", mimeType: mimeType)
            where !removed.contains(id) && !result.contains(id) {
                result.append(id)
            }
        }
        return result
    }

    /// The desktop IDs (without `.desktop`) listed for `mimeType` in `group`.
    static func ids(in file: KeyFile, group: String, mimeType: String) -> [String] {
        guard let entries = file.groups[group] else { return [] }
        var out: [String] = []
        for key in file.keyOrder[group] ?? [] where key.lowercased() == mimeType {
            for item in KeyFile.splitList(entries[key] ?? "") {
                let trimmed = item.trimmingWhitespace()
                let id = trimmed.hasSuffix(".desktop") ? String(trimmed.dropLast(".desktop".count)) : trimmed
                if !id.isEmpty { out.append(id) }
            }
        }
        return out
    }
}
