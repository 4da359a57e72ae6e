/// Who a bus connection's process is, as the kernel says, never as the caller
/// claims: the identity xdg-desktop-portal gives its callers
/// (docs/apps.md#identity-who-may-act-for-an-app).
///
/// A sandboxed caller acts only for its own app id or an id below it (`<id>.*`,
/// as Flatpak lets an app own those bus names). An unsandboxed caller has no
/// such identity: the session bus is no boundary between the user's own
/// unconfined processes, so the host does not pretend to tell them apart.
public enum CallerIdentity: Sendable, Equatable {
    /// Not in a sandbox the host recognises.
    case unsandboxed
    /// A Flatpak app: the `name` of the `[Application]` group of its `/.flatpak-info`.
    case flatpak(appID: String)
    /// A Snap: the `<name>` of its `snap.<name>.…` cgroup.
    case snap(name: String)

    /// The sandbox's name for the caller, or nil when unsandboxed.
    public var sandboxedID: String? {
        switch self {
        case .unsandboxed: nil
        case .flatpak(let id): id
        case .snap(let name): name
        }
    }

    /// `flatpak`, `snap` or `none`, as `ListApps` reports it.
    public var kind: String {
        switch self {
        case .unsandboxed: "none"
        case .flatpak: "flatpak"
        case .snap: "snap"
        }
    }

    /// Whether the caller may act for `appID`: always when unsandboxed; else
    /// only for its own id or one below it.
    public func mayActFor(_ appID: String) -> Bool {
        guard let own = sandboxedID else { return true }
        return appID == own || (appID.hasPrefix(own) && appID.utf8.dropFirst(own.utf8.count).first == UInt8(ascii: "."))
    }

    /// Throws `AccessDenied` naming both ids unless the caller may act for `appID`.
    public func check(_ appID: String, doing what: String) throws(HostError) {
        guard !mayActFor(appID), let own = sandboxedID else { return }
        throw .accessDenied(
            "the caller is the \(kind == "flatpak" ? "Flatpak" : "Snap") app '\(own)', which may \(what) only for '\(own)' and ids below it ('\(own).…'), not for '\(appID)'")
    }

    // MARK: - Reading it from the kernel

    /// The identity of process `pid`, read from its files.
    ///
    /// Flatpak: `<proc>/<pid>/root/.flatpak-info` exists → its `[Application] name`.
    /// Snap: a `snap.<name>.` cgroup in `<proc>/<pid>/cgroup`. Neither → unsandboxed.
    /// As xdg-desktop-portal does, a sandbox whose metadata cannot be read or
    /// parsed is an error (the caller is refused), never "unsandboxed"; so is a
    /// process that is already gone.
    ///
    /// Blocking file I/O when `files` reads the kernel's: call it off the bus thread.
    public static func read(pid: Int32, from files: some ProcessFiles) throws(HostError) -> CallerIdentity {
        if let info = try files.flatpakInfo(pid: pid) {
            return .flatpak(appID: try flatpakAppID(info))
        }
        if let name = try snapName(cgroupFile: try files.cgroups(pid: pid)) { return .snap(name: name) }
        return .unsandboxed
    }

    /// The app id a `.flatpak-info` names; `AccessDenied` when it is malformed.
    public static func flatpakAppID(_ contents: String) throws(HostError) -> String {
        let file = KeyFile(parsing: contents)
        if let problem = file.problems.first {
            throw .accessDenied("the caller's .flatpak-info is malformed (line \(problem.line)), so its Flatpak identity cannot be trusted")
        }
        guard let name = file.groups["Application"]?["name"], !name.isEmpty else {
            throw .accessDenied("the caller's .flatpak-info names no app ([Application] name), so its Flatpak identity cannot be trusted")
        }
        do throws(HostError) { try Validate.appID(name) } catch {
            throw .accessDenied("the caller's .flatpak-info names '\(Validate.prefix(name))', which is not an app id, so its Flatpak identity cannot be trusted")
        }
        return name
    }

    /// The snap name in a `/proc/<pid>/cgroup` file, or nil when none of its
    /// lines puts the process in a `snap.<name>.…` cgroup.
    ///
    /// Lines are `hierarchy-ID:controllers:path`; as xdg-desktop-portal does,
    /// only the unified (`0::`), `name=systemd` and `freezer` hierarchies are
    /// looked at, and the unit is the last path component (snapd names it
    /// `snap.<name>.<app>.<uuid>.scope`, or `snap.<name>.hook.<hook>.<uuid>.scope`).
    public static func snapName(cgroupFile: String) throws(HostError) -> String? {
        for line in cgroupFile.split(separator: "\n") {
            let fields = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            guard fields.count == 3 else { continue }
            let controllers = fields[1]
            guard (fields[0] == "0" && controllers.isEmpty) || controllers == "name=systemd"
                || controllers.split(separator: ",").contains("freezer")
            else { continue }
            guard let unit = fields[2].split(separator: "/").last, unit.hasPrefix("snap.") else { continue }
            let parts = unit.split(separator: ".", omittingEmptySubsequences: false)
            guard parts.count >= 3, isSnapName(parts[1]) else {
                throw .accessDenied("the caller's cgroup '\(Validate.prefix(String(unit)))' looks like a Snap's but names no valid snap, so its identity cannot be trusted")
            }
            return String(parts[1])
        }
        return nil
    }

    /// snapd's rule: lowercase letters, digits and '-', at least one letter, no leading, trailing or doubled '-', at most 40.
    static func isSnapName(_ s: Substring) -> Bool {
        let bytes = Array(s.utf8)
        guard !bytes.isEmpty, bytes.count <= 40, bytes.first != UInt8(ascii: "-"), bytes.last != UInt8(ascii: "-") else { return false }
        var letters = 0
        for (i, b) in bytes.enumerated() {
            switch b {
            case UInt8(ascii: "a")...UInt8(ascii: "z"): letters += 1
            case UInt8(ascii: "0")...UInt8(ascii: "9"): break
            case UInt8(ascii: "-") where bytes[i - 1] != UInt8(ascii: "-"): break
            default: return false
            }
        }
        return letters > 0
    }
}

/// A process's files its identity is read from (`/proc/<pid>`): WidgetHostSystem
/// reads them from the kernel. Each throws `AccessDenied` when it cannot read
/// them: not being able to look is no proof of not being sandboxed.
public protocol ProcessFiles {
    /// The contents of the process's `/.flatpak-info` (a regular file), or nil
    /// when its root has none: the process is not in a Flatpak.
    func flatpakInfo(pid: Int32) throws(HostError) -> String?
    /// The contents of its `cgroup` file.
    func cgroups(pid: Int32) throws(HostError) -> String
}
