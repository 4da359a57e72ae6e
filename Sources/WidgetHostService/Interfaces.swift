import DBus
@_exported import WidgetHostInterfaces
@_exported import WidgetHostWire
import WidgetHostCore

extension HostError: DBusErrorConvertible {
    public var dbusError: DBusError { DBusError(name: dbusName, message: message) }
}
