/// A D-Bus error: a name like `org.freedesktop.DBus.Error.InvalidArgs` and a
/// human-readable message. Thrown by calls whose reply is an error, and thrown
/// by method handlers to reply with an error.
public struct DBusError: Error, Sendable, Equatable, CustomStringConvertible {
    public var name: String
    public var message: String

    public init(name: String, message: String) {
        self.name = name
        self.message = message
    }

    public var description: String { "\(name): \(message)" }

    // Standard names used by the binding.
    public static let failedName = "org.freedesktop.DBus.Error.Failed"
    public static let invalidArgsName = "org.freedesktop.DBus.Error.InvalidArgs"
    public static let unknownMethodName = "org.freedesktop.DBus.Error.UnknownMethod"
    public static let unknownObjectName = "org.freedesktop.DBus.Error.UnknownObject"
    public static let unknownInterfaceName = "org.freedesktop.DBus.Error.UnknownInterface"
    public static let unknownPropertyName = "org.freedesktop.DBus.Error.UnknownProperty"
    public static let propertyReadOnlyName = "org.freedesktop.DBus.Error.PropertyReadOnly"
    public static let noReplyName = "org.freedesktop.DBus.Error.NoReply"
    public static let disconnectedName = "org.freedesktop.DBus.Error.Disconnected"
    public static let noMemoryName = "org.freedesktop.DBus.Error.NoMemory"
    public static let serviceUnknownName = "org.freedesktop.DBus.Error.ServiceUnknown"
    public static let nameHasNoOwnerName = "org.freedesktop.DBus.Error.NameHasNoOwner"
    public static let limitsExceededName = "org.freedesktop.DBus.Error.LimitsExceeded"

    public static func failed(_ message: String) -> DBusError { DBusError(name: failedName, message: message) }
    public static func invalidArgs(_ message: String) -> DBusError { DBusError(name: invalidArgsName, message: message) }
    public static func disconnected(_ message: String = "The connection to the bus is closed") -> DBusError {
        DBusError(name: disconnectedName, message: message)
    }
    public static func limitsExceeded(_ message: String) -> DBusError { DBusError(name: limitsExceededName, message: message) }
    public static let noMemory = DBusError(name: noMemoryName, message: "libdbus could not allocate memory")
}

/// A value could not be put into or taken out of a message.
public struct DBusEncodingError: Error, Sendable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// What D-Bus allows in one message (the specification's maximums). A peer,
/// dbus-daemon first, drops the connection that sends more, so `Message`
/// refuses to carry more with `org.freedesktop.DBus.Error.LimitsExceeded`.
public enum MessageLimits {
    /// The most bytes one array may hold (64 MiB).
    public static let maxArrayBytes = 64 << 20
    /// The most bytes one message may take, header and body (128 MiB).
    public static let maxMessageBytes = 128 << 20
    /// The most bytes a body may take: room is left for the largest header.
    public static let maxBodyBytes = maxMessageBytes - (64 << 10)
}

/// How much reading a call may build (``Message/arguments(within:)``): a
/// service answers a call over them with an error instead of reading it whole.
public struct DecodingLimits: Sendable, Equatable {
    /// Entries of one array or dictionary, and values of one structure.
    public var maxContainerEntries: Int
    /// Bytes the keys and values of one `a{sv}` hold, nested ones included.
    public var maxDictionaryBytes: Int
    /// The error name calls over the limits are answered with.
    public var errorName: String
    /// How a message names each limit to the caller (an option that sets it, say).
    public var entriesName: String?
    public var bytesName: String?

    public init(
        maxContainerEntries: Int = .max, maxDictionaryBytes: Int = .max, errorName: String = DBusError.limitsExceededName,
        entriesName: String? = nil, bytesName: String? = nil
    ) {
        self.maxContainerEntries = maxContainerEntries
        self.maxDictionaryBytes = maxDictionaryBytes
        self.errorName = errorName
        self.entriesName = entriesName
        self.bytesName = bytesName
    }

    /// No limit but D-Bus's own.
    public static let none = DecodingLimits()
}

/// A call over its ``DecodingLimits``; the message says which.
public struct DecodingLimitExceeded: Error, Sendable, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
