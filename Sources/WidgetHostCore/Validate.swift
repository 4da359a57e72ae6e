/// Validation of the names WidgetHost accepts from callers and desktop entries.
///
/// Every failure is an ``HostError/Name/invalidArgument`` whose message quotes the
/// offending value, says which rule it broke, and shows a valid example.
public enum Validate {
    /// An app id that is valid, used in messages.
    public static let exampleAppID = "org.example.TapMe"

    /// Checks an `app_id`: a desktop-file ID without `.desktop` that is also a valid
    /// D-Bus well-known bus name.
    ///
    /// Rules: at most 255 characters; at least two elements separated by `.`; no
    /// empty element; elements contain only ASCII letters, digits, `_` and `-`; no
    /// element starts with a digit. Two mistakes get their own message: a unique
    /// connection name (`:1.42`), and a single name with the file suffix (`TapMe.desktop`).
    public static func appID(_ s: String) throws(HostError) {
        let hint = "use the desktop-file ID without '.desktop', like \(exampleAppID)"
        if s.isEmpty {
            throw .invalidArgument("app id must not be empty; \(hint)")
        }
        let length = s.utf8.count
        if length > 255 {
            throw .invalidArgument("app id '\(prefix(s))' is \(length) bytes long, but at most 255 are allowed; use a shorter reverse-DNS name like \(exampleAppID)")
        }
        if s.hasPrefix(":") {
            throw .invalidArgument("app id '\(prefix(s))' is a unique connection name, not a well-known name; \(hint)")
        }
        if s.hasSuffix(".desktop") && !s.dropLast(8).contains(".") {
            throw .invalidArgument("app id '\(prefix(s))' must not include the '.desktop' suffix; \(hint)")
        }
        let elements = s.split(separator: ".", omittingEmptySubsequences: false)
        if elements.count < 2 {
            throw .invalidArgument("app id '\(prefix(s))' must have at least two elements separated by '.', like \(exampleAppID)")
        }
        for element in elements {
            if element.isEmpty {
                throw .invalidArgument("app id '\(prefix(s))' has an empty element (a leading, trailing or doubled '.'); every element between dots must be non-empty, like \(exampleAppID)")
            }
            for scalar in element.unicodeScalars where !(isASCIIAlphanumeric(scalar) || scalar == "_" || scalar == "-") {
                throw .invalidArgument("app id '\(prefix(s))' contains \(quoted(scalar)), which is not allowed; elements may contain only ASCII letters, digits, '_' and '-', like \(exampleAppID)")
            }
            if let first = element.unicodeScalars.first, isASCIIDigit(first) {
                throw .invalidArgument("app id '\(prefix(s))' has the element '\(prefix(String(element)))', which starts with a digit; elements must not start with a digit (prefix it with a letter or '_'), like \(exampleAppID)")
            }
        }
    }

    /// Checks a URL scheme against RFC 3986 (`ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )`)
    /// and returns it lowercased (schemes are case-insensitive).
    public static func scheme(_ s: String) throws(HostError) -> String {
        let rule = "a scheme is an ASCII letter followed by letters, digits, '+', '-' or '.' (RFC 3986), like 'tapme' or 'https'"
        guard let first = s.unicodeScalars.first else {
            throw .invalidArgument("URL scheme must not be empty; \(rule)")
        }
        if s.hasSuffix(":") || s.hasSuffix("://") {
            throw .invalidArgument("URL scheme '\(prefix(s))' must be given without ':' or '//'; \(rule)")
        }
        if !isASCIILetter(first) {
            throw .invalidArgument("URL scheme '\(prefix(s))' must start with an ASCII letter; \(rule)")
        }
        for scalar in s.unicodeScalars where !(isASCIIAlphanumeric(scalar) || scalar == "+" || scalar == "-" || scalar == ".") {
            throw .invalidArgument("URL scheme '\(prefix(s))' contains \(quoted(scalar)), which is not allowed; \(rule)")
        }
        return s.lowercased()
    }

    /// Checks a D-Bus object path: starts with `/`; elements separated by `/` are
    /// non-empty and contain only ASCII letters, digits and `_`; no trailing `/`
    /// except for the root path `/`.
    public static func objectPath(_ s: String) throws(HostError) {
        let example = "like /org/example/TapMe"
        if s.isEmpty {
            throw .invalidArgument("object path must not be empty; give an absolute path \(example)")
        }
        if !s.hasPrefix("/") {
            throw .invalidArgument("object path '\(prefix(s))' must start with '/', \(example)")
        }
        if s == "/" { return }
        if s.hasSuffix("/") {
            throw .invalidArgument("object path '\(prefix(s))' must not end with '/' (only the root path '/' may); \(example)")
        }
        for element in s.dropFirst().split(separator: "/", omittingEmptySubsequences: false) {
            if element.isEmpty {
                throw .invalidArgument("object path '\(prefix(s))' has an empty element ('//'); separate elements with a single '/', \(example)")
            }
            for scalar in element.unicodeScalars where !(isASCIIAlphanumeric(scalar) || scalar == "_") {
                throw .invalidArgument("object path '\(prefix(s))' contains \(quoted(scalar)), which is not allowed; elements may contain only ASCII letters, digits and '_', \(example)")
            }
        }
    }

    /// Checks a GAction name: non-empty, only ASCII letters, digits, `.` and `-`.
    public static func actionName(_ s: String, what: String = "action name") throws(HostError) {
        let rule = "an action name is non-empty and contains only ASCII letters, digits, '.' and '-', like 'continue-activity'"
        if s.isEmpty {
            throw .invalidArgument("\(what) must not be empty; \(rule)")
        }
        for scalar in s.unicodeScalars where !(isASCIIAlphanumeric(scalar) || scalar == "." || scalar == "-") {
            throw .invalidArgument("\(what) '\(prefix(s))' contains \(quoted(scalar)), which is not allowed; \(rule)")
        }
    }

    /// The default handler object path of an app: `/` + `appID` with `.` → `/` and `-` → `_`
    /// (`org.example.Tap-Me` → `/org/example/Tap_Me`). `appID` must be valid.
    public static func busNameElementsPath(appID: String) -> String {
        var path = "/"
        path.reserveCapacity(appID.utf8.count + 1)
        for ch in appID {
            switch ch {
            case ".": path.append("/")
            case "-": path.append("_")
            default: path.append(ch)
            }
        }
        return path
    }

    // MARK: - Character classes

    /// `InvalidArgument` when a value of `values` holds a NaN or infinite double,
    /// or a value of a type the host does not keep, naming where (`what` names
    /// the dictionary, e.g. "configuration").
    public static func storable(_ values: [String: OptionValue], _ what: String) throws(HostError) {
        for key in values.keys.sorted() {
            if let path = values[key]!.nonFinitePath {
                throw .invalidArgument(
                    "\(what) value '\(prefix(key, 32))\(path)' is not a finite number (NaN and infinities cannot be stored or sent to renderers); send a finite double, or leave the value out")
            }
            if let part = values[key]!.unmarshallablePart(as: "v") {
                throw .invalidArgument(
                    "\(what) value '\(prefix(key, 32))' holds \(OptionValue.describe(signature: part)), which the host does not keep (it could be stored only as nothing); use strings (s), object paths (o), booleans (b), integers, doubles (d), arrays of these, and dictionaries (a{sv})")
            }
        }
    }

    /// At most the first 64 characters of a value for an error message, with
    /// "…" when cut: a hostile value is never echoed back whole.
    public static func prefix(_ s: String, _ count: Int = 64) -> String {
        // Never walks a hostile string further than the prefix.
        s.index(s.startIndex, offsetBy: count, limitedBy: s.endIndex).map { $0 == s.endIndex ? s : String(s[..<$0]) + "…" } ?? s
    }

    static func isASCIILetter(_ c: Unicode.Scalar) -> Bool {
        ("a"..."z").contains(c) || ("A"..."Z").contains(c)
    }

    static func isASCIIDigit(_ c: Unicode.Scalar) -> Bool {
        ("0"..."9").contains(c)
    }

    static func isASCIIAlphanumeric(_ c: Unicode.Scalar) -> Bool {
        isASCIILetter(c) || isASCIIDigit(c)
    }

    /// `'x'` for printable characters, `U+0009` for control characters.
    static func quoted(_ c: Unicode.Scalar) -> String {
        if c.properties.generalCategory == .control {
            return "U+" + String(c.value, radix: 16, uppercase: true).leftPadded(to: 4)
        }
        return "'\(c)'"
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
