/// The ids the host mints for widgets (`w1`, `w2`, …) and Live Activities
/// (`a1`, …): a letter and a number that grows with each one, never reused.
public enum MintedID {
    /// The number of `id` minted with `prefix`; 0 for anything else.
    public static func number(_ id: String, prefix: Character) -> UInt64 {
        guard id.first == prefix else { return 0 }
        return UInt64(id.dropFirst()) ?? 0
    }

    /// The number minted after `number`; the largest number stays the largest.
    public static func after(_ number: UInt64) -> UInt64 { number == .max ? .max : number + 1 }

    /// Mint order: `w2` before `w10`.
    public static func areInOrder(_ a: String, _ b: String) -> Bool {
        a.utf8.count != b.utf8.count ? a.utf8.count < b.utf8.count : a < b
    }
}

/// The highest minted ids named anywhere in some bytes — damaged lines, files
/// kept aside — so that none of them is minted again. An id is a JSON string
/// holding nothing else: `"w7"`, `"a3"`; the bytes need not be JSON, or whole.
///
/// A number past ``plausible`` is passed over: no host mints that many, and a
/// string an app or renderer chose must not bring minting near overflow.
public struct MintedIDScan: Sendable, Equatable {
    public static let plausible: UInt64 = 1 << 40

    /// The highest widget number named, 0 for none.
    public private(set) var widget: UInt64 = 0
    /// The highest Live Activity number named, 0 for none.
    public private(set) var activity: UInt64 = 0

    private enum Position: Sendable, Equatable {
        case outside
        case afterQuote
        case afterPrefix(UInt8)
        case inNumber(UInt8, UInt64)
    }
    private var position = Position.outside

    public init() {}

    /// Reads `bytes`, which go on from those read before (a file read in pieces).
    public mutating func scan(_ bytes: some Sequence<UInt8>) {
        let quote = UInt8(ascii: "\"")
        for byte in bytes {
            switch position {
            case .afterQuote where byte == UInt8(ascii: "w") || byte == UInt8(ascii: "a"):
                position = .afterPrefix(byte)
            case .afterPrefix(let prefix) where Self.digit(byte) != nil:
                position = .inNumber(prefix, Self.digit(byte)!)
            case .inNumber(let prefix, let number) where Self.digit(byte) != nil:
                let (times, overflow) = number.multipliedReportingOverflow(by: 10)
                position = overflow || times > Self.plausible ? .outside : .inNumber(prefix, times + Self.digit(byte)!)
            case .inNumber(let prefix, let number) where byte == quote:
                if number <= Self.plausible {
                    if prefix == UInt8(ascii: "w") { widget = max(widget, number) } else { activity = max(activity, number) }
                }
                position = .afterQuote
            default:
                position = byte == quote ? .afterQuote : .outside
            }
        }
    }

    /// Ends a piece of text: an id is never read across two of them.
    public mutating func end() { position = .outside }

    private static func digit(_ byte: UInt8) -> UInt64? {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") ? UInt64(byte - UInt8(ascii: "0")) : nil
    }
}
