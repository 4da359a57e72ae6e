import DBus
import Foundation
import PrivateBus
import Testing
import WidgetHostCore
import WidgetHostInterfaces
import WidgetHostService

/// What a caller may pass and what the host does by default are declared
/// once: the methods' `a{sv}` options in the XML's annotations
/// (docs/interfaces.md#options), the daemon's defaults in `HostDefaults`
/// (docs/daemon.md#options). What documents them must show the declared
/// values.
@Suite("Options and defaults, declared once", .timeLimit(.minutes(1)))
struct OptionsAndDefaultsTests {
    // MARK: The methods' options

    static func docString(_ annotations: [InterfaceDescription.Annotation]) -> String {
        annotations.first { $0.name == "org.gtk.GDBus.DocString" }?.value ?? ""
    }

    /// The documentation of `member` (`interface.Method`): the method's and
    /// that of its options argument.
    static func documentation(of member: String) -> String? {
        let interface = member.split(separator: ".").dropLast().joined(separator: ".")
        let name = member.split(separator: ".").last.map(String.init)
        guard let method = DeclaredInterfaces.all.first(where: { $0.name == interface })?.methods.first(where: { $0.name == name }) else {
            return nil
        }
        let options = method.args.filter { $0.annotations.contains { $0.name.hasPrefix("org.widgethost.Option") } }
        return ([docString(method.annotations)] + options.map { docString($0.annotations) }).joined(separator: "\n")
    }

    @Test("The XML's documentation shows every declared option key with its type, its default and its range")
    func optionsDocumented() throws {
        var checked = 0
        for options in DeclaredOptions.all {
            for (index, member) in options.members.enumerated() {
                let text = try #require(Self.documentation(of: member), "\(member) is not a declared method")
                // The declaring method documents every key; those that take its options may repeat some.
                let declaring = index == 0
                for option in options.declared {
                    let mentions = text.ranges(of: "'\(option.key)' (")
                    if declaring { #expect(!mentions.isEmpty, "\(member) does not document option '\(option.key)' ('\(option.key)' (\(option.signature)…)") }
                    for mention in mentions {
                        let rest = text[mention.upperBound...]
                        let parenthetical = rest.prefix { $0 != ")" }
                        #expect(
                            parenthetical == option.signature || parenthetical.hasPrefix(option.signature + ","),
                            "\(member) documents '\(option.key)' as (\(parenthetical)); the XML declares \(option.signature)")
                        guard declaring else { continue }
                        checked += 1
                        if let value = option.defaultValue {
                            #expect(parenthetical.contains("default \(value)"), "\(member) documents '\(option.key)' as (\(parenthetical)), not default \(value)")
                        }
                        if let range = option.range {
                            let next =
                                options.declared.compactMap { other in other.key == option.key ? nil : rest.firstRange(of: "'\(other.key)' (")?.lowerBound }
                                .min() ?? rest.endIndex
                            #expect(
                                rest[..<next].contains("\(range.lowerBound) to \(range.upperBound)"),
                                "\(member) does not give '\(option.key)''s range, \(range.lowerBound) to \(range.upperBound)")
                        }
                    }
                }
            }
        }
        #expect(checked >= 21, "\(checked) declared keys documented")
    }

    // MARK: The daemon's defaults

    /// widget-hostd's options that have a default, with the default as its
    /// help shows it (its man page is made from the same dump).
    static func helpDefaults() async throws -> [String: String] {
        let dump = try await runCommand(buildDirectory + "/widget-hostd", ["--experimental-dump-help"])
        #expect(dump.succeeded, "\(dump)")
        let json = try JSONSerialization.jsonObject(with: Data(dump.stdout.utf8)) as? [String: Any]
        let arguments = (json?["command"] as? [String: Any])?["arguments"] as? [[String: Any]] ?? []
        var defaults: [String: String] = [:]
        for argument in arguments {
            let names = argument["names"] as? [[String: Any]] ?? []
            guard let value = argument["defaultValue"] as? String, let name = names.first(where: { $0["kind"] as? String == "long" })?["name"] as? String
            else { continue }
            defaults[name] = value
        }
        return defaults
    }

    /// What `HostConfiguration` holds by default for each daemon option:
    /// what the host does when the daemon is given no options.
    static var configured: [String: String] {
        let configuration = HostConfiguration(environment: ["HOME": "/nonexistent"])
        let seconds = { (duration: Duration) in "\(Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18)" }
        return [
            "link-policy": configuration.linkPolicy.rawValue,
            "delivery-timeout": seconds(configuration.deliveryTimeout),
            "provider-timeout": seconds(configuration.providerTimeout),
            "daily-reload-budget": "\(configuration.timelines.dailyBudget)",
            "min-reload-interval": "\(configuration.timelines.minimumReloadInterval)",
            "reload-retry-delay": "\(configuration.timelines.retryInitialDelay)",
            "max-content-bytes": "\(configuration.contentLimits.maxBytes)",
            "max-content-depth": "\(configuration.contentLimits.maxDepth)",
            "max-content-elements": "\(configuration.contentLimits.maxElements)",
            "max-url-length": "\(configuration.contentLimits.maxURLLength)",
            "max-widgets-per-app": "\(configuration.maxWidgetsPerApp)",
            "max-configuration-bytes": "\(configuration.maxConfigurationBytes)",
            "max-activities-per-app": "\(configuration.maxActivitiesPerApp)",
            "max-app-bytes": "\(configuration.budgets.perApp)",
            "max-host-bytes": "\(configuration.budgets.total)",
            "max-registrations-per-connection": "\(configuration.maxRegistrationsPerConnection)",
            "max-pending-deliveries-per-app": "\(configuration.maxPendingDeliveriesPerApp)",
            "max-dict-entries": "\(configuration.maxDictionaryEntries)",
            "max-dict-bytes": "\(configuration.maxDictionaryBytes)",
            "max-provider-calls-per-app": "\(configuration.maxProviderCallsPerApp)",
            "max-ids-per-sandboxed-app": "\(configuration.maxIDsPerSandboxedApp)",
            "max-bundle-bytes": "\(configuration.maxBundleBytes)",
            "max-bundle-bytes-per-connection": "\(configuration.maxBundleBytesPerConnection)",
            "update-frame-ms": "\(configuration.updates.frameMs)",
            "update-rate": "\(configuration.updates.rate)",
            "update-burst": "\(configuration.updates.burst)",
            "max-update-rate": "\(configuration.updates.ceiling)",
        ]
    }

    /// Whether two defaults are the same: numbers by value (`25` is `25.0`), names as written.
    static func same(_ a: String, _ b: String) -> Bool {
        if let x = Double(a), let y = Double(b) { return x == y }
        return a == b
    }

    @Test("widget-hostd --help shows the defaults the host's configuration holds")
    func helpShowsTheConfiguration() async throws {
        let help = try await Self.helpDefaults()
        let configured = Self.configured
        for (option, value) in configured {
            #expect(help[option].map { Self.same($0, value) } == true, "--\(option): the help shows \(help[option] ?? "no default"), the configuration holds \(value)")
        }
        let unchecked = Set(help.keys).subtracting(configured.keys).subtracting(["log-level"])
        #expect(unchecked.isEmpty, "add the configuration's value of \(unchecked.sorted()) to OptionsAndDefaultsTests.configured")
    }

    /// The value `text` starts with, in the help's terms: `25`, `16777216
    /// (16 MiB)`, `48 MiB`, `256 KiB of JSON`, `5 minutes`, `` `current` ``.
    static func leadingValue(_ text: Substring, name: Bool) -> String? {
        let text = text.trimmingCharacters(in: .whitespaces)
        if name {
            let word = text.trimmingCharacters(in: CharacterSet(charactersIn: "`"))
            return word.isEmpty || word.contains(" ") ? nil : word
        }
        guard let match = text.prefixMatch(of: #/([0-9][0-9,]*(?:\.[0-9]+)?)(?: (KiB|MiB|minutes))?/#),
            let number = Double(match.1.replacing(",", with: ""))
        else { return nil }
        let unit: Double =
            switch match.2 {
            case "KiB": 1024
            case "MiB": 1024 * 1024
            case "minutes": 60
            default: 1
            }
        return "\(number * unit)"
    }

    /// The default a Markdown table row states for the option one of its
    /// cells is: the first value among its other cells (for a name, the next cell).
    static func tableDefault(_ line: Substring, options: [String: String]) -> (option: String, stated: String)? {
        let cells = line.replacing("\\|", with: "/").split(separator: "|", omittingEmptySubsequences: false).dropFirst().dropLast()
        let named = cells.enumerated().compactMap { index, cell -> (Int, String)? in
            guard let match = cell.wholeMatch(of: #/ *`--([a-z][a-z-]*)(?: [^`]*)?` */#), options[String(match.1)] != nil else { return nil }
            return (index, String(match.1))
        }
        guard named.count == 1, let (column, option) = named.first else { return nil }
        let isName = Double(options[option]!) == nil
        let others = cells.enumerated().filter { $0.offset > column || !isName && $0.offset != column }.map(\.element)
        guard let stated = others.prefix(isName ? 1 : others.count).lazy.compactMap({ leadingValue($0, name: isName) }).first else { return nil }
        return (option, stated)
    }

    /// Each default stated in `text` next to the option it belongs to: in
    /// prose, `--option, 25 seconds by default` (the XML), `` `--option`
    /// (default 300 `` and `` `--option` (4) ``; in a Markdown table, in the
    /// row whose cell is the option.
    static func statedDefaults(in text: String, markdown: Bool, options: [String: String]) -> [(option: String, stated: String, line: String)] {
        var found: [(String, String, String)] = []
        for line in text.split(separator: "\n") {
            if markdown && line.hasPrefix("|"), let (option, stated) = tableDefault(line, options: options) {
                found.append((option, stated, String(line)))
                continue
            }
            for match in line.matches(of: #/`?--([a-z][a-z-]*)(?: [A-Z]+)?`?(?: times)?(?:, | \()(?:default:? )?([0-9][^,;:)]*)/#) {
                let option = String(match.1)
                guard let value = options[option], Double(value) != nil, let stated = leadingValue(match.2, name: false) else { continue }
                found.append((option, stated, String(line)))
            }
        }
        return found
    }

    @Test("docs/daemon.md, the other guides and the interfaces' XML show the defaults widget-hostd --help shows")
    func defaultsDocumented() async throws {
        let help = try await Self.helpDefaults()
        var sources: [(name: String, text: String, markdown: Bool)] = []
        let docs = repositoryRoot.appendingPathComponent("docs")
        for file in try FileManager.default.contentsOfDirectory(atPath: docs.path).sorted() where file.hasSuffix(".md") {
            sources.append(("docs/\(file)", try String(contentsOf: docs.appendingPathComponent(file), encoding: .utf8), true))
        }
        sources.append(("README.md", try String(contentsOf: repositoryRoot.appendingPathComponent("README.md"), encoding: .utf8), true))
        for interface in DeclaredInterfaces.all {
            let docs = [Self.docString(interface.annotations)] + interface.methods.flatMap { [Self.docString($0.annotations)] + $0.args.map { Self.docString($0.annotations) } }
                + interface.signals.map { Self.docString($0.annotations) } + interface.properties.map { Self.docString($0.annotations) }
            sources.append((interface.name, docs.joined(separator: "\n"), false))
        }
        var counts: [String: Int] = [:]
        for source in sources {
            for (option, stated, line) in Self.statedDefaults(in: source.text, markdown: source.markdown, options: help) {
                counts[source.name, default: 0] += 1
                #expect(Self.same(stated, help[option]!), "\(source.name) gives --\(option) as \(stated), widget-hostd --help as \(help[option]!): \(line.prefix(300))")
            }
        }
        // The options table of docs/daemon.md lists every option with a default.
        let daemon = sources.first { $0.name == "docs/daemon.md" }!.text
        let table = Set(Self.statedDefaults(in: daemon, markdown: true, options: help).map(\.option))
        #expect(Set(help.keys).subtracting(table).isEmpty, "docs/daemon.md shows no default for \(Set(help.keys).subtracting(table).sorted())")
        let xml = sources.filter { !$0.markdown }.reduce(0) { $0 + counts[$1.name, default: 0] }
        #expect(xml >= 15 && counts["docs/daemon.md", default: 0] >= 40, "defaults found: \(counts)")
    }
}
