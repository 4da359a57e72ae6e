/// An error of the WidgetHost model, named as in docs/errors.md.
///
/// On the bus it is the D-Bus error whose name ends in ``Name`` (WidgetHostWire
/// spells it) with ``message`` as the error message. Every message says what
/// was wrong *and* how to fix it, and quotes the offending value.
public struct HostError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The error names of docs/errors.md; the raw value is the last element of the D-Bus error name.
    public enum Name: String, Sendable, CaseIterable {
        case invalidArgument = "InvalidArgument"
        case unknownApp = "UnknownApp"
        case unknownKind = "UnknownKind"
        case unsupportedFamily = "UnsupportedFamily"
        case unknownElement = "UnknownElement"
        case invalidContent = "InvalidContent"
        case accessDenied = "AccessDenied"
        case activationFailed = "ActivationFailed"
        case limitExceeded = "LimitExceeded"
        case inconsistentLinks = "InconsistentLinks"
        case storageFailed = "StorageFailed"
    }

    /// Which error this is.
    public var name: Name
    /// A human-readable explanation: what was wrong and how to fix it.
    public var message: String

    /// Creates an error with the given name and message.
    public init(_ name: Name, _ message: String) {
        self.name = name
        self.message = message
    }

    /// `"<Name>: <message>"`.
    public var description: String { "\(name.rawValue): \(message)" }

    /// An `InvalidArgument` error.
    public static func invalidArgument(_ m: String) -> HostError { HostError(.invalidArgument, m) }
    /// An `UnknownApp` error.
    public static func unknownApp(_ m: String) -> HostError { HostError(.unknownApp, m) }
    /// An `UnknownKind` error.
    public static func unknownKind(_ m: String) -> HostError { HostError(.unknownKind, m) }
    /// The `UnknownKind` error for an app that has published no widget kinds:
    /// most often an app still starting, so the message says how to wait for it.
    public static func noKinds(appID: String, kind: String) -> HostError {
        .unknownKind(
            "\(appID) has registered no widget kinds yet, so it has no '\(kind)': if the app is starting, wait until it has "
                + "(widget-host wait \(appID) --kinds); otherwise the app must call RegisterWidgets first")
    }
    /// An `UnsupportedFamily` error.
    public static func unsupportedFamily(_ m: String) -> HostError { HostError(.unsupportedFamily, m) }
    /// An `UnknownElement` error.
    public static func unknownElement(_ m: String) -> HostError { HostError(.unknownElement, m) }
    /// An `InvalidContent` error.
    public static func invalidContent(_ m: String) -> HostError { HostError(.invalidContent, m) }
    /// An `AccessDenied` error.
    public static func accessDenied(_ m: String) -> HostError { HostError(.accessDenied, m) }
    /// An `ActivationFailed` error.
    public static func activationFailed(_ m: String) -> HostError { HostError(.activationFailed, m) }
    /// A `LimitExceeded` error.
    public static func limitExceeded(_ m: String) -> HostError { HostError(.limitExceeded, m) }
    /// An `InconsistentLinks` error.
    public static func inconsistentLinks(_ m: String) -> HostError { HostError(.inconsistentLinks, m) }
    /// A `StorageFailed` error.
    public static func storageFailed(_ m: String) -> HostError { HostError(.storageFailed, m) }
}
