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
    public static let cancelledName = "org.widgethost.DBus.Error.Cancelled"

    public static func failed(_ message: String) -> DBusError { DBusError(name: failedName, message: message) }
    public static func invalidArgs(_ message: String) -> DBusError { DBusError(name: invalidArgsName, message: message) }
    public static func disconnected(_ message: String = "The connection to the bus is closed") -> DBusError {
        DBusError(name: disconnectedName, message: message)
    }
    public static let noMemory = DBusError(name: noMemoryName, message: "libdbus could not allocate memory")
}

/// A value could not be put into or taken out of a message.
public struct DBusEncodingError: Error, Sendable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
