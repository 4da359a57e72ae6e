import Foundation
import PrivateBus
import Testing

/// packaging/widget-hostd.service as `systemd-analyze security` reviews it, and
/// the settings it leaves out so that the host still works as a user service
/// (the unit's comment says why).
@Suite("The systemd user unit")
struct SystemdUnitTests {
    static let unit = repositoryRoot.appendingPathComponent("packaging/widget-hostd.service").path

    /// The most overall exposure the review may give the unit.
    static let ceiling = 6.0

    /// The review's checks the unit's settings pass; losing a setting fails one.
    static let passed = Set<String>([
        "NoNewPrivileges=", "AmbientCapabilities=", "KeyringMode=", "Delegate=", "NotifyAccess=", "UMask=",
        "LockPersonality=", "MemoryDenyWriteExecute=", "RestrictRealtime=", "RestrictSUIDSGID=", "SystemCallArchitectures=",
        "RestrictAddressFamilies=~AF_(INET|INET6)", "RestrictAddressFamilies=~AF_PACKET", "RestrictAddressFamilies=~AF_NETLINK",
        "RestrictAddressFamilies=~…",
    ])
    .union(["user", "pid", "net", "uts", "mnt", "cgroup", "ipc"].map { "RestrictNamespaces=~\($0)" })
    .union(["swap", "reboot", "raw-io", "privileged", "obsolete", "mount", "module", "debug", "cpu-emulation", "clock"].map {
        "SystemCallFilter=~@\($0)"
    })

    /// Settings a user manager can apply only inside a user namespace of the
    /// service's own, where the host cannot open its callers' /proc/<pid>/root,
    /// or which stop the unit from starting where it makes none; and the path
    /// settings, which would hide or freeze what the host reads and writes.
    static let leftOut: Set<String> = [
        "PrivateUsers", "ProtectSystem", "ProtectHome", "PrivateTmp", "ReadWritePaths", "ReadOnlyPaths", "InaccessiblePaths",
        "TemporaryFileSystem", "BindPaths", "BindReadOnlyPaths", "PrivateDevices", "PrivateNetwork", "PrivateMounts", "PrivateIPC",
        "ProtectKernelTunables", "ProtectKernelModules", "ProtectKernelLogs", "ProtectControlGroups", "ProtectClock",
        "ProtectHostname", "ProtectProc", "ProcSubset", "CapabilityBoundingSet", "StateDirectory", "DynamicUser", "RootDirectory",
    ]

    /// `systemd-analyze security --offline=true` of the unit, with ARGUMENTS added.
    static func review(_ arguments: [String] = []) async throws -> CommandResult {
        let analyze = try #require(PrivateBus.which("systemd-analyze"), "systemd-analyze (Debian's systemd) is needed")
        return try await runCommand(analyze, ["security", "--offline=true", "--no-pager"] + arguments + [unit])
    }

    @Test("systemd-analyze security rates the unit at most 6.0 and finds nothing in it to ignore")
    func overall() async throws {
        let review = try await Self.review()
        #expect(review.succeeded, "\(review)")
        #expect(review.stderr.isEmpty, "systemd ignores lines of the unit:\n\(review.stderr)")
        let line = try #require(review.stdout.split(separator: "\n").last { $0.contains("Overall exposure level") }, "\(review)")
        print(line)
        let score = try #require(line.firstMatch(of: /: (\d+\.\d+)\s/).flatMap { Double($0.1) }, "\(line)")
        #expect(score <= Self.ceiling, "\(line)")
    }

    @Test("The unit passes each check its hardening earns")
    func checks() async throws {
        let review = try await Self.review(["--json=short"])
        let checks = try #require(
            try JSONSerialization.jsonObject(with: Data(review.stdout.utf8)) as? [[String: Any]], "\(review)")
        let passing = Set(checks.filter { $0["set"] as? Bool == true }.compactMap { $0["name"] as? String })
        #expect(checks.count > Self.passed.count, "\(review)")
        #expect(Self.passed.subtracting(passing).isEmpty, "checks the unit no longer passes: \(Self.passed.subtracting(passing).sorted())")
    }

    @Test("The unit leaves the host its callers' /proc, its files and its bus, and limits its descriptors and memory")
    func settings() throws {
        let text = try String(contentsOfFile: Self.unit, encoding: .utf8)
        var settings: [String: [String]] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") && !line.hasPrefix("[") {
            guard let equals = line.firstIndex(of: "=") else { continue }
            settings[String(line[..<equals]), default: []].append(String(line[line.index(after: equals)...]))
        }
        let present = Self.leftOut.intersection(settings.keys)
        #expect(present.isEmpty, "the unit sets \(present.sorted()), which a user service cannot have without losing its callers' identity or failing to start")
        #expect(settings["Type"] == ["dbus"] && settings["BusName"] == ["org.widgethost.Host1"])
        #expect(settings["ExecStart"] == ["/usr/bin/widget-hostd"])
        #expect(settings["RestrictAddressFamilies"] == ["AF_UNIX"])
        #expect(settings["LimitNOFILE"] == ["1024"])
        #expect(settings["MemoryMax"] == ["512M"])
    }
}
