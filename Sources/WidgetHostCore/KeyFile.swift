/// A minimal reader for the freedesktop "key file" format shared by desktop
/// entries and `mimeapps.list`: `[Group]` headers, `Key=Value` lines, `#` comments.
struct KeyFile: Sendable {
    /// A line that is neither blank, a comment, a group header nor `Key=Value`,
    /// or a key-value line before the first group.
    struct Problem: Sendable, Equatable {
        var group: String?
        var line: Int
        var text: String
    }

    /// Group names in first-appearance order.
    var groupOrder: [String] = []
    /// Keys of each group (localized keys like `Name[fr]` included); a repeated
    /// key keeps its last value; a repeated group is merged into the first.
    var groups: [String: [String: String]] = [:]
    /// Keys of each group in first-appearance order.
    var keyOrder: [String: [String]] = [:]
    var problems: [Problem] = []

    init(parsing contents: String) {
        var current: String?
        var number = 0
        var text = Substring(contents)
        if text.hasPrefix("\u{FEFF}") { text = text.dropFirst() }
        // "\r\n" is a single Character in Swift, so split on both forms.
        for rawLine in text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }) {
            number += 1
            var line = rawLine
            if line.hasSuffix("\r") { line = line.dropLast() }
            let stripped = line.drop { $0 == " " || $0 == "\t" }
            if stripped.isEmpty || stripped.hasPrefix("#") { continue }
            if stripped.hasPrefix("[") {
                let header = stripped.reversed().drop { $0 == " " || $0 == "\t" }.reversed()
                if header.last == "]" {
                    let name = String(header.dropFirst().dropLast())
                    if !name.isEmpty && !name.contains("[") && !name.contains("]") {
                        current = name
                        if groups[name] == nil {
                            groups[name] = [:]
                            keyOrder[name] = []
                            groupOrder.append(name)
                        }
                        continue
                    }
                }
                problems.append(Problem(group: current, line: number, text: String(line)))
                continue
            }
            guard let eq = stripped.firstIndex(of: "="), let group = current else {
                problems.append(Problem(group: current, line: number, text: String(line)))
                continue
            }
            let key = String(stripped[..<eq].reversed().drop { $0 == " " || $0 == "\t" }.reversed())
            if key.isEmpty {
                problems.append(Problem(group: current, line: number, text: String(line)))
                continue
            }
            let value = String(stripped[stripped.index(after: eq)...].drop { $0 == " " || $0 == "\t" })
            if groups[group]?[key] == nil { keyOrder[group]?.append(key) }
            groups[group]?[key] = value
        }
    }

    /// Unescapes a key-file value: `\s` space, `\n`, `\t`, `\r`, `\\`, `\;`.
    /// Unknown escapes and a trailing lone backslash are kept as written.
    static func unescape<S: StringProtocol>(_ value: S) -> String {
        guard value.contains("\\") else { return String(value) }
        var out = ""
        var iterator = value.makeIterator()
        while let ch = iterator.next() {
            guard ch == "\\" else { out.append(ch); continue }
            guard let next = iterator.next() else { out.append("\\"); break }
            switch next {
            case "s": out.append(" ")
            case "n": out.append("\n")
            case "t": out.append("\t")
            case "r": out.append("\r")
            case "\\": out.append("\\")
            case ";": out.append(";")
            default: out.append("\\"); out.append(next)
            }
        }
        return out
    }

    /// Splits a string-list value on unescaped `;` and unescapes each item.
    /// Empty items (including the one after a trailing `;`) are dropped.
    static func splitList<S: StringProtocol>(_ value: S) -> [String] {
        var items: [String] = []
        var current = ""
        var escaped = false
        for ch in value {
            if escaped {
                current.append("\\")
                current.append(ch)
                escaped = false
            } else if ch == "\\" {
                escaped = true
            } else if ch == ";" {
                items.append(current)
                current = ""
            } else {
                current.append(ch)
            }
        }
        if escaped { current.append("\\") }
        items.append(current)
        return items.map { unescape($0) }.filter { !$0.isEmpty }
    }
}
