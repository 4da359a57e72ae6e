#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One method's `a{sv}` options, read against the keys it declares. An unknown
/// key, or a value of another type than declared, is `InvalidArgument` saying
/// what to send: every method's options are read the same way.
public struct MethodOptions: Sendable {
    /// A method's option keys, each with its D-Bus signature.
    public typealias Declared = [(key: String, signature: String)]

    /// `RegisterApp`.
    public static let registerApp: Declared = [
        ("schemes", "as"),
        ("protocol", "s"),
        ("object_path", "o"),
        ("surfaces", "as"),
        ("live_activity_launch_types", "as"),
        ("user_activity_action", "s"),
        ("provider_path", "o"),
    ]
    /// `Widget.Tap`, `Widget.Resolve` and their Live Activity twins.
    public static let tap: Declared = [("surface", "s"), ("activation_token", "s")]
    /// `Apps.OpenURL`.
    public static let openURL: Declared = [("activation_token", "s")]
    /// `LiveActivities.StartActivity`.
    public static let startActivity: Declared = [("attributes", "a{sv}"), ("state", "a{sv}"), ("stale_date", "x"), ("relevance", "d")]
    /// `LiveActivity.Update`.
    public static let updateActivity: Declared = [("state", "a{sv}"), ("stale_date", "x"), ("relevance", "d")]
    /// `LiveActivity.End`.
    public static let endActivity: Declared = [("dismissal", "s"), ("dismissal_date", "x"), ("content", "s"), ("state", "a{sv}")]

    public let values: [String: OptionValue]
    public let declared: Declared

    /// Checks that `values` holds only keys of `declared`; `method` names the
    /// method in the message.
    public init(_ values: [String: OptionValue], declared: Declared, method: String) throws(HostError) {
        try Self.check(keys: values.keys, declared: declared, method: method)
        self.values = values
        self.declared = declared
    }

    /// Checks that `keys` are all among `declared`, for a caller that reads
    /// values in another form (a tap reads its D-Bus values as given).
    public static func check(keys: some Collection<String>, declared: Declared, method: String) throws(HostError) {
        let unknown = keys.filter { key in !declared.contains { $0.key == key } }.sorted()
        guard !unknown.isEmpty else { return }
        let list = unknown.map { "'\($0)'" }.joined(separator: ", ")
        let noun = unknown.count == 1 ? "option" : "options"
        throw .invalidArgument(
            "unknown \(noun) \(list) for \(method); remove \(unknown.count == 1 ? "it" : "them") — its options are \(describe(declared))")
    }

    /// `key`'s value has signature `got` where `declared` says otherwise.
    public static func typeError(_ key: String, declared: Declared, got: String) -> HostError {
        let expected = declared.first { $0.key == key }?.signature ?? "?"
        return .invalidArgument("option '\(key)' must be \(OptionValue.describe(signature: expected)), got \(got)")
    }

    /// `"surface (s), activation_token (s)"`, for messages.
    public static func describe(_ declared: Declared) -> String {
        declared.map { "\($0.key) (\($0.signature))" }.joined(separator: ", ")
    }

    public func has(_ key: String) -> Bool { values[key] != nil }

    public func string(_ key: String) throws(HostError) -> String? {
        try read(key) { $0.stringValue }
    }

    public func objectPath(_ key: String) throws(HostError) -> String? {
        try read(key) { $0.objectPathValue }
    }

    public func strings(_ key: String) throws(HostError) -> [String]? {
        try read(key) { $0.stringArrayValue }
    }

    public func dictionary(_ key: String) throws(HostError) -> [String: OptionValue]? {
        try read(key) { if case .dict(let d) = $0 { d } else { nil } }
    }

    /// The most Unix seconds a date may be from 1970, either way (about 31
    /// million years). A date further away is none an app means, and its
    /// seconds, or the milliseconds the host keeps it in, could pass what an
    /// `Int64` holds, where converting them from a `Date` traps.
    static let maxUnixSeconds: Int64 = 1_000_000_000_000_000

    /// Unix seconds, as `x` (or any signed integer) or `t`, at most
    /// ``maxUnixSeconds`` from 1970.
    public func date(_ key: String) throws(HostError) -> Date? {
        guard
            let seconds = try read(key, {
                switch $0 {
                case .int(let i): i
                case .uint(let u): Int64(clamping: u)
                default: nil
                }
            })
        else { return nil }
        guard (-Self.maxUnixSeconds...Self.maxUnixSeconds).contains(seconds) else {
            throw .invalidArgument(
                "option '\(key)' is more than \(Self.maxUnixSeconds) seconds from 1970, which is no date; give Unix seconds such as 1700000000")
        }
        return Date(timeIntervalSince1970: TimeInterval(seconds))
    }

    /// A finite number, as `d` or any integer.
    public func number(_ key: String) throws(HostError) -> Double? {
        guard
            let number = try read(key, {
                switch $0 {
                case .double(let d): d
                case .int(let i): Double(i)
                case .uint(let u): Double(u)
                default: nil
                }
            })
        else { return nil }
        guard number.isFinite else {
            throw .invalidArgument("option '\(key)' is \(number); it must be a finite number, such as 0 or 0.5")
        }
        return number
    }

    /// The value of `key` through `convert`; `nil` when absent, `InvalidArgument` when `convert` refuses it.
    private func read<T>(_ key: String, _ convert: (OptionValue) -> T?) throws(HostError) -> T? {
        guard let value = values[key] else { return nil }
        guard let converted = convert(value) else { throw Self.typeError(key, declared: declared, got: value.signature) }
        return converted
    }
}
