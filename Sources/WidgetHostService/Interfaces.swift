import DBus
@_exported import WidgetHostWire
import WidgetHostCore

/// The host's names (docs/names.md).
public enum HostNames {
    public static let busName = "org.widgethost.Host1"
    public static let rootPath = "/org/widgethost/Host1"
    public static let apps = "org.widgethost.Host1.Apps"
    public static let app1 = "org.widgethost.App1"
}

/// The interfaces of `dbus/*.xml`, parsed once from the copies the build
/// embeds. These files are the only declaration of every interface.
public enum HostInterfaces {
    /// Every interface file by interface name.
    public static func all() throws -> [String: InterfaceDescription] {
        var result: [String: InterfaceDescription] = [:]
        for (name, xml) in InterfaceXML.files {
            let parsed = try InterfaceDescription.parse(xml: xml)
            guard parsed.count == 1, parsed[0].name == name else {
                throw DBusEncodingError("dbus/\(name).xml must declare exactly the interface \(name)")
            }
            result[name] = parsed[0]
        }
        return result
    }

    /// The text of `dbus/<name>.xml`.
    public static func xml(_ name: String) -> String? { InterfaceXML.files[name] }

    /// The names of the interfaces the host itself serves (the app-side ones are excluded).
    public static var hostInterfaceNames: [String] {
        InterfaceXML.files.keys.filter { $0.hasPrefix("org.widgethost.Host1.") }.sorted()
    }
}

extension HostError: DBusErrorConvertible {
    public var dbusError: DBusError { DBusError(name: dbusName, message: message) }
}
