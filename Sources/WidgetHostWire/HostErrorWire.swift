import DBus
import WidgetHostCore

/// The model's errors on the bus: `org.widgethost.Host1.Error.<Name>` (docs/errors.md).
extension HostError: DBusErrorConvertible {
    /// The prefix of every WidgetHost D-Bus error name.
    public static let dbusErrorPrefix = "org.widgethost.Host1.Error."

    /// The full D-Bus error name, e.g. `org.widgethost.Host1.Error.InvalidArgument`.
    public var dbusName: String { Self.dbusErrorPrefix + name.rawValue }

    public var dbusError: DBusError { DBusError(name: dbusName, message: message) }
}
