#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A key given more than once in one JSON object. RFC 8259 leaves the meaning
/// of such an object to the parser and I-JSON (RFC 7493) forbids it: this host's
/// decoder keeps the first value while GLib, Python and JavaScript — every
/// renderer — keep the last, so one document could show one URL and open another.
public struct JSONDuplicateKey: Sendable, Equatable {
    /// Where the object is, like `$.children[2]`.
    public var path: String
    public var key: String

    /// `InvalidContent`'s message, for the document named `what` ("content", "the bundle").
    public func message(in what: String) -> String {
        "\(what): \(path) has the key '\(Validate.prefix(key, 32))' more than once; parsers disagree on which value counts (renderers keep the last), so give each key once"
    }
}

extension JSONValue {
    /// Decodes JSON text and lists every key given twice in one object, in the
    /// order they appear. Throws what the decoder throws for text that is not JSON.
    public static func decode(_ text: String) throws -> (value: JSONValue, duplicateKeys: [JSONDuplicateKey]) {
        let value = try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
        return (value, duplicateKeys(in: text))
    }

    /// Every key given twice in one object of `text`, which must be valid JSON:
    /// one pass over the bytes, a set of keys per open object.
    static func duplicateKeys(in text: String) -> [JSONDuplicateKey] {
        struct Frame {
            var path: String
            var isObject: Bool
            var keys: Set<String> = []
            var expectingKey = true
            var key = ""
            var index = 0
            var childPath: String { isObject ? path + "." + Validate.prefix(key, 32) : path + "[\(index)]" }
        }
        var found: [JSONDuplicateKey] = []
        var stack: [Frame] = []
        let bytes = Array(text.utf8)
        var i = 0
        while i < bytes.count {
            switch bytes[i] {
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                stack.append(Frame(path: stack.last?.childPath ?? "$", isObject: bytes[i] == UInt8(ascii: "{")))
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                stack.removeLast()
            case UInt8(ascii: ","):
                if stack[stack.count - 1].isObject { stack[stack.count - 1].expectingKey = true } else { stack[stack.count - 1].index += 1 }
            case UInt8(ascii: ":"):
                stack[stack.count - 1].expectingKey = false
            case UInt8(ascii: "\""):
                // A string: find its closing quote, skipping escapes.
                let start = i
                var escaped = false
                i += 1
                while i < bytes.count {
                    if escaped { escaped = false } else if bytes[i] == UInt8(ascii: "\\") { escaped = true } else if bytes[i] == UInt8(ascii: "\"") { break }
                    i += 1
                }
                guard let top = stack.last, top.isObject, top.expectingKey else { break }
                let token = bytes[start...i]
                // Escapes spell the same key in other ways ("a" and "\u0061"): compare decoded keys.
                let key =
                    token.contains(UInt8(ascii: "\\"))
                    ? (try? JSONDecoder().decode(String.self, from: Data(token))) ?? String(decoding: token, as: UTF8.self)
                    : String(decoding: token.dropFirst().dropLast(), as: UTF8.self)
                if !stack[stack.count - 1].keys.insert(key).inserted { found.append(JSONDuplicateKey(path: top.path, key: key)) }
                stack[stack.count - 1].key = key
            default:
                break
            }
            i += 1
        }
        return found
    }
}
