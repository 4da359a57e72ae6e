import DBus
import Foundation
import Testing
import WidgetHostCore
import WidgetHostInterfaces

/// What a caller may pass is declared once: the methods' `a{sv}` options
/// in the XML's annotations (docs/interfaces.md#options). What documents
/// them must show the declared values.
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
}
