// The Swift of every D-Bus interface WidgetHost serves or calls is generated
// into this module at build time from its XML (dbus/*.xml, and the peers'
// interfaces in this folder) by the DBusCodegen plugin; see docs/interfaces.md.
