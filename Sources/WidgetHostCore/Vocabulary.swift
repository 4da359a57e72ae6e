/// The rendering vocabulary (docs/vocabulary.md): the element types and keys
/// renderers draw. The host passes every key through; the lint warns about
/// what no renderer following the vocabulary would draw (`unknown-type`,
/// `unknown-key`, `invalid-value`, `invalid-binding`).
public enum Vocabulary {
    /// What a key's value must be.
    public enum Value: Sendable, Equatable {
        case number
        /// A number from 0 to 1.
        case fraction
        case string
        /// A CSS colour string, or {"light": …, "dark": …}.
        case colour
        case oneOf([String])
        /// Anything (the host checks it, or it is the app's own).
        case any
    }

    // The tables (version, the one-of lists, commonKeys, types,
    // bindingScopes, colourVariants) are generated from vocabulary/vocabulary.json
    // by the VocabularyCodegen plugin: docs/vocabulary.md#the-declaration.

    /// The vocabulary's findings for one element, in the order of its keys.
    static func findings(for element: ViewElement) -> [LintFinding] {
        let name = element.id.map { "\(element.type) '\($0)'" } ?? element.type
        guard let own = types[element.type] else {
            return [
                .init(
                    .unknownType,
                    "'\(Validate.prefix(element.type))' is not an element type of the rendering vocabulary, so renderers draw its children as a vstack"
                        + suggestion(element.type, among: Array(types.keys)) + " (docs/vocabulary.md)")
            ]
        }
        var findings: [LintFinding] = []
        for key in element.fields.keys.sorted() {
            guard let value = own[key] ?? commonKeys[key] else {
                findings.append(
                    .init(
                        .unknownKey,
                        "\(name) has the key '\(Validate.prefix(key))', which the rendering vocabulary does not define for \(element.type), so renderers ignore it"
                            + suggestion(key, among: Array(own.keys) + Array(commonKeys.keys))))
                continue
            }
            if let problem = check(element.fields[key]!, against: value) {
                findings.append(.init(.invalidValue, "\(name): '\(key)' \(problem), so renderers ignore it"))
            }
        }
        findings += bindingFindings(element, name)
        return findings
    }

    static func bindingFindings(_ element: ViewElement, _ name: String) -> [LintFinding] {
        let bind = element.fields["bind"]
        let format = element.fields["format"]
        guard bind != nil || format != nil else { return [] }
        if element.type != "text" { return [] }  // reported as unknown keys
        guard case .string(let path)? = bind else {
            return bind == nil
                ? [.init(.invalidBinding, "\(name) has a 'format' but no 'bind'; add \"bind\": \"state.KEY\", or put the words in 'text'")]
                : []  // not a string: invalid-value already
        }
        var findings: [LintFinding] = []
        let parts = path.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        if parts.count != 2 || !bindingScopes.contains(String(parts[0])) || parts[1].isEmpty {
            findings.append(
                .init(
                    .invalidBinding,
                    "\(name) binds '\(Validate.prefix(path))'; bind to \"state.KEY\" or \"attributes.KEY\", a key of the Live Activity's ContentState or Attributes"))
        }
        if case .string(let text)? = format {
            let holes = text.components(separatedBy: "{}").count - 1
            if holes != 1 {
                findings.append(
                    .init(
                        .invalidBinding,
                        "\(name)'s format '\(Validate.prefix(text))' has \(holes) '{}'; put exactly one '{}' where the bound value goes"))
            }
        }
        if element.fields["text"] == nil {
            findings.append(
                .init(
                    .invalidBinding,
                    "\(name) binds '\(Validate.prefix(path))' but has no 'text' to show when the key is missing (and in a widget, which has no state); add one"))
        }
        return findings
    }

    /// Why `value` is not a `kind`, or nil when it is.
    static func check(_ value: JSONValue, against kind: Value) -> String? {
        switch kind {
        case .any: return nil
        case .number:
            return value.isNumber ? nil : "must be a number, not \(value.typeName)"
        case .fraction:
            guard let number = value.numberValue else { return "must be a number from 0 to 1, not \(value.typeName)" }
            return (0...1).contains(number) ? nil : "must be from 0 to 1, not \(number)"
        case .string:
            return value.stringValue != nil ? nil : "must be a string, not \(value.typeName)"
        case .oneOf(let choices):
            guard let text = value.stringValue, choices.contains(text) else {
                return "must be one of \(choices.joined(separator: ", "))"
            }
            return nil
        case .colour:
            if let text = value.stringValue { return isColour(text) ? nil : "is not a colour (a CSS name, #rrggbb or rgb(…))" }
            guard case .object(let variants) = value, !variants.isEmpty,
                variants.allSatisfy({ colourVariants.contains($0.key) && ($0.value.stringValue.map(isColour) ?? false) })
            else { return "must be a colour or {\(colourVariants.map { "\"\($0)\": colour" }.joined(separator: ", "))}" }
            return nil
        }
    }

    /// A CSS colour name, `#rgb`, `#rgba`, `#rrggbb`, `#rrggbbaa`, `rgb(…)` or `rgba(…)`.
    static func isColour(_ text: String) -> Bool {
        let t = text.utf8
        if t.first == UInt8(ascii: "#") {
            let hex = t.dropFirst()
            return [3, 4, 6, 8].contains(hex.count) && hex.allSatisfy { isHexDigit($0) }
        }
        if text.hasPrefix("rgb(") || text.hasPrefix("rgba(") {
            return text.hasSuffix(")") && text.utf8.allSatisfy { isRGBCharacter($0) }
        }
        return !t.isEmpty && t.allSatisfy { ($0 | 0x20) >= UInt8(ascii: "a") && ($0 | 0x20) <= UInt8(ascii: "z") }
    }

    private static func isHexDigit(_ c: UInt8) -> Bool {
        (c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9")) || ((c | 0x20) >= UInt8(ascii: "a") && (c | 0x20) <= UInt8(ascii: "f"))
    }

    private static func isRGBCharacter(_ c: UInt8) -> Bool {
        (c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9")) || "rgba(),. %".utf8.contains(c)
    }

    /// "; did you mean 'x'?" for the closest of `names` (at most two edits away), else "".
    static func suggestion(_ word: String, among names: [String]) -> String {
        let scored = names.map { ($0, editDistance(word.lowercased(), $0.lowercased())) }.filter { $0.1 <= 2 }
        guard let best = scored.min(by: { $0.1 != $1.1 ? $0.1 < $1.1 : $0.0 < $1.0 }) else { return "" }
        return "; did you mean '\(best.0)'?"
    }

    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a.utf8.prefix(64)), b = Array(b.utf8.prefix(64))
        var previous = Array(0...b.count)
        for i in 1...max(a.count, 1) where !a.isEmpty {
            var current = [i] + Array(repeating: 0, count: b.count)
            for j in stride(from: 1, through: b.count, by: 1) {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            previous = current
        }
        return a.isEmpty ? b.count : previous[b.count]
    }
}
