import DBus
@_exported import WidgetHostInterfaces
@_exported import WidgetHostWire
