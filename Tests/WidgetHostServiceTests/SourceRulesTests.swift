import DBus
import Foundation
import Testing
import WidgetHostInterfaces

/// Interfaces are declared once, in XML, and the code that serves and calls
/// them is generated from it (docs/interfaces.md): hand-written code names
/// interfaces and members only through the generated declarations, and the
/// binding knows nothing of widgets. Each server reaches only the stores its
/// calls have business with, and no store reaches another openly.
@Suite("Names come from the declarations, and each server reaches only its stores")
struct SourceRulesTests {
    /// The code that serves, calls or measures the interfaces.
    static let checked = ["Sources/WidgetHostService", "Sources/WidgetHostKit", "Sources/widget-host", "Sources/widget-host-bench"]

    static func swiftFiles(under folders: [String]) -> [(path: String, text: String)] {
        let root = repositoryRoot.path
        var files: [(String, String)] = []
        for folder in folders {
            for case let file as String in FileManager.default.enumerator(atPath: root + "/" + folder)?.allObjects ?? []
            where file.hasSuffix(".swift") {
                let path = folder + "/" + file
                if let text = try? String(contentsOfFile: root + "/" + path, encoding: .utf8) { files.append((path, text)) }
            }
        }
        return files
    }

    /// Every interface name and member name the generated code declares,
    /// and those of the standard interfaces.
    static var names: Set<String> {
        var names: Set<String> = []
        for interface in DeclaredInterfaces.all + StandardInterfaces.descriptions.values {
            names.insert(interface.name)
            names.formUnion(interface.methods.map(\.name) + interface.signals.map(\.name) + interface.properties.map(\.name))
        }
        return names
    }

    @Test("no interface or member name is written as a string outside the generated code")
    func noNameStrings() {
        let names = Self.names
        #expect(names.contains("Tap") && names.contains("org.widgethost.Host1.Widget") && names.contains("GetManagedObjects"))
        var found: [String] = []
        for (path, text) in Self.swiftFiles(under: Self.checked) {
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                for match in line.matches(of: #/"([A-Za-z][A-Za-z0-9.]*)"/#) where names.contains(String(match.1)) {
                    found.append("\(path):\(number + 1): \"\(match.1)\"")
                }
            }
        }
        #expect(found.isEmpty, "use the generated names (docs/interfaces.md) instead of:\n\(found.joined(separator: "\n"))")
    }

    /// What only WidgetHostSystem may do for the model: system calls, threads
    /// of its own, the allocator, and files through Foundation.
    static var systemAccess: some RegexComponent { #/import\s+(Glibc|Musl|Darwin|Dispatch|CAllocator)\b|canImport\((Glibc|Musl|Darwin)\)|(FileManager|FileHandle|DispatchQueue|ProcessInfo)|contentsOf(File|Directory)|(Data|String)\(contentsOf|write\(to(File)?:\s*[^&\s]|resolvingSymlinksInPath/# }

    @Test("the model (Sources/WidgetHostCore) does no I/O: no Glibc, no Dispatch, no file APIs — WidgetHostSystem does them")
    func modelDoesNoIO() {
        #expect(
            "import Glibc\n#if canImport(Glibc)\nFileManager.default\nDispatchQueue.global()\ntry Data(contentsOf: url)\ndata.write(to: url)\nvalue.write(to: &writer)"
                .matches(of: Self.systemAccess).count == 6)
        var found: [String] = []
        for (path, text) in Self.swiftFiles(under: ["Sources/WidgetHostCore"]) {
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated()
            where line.contains(Self.systemAccess) {
                found.append("\(path):\(number + 1): \(line.trimmingCharacters(in: .whitespaces))")
            }
        }
        #expect(
            found.isEmpty,
            "the model reaches the system through its protocols (FileSource, ProcessFiles, StateJournal), which WidgetHostSystem implements:\n\(found.joined(separator: "\n"))")
    }

    // MARK: Servers and their stores (docs/interfaces.md#servers-and-stores)

    /// The host's stores, and the names that reach all of them.
    static let stores: Set<String> = [
        "Apps", "AppDirectory", "Widgets", "Activities", "Timelines", "Deliveries", "Storage", "Budgets", "Pacing", "DurableModel", "Stores",
        "HostService",
    ]

    /// The stores each server's file may name: what its calls have business with.
    static let storesOfServers: [String: Set<String>] = [
        "AppsService.swift": ["Apps", "Widgets", "Timelines", "Deliveries"],
        "WidgetsService.swift": ["Widgets", "AppDirectory", "Timelines"],
        "WidgetService.swift": ["Widgets", "AppDirectory", "Timelines", "Deliveries"],
        "LiveActivitiesService.swift": ["Activities", "AppDirectory"],
        "LiveActivityService.swift": ["Activities", "AppDirectory", "Deliveries"],
    ]

    /// A Swift file's code: its comments and string literals blanked.
    static func code(_ text: String) -> String {
        text.split(separator: "\n", omittingEmptySubsequences: false).map { line in
            line.replacing(#/"(\\.|[^"\\])*"/#, with: "\"\"").replacing(#/\/\/.*$/#, with: "")
        }.joined(separator: "\n")
    }

    /// The store names `text`'s code mentions, as whole words.
    static func storesNamed(in text: String) -> Set<String> {
        Set(code(text).matches(of: #/\b[A-Z][A-Za-z0-9]*\b/#).map { String($0.output) }).intersection(stores)
    }

    @Test("each server's file names only the stores its calls have business with, and reaches neither the host nor the set of all stores")
    func serversNameOnlyTheirStores() throws {
        #expect(Self.storesNamed(in: "private let widgets: Widgets // Timelines\nlet s = \"Storage\"; host as HostService") == ["Widgets", "HostService"])
        let files = Self.swiftFiles(under: ["Sources/WidgetHostService"])
        // A new server is listed here before it is served.
        let servers = files.filter { $0.text.contains(#/struct \w+Server: Host1\w+\.Server/#) }.map { ($0.path as NSString).lastPathComponent }
        #expect(Set(servers) == Set(Self.storesOfServers.keys), "list each server's stores in SourceRulesTests.storesOfServers")
        for (path, text) in files {
            guard let allowed = Self.storesOfServers[(path as NSString).lastPathComponent] else { continue }
            let reached = Self.storesNamed(in: text).subtracting(allowed)
            #expect(reached.isEmpty, "\(path) reaches \(reached.sorted()), which its calls have no business with")
        }
    }

    @Test("a store's or a server's stores are private: nothing reaches a store through another")
    func storesArePrivate() {
        let declaration = #/^\s*(?<access>(private|fileprivate)\s+)?(let|var)\s+\w+\s*:\s*(any\s+)?(?<type>\w+)/#
        #expect("    private let apps: any AppDirectory".firstMatch(of: declaration)?.output.type == "AppDirectory")
        var found: [String] = []
        // The host owns the stores and hands them out; nothing else holds one openly.
        for (path, text) in Self.swiftFiles(under: ["Sources/WidgetHostService"])
        where !["HostService.swift", "Stores.swift"].contains((path as NSString).lastPathComponent) {
            for (number, line) in Self.code(text).split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                if let match = line.firstMatch(of: declaration), Self.stores.contains(String(match.output.type)), match.output.access == nil {
                    found.append("\(path):\(number + 1): \(line.trimmingCharacters(in: .whitespaces))")
                }
            }
        }
        #expect(found.isEmpty, "make these private, and offer what their users do instead:\n\(found.joined(separator: "\n"))")
    }

    @Test("the binding (Sources/DBus) never mentions widgethost")
    func bindingKnowsNothingOfWidgets() {
        let found = Self.swiftFiles(under: ["Sources/DBus"]).filter { $0.text.lowercased().contains("widgethost") }.map(\.path)
        #expect(found.isEmpty, "\(found)")
    }
}
