/// One method's `a{sv}` options, as a struct generated from the annotations
/// on the argument in its interface's XML (docs/interfaces.md#options): the
/// keys, their types, ranges and defaults are declared there once. Every
/// method's options are read the same way: an unknown key, a value of another
/// type than declared, an integer out of its range or a number that is not
/// finite is `InvalidArgument` saying what to send.
public protocol MethodOptions: Sendable, Equatable {
    /// The methods that take these options, for messages: `"Tap and Resolve"`.
    static var methods: String { get }
    /// `interface.Method` of every method that takes them.
    static var members: [String] { get }
    /// Every key, in declared order.
    static var declared: [DeclaredOption] { get }
    /// Reads `values`, each converted by `convert` only when its key is
    /// declared: a caller holding D-Bus values converts nothing it does not use.
    init<Value>(_ values: [String: Value], as convert: (Value) -> OptionValue) throws(HostError)
}

extension MethodOptions {
    /// Reads options the model holds already.
    public init(_ values: [String: OptionValue]) throws(HostError) {
        try self.init(values, as: { $0 })
    }

    /// `"surface (s), activation_token (s)"`, for messages.
    public static var described: String {
        declared.map { "\($0.key) (\($0.signature))" }.joined(separator: ", ")
    }
}

/// One key of a method's `a{sv}` options, as the XML declares it with the
/// `org.widgethost.Option.<key>` annotations (docs/interfaces.md#options).
public struct DeclaredOption: Sendable, Equatable {
    public let key: String
    /// The D-Bus signature of its value. `x` takes any integer type, `d` any
    /// number type, so that a caller never has to pick the exact width.
    public let signature: String
    /// The integers an `x` key may hold (`.Range`); nil is any `Int64`.
    public let range: ClosedRange<Int64>?
    /// What an `x` key counts, for messages (`.Unit`), e.g. `Unix seconds`.
    public let unit: String?
    /// The value an absent key stands for (`.Default`), as the XML writes it
    /// (GVariant text: `0`, `'desktop'`); nil when absence means something
    /// the method documents (keep the current value, the desktop entry's).
    public let defaultValue: String?

    public init(_ key: String, _ signature: String, range: ClosedRange<Int64>? = nil, unit: String? = nil, default defaultValue: String? = nil) {
        self.key = key
        self.signature = signature
        self.range = range
        self.unit = unit
        self.defaultValue = defaultValue
    }

    /// `"Unix seconds from 0 to 253402300799"`: what to send, for messages.
    var accepted: String {
        let range = range ?? Int64.min...Int64.max
        return "\(unit ?? "an integer") from \(range.lowerBound) to \(range.upperBound)"
    }
}

/// The values of one method's declared keys, read for a generated options
/// struct: each reader answers nil for an absent key, the value when it has
/// the declared type, and `InvalidArgument` naming the key otherwise.
public struct OptionReading {
    let declared: [DeclaredOption]
    /// The value of each declared key, in declared order.
    let values: [OptionValue?]

    /// Refuses keys that `Options` does not declare, before converting anything.
    public init<Options: MethodOptions, Value>(_ given: [String: Value], as convert: (Value) -> OptionValue, for _: Options.Type) throws(HostError) {
        declared = Options.declared
        let unknown = given.keys.filter { key in !Options.declared.contains { $0.key == key } }.sorted()
        guard unknown.isEmpty else {
            let list = unknown.map { "'\($0)'" }.joined(separator: ", ")
            let one = unknown.count == 1
            throw .invalidArgument(
                "unknown \(one ? "option" : "options") \(list) for \(Options.methods); remove \(one ? "it" : "them") — its options are \(Options.described)")
        }
        values = Options.declared.map { given[$0.key].map(convert) }
    }

    public func string(_ index: Int) throws(HostError) -> String? {
        try read(index) { $0.stringValue }
    }

    public func objectPath(_ index: Int) throws(HostError) -> String? {
        try read(index) { $0.objectPathValue }
    }

    public func strings(_ index: Int) throws(HostError) -> [String]? {
        try read(index) { $0.stringArrayValue }
    }

    public func dictionary(_ index: Int) throws(HostError) -> [String: OptionValue]? {
        try read(index) { if case .dict(let d) = $0 { d } else { nil } }
    }

    /// Any integer type, within the declared range.
    public func integer(_ index: Int) throws(HostError) -> Int64? {
        guard let value = values[index] else { return nil }
        let option = declared[index]
        let range = option.range ?? Int64.min...Int64.max
        let integer: Int64?
        switch value {
        case .int(let i): integer = range.contains(i) ? i : nil
        case .uint(let u): integer = u <= UInt64(Int64.max) && range.contains(Int64(u)) ? Int64(u) : nil
        default: throw typeError(index, got: value.signature)
        }
        guard let integer else {
            throw .invalidArgument("option '\(option.key)' is \(value.number), which is out of range; give \(option.accepted)")
        }
        return integer
    }

    /// A finite number, as `d` or any integer type.
    public func number(_ index: Int) throws(HostError) -> Double? {
        guard
            let number = try read(index, {
                switch $0 {
                case .double(let d): d
                case .int(let i): Double(i)
                case .uint(let u): Double(u)
                default: nil
                }
            })
        else { return nil }
        guard number.isFinite else {
            throw .invalidArgument("option '\(declared[index].key)' is \(number); it must be a finite number, such as 0 or 0.5")
        }
        return number
    }

    /// The value of declared key `index` through `convert`; nil when absent, `InvalidArgument` when `convert` refuses it.
    private func read<T>(_ index: Int, _ convert: (OptionValue) -> T?) throws(HostError) -> T? {
        guard let value = values[index] else { return nil }
        guard let converted = convert(value) else { throw typeError(index, got: value.signature) }
        return converted
    }

    /// Declared key `index` has a value of signature `got`: the message says
    /// what to send instead (for an integer, the range too).
    private func typeError(_ index: Int, got: String) -> HostError {
        let option = declared[index]
        let range = option.signature == "x" && (option.range != nil || option.unit != nil) ? "; give \(option.accepted)" : ""
        return .invalidArgument("option '\(option.key)' must be \(OptionValue.describe(signature: option.signature)), got \(got)\(range)")
    }
}

extension OptionValue {
    /// An integer's digits, for messages.
    fileprivate var number: String {
        switch self {
        case .int(let i): "\(i)"
        case .uint(let u): "\(u)"
        default: signature
        }
    }
}
