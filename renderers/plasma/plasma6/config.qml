// The applet's configuration: one page, the host's gallery (Gallery.qml).
import QtQuick
import org.kde.plasma.configuration

ConfigModel {
    ConfigCategory {
        name: "Widgets"
        icon: "view-grid"
        source: "Gallery.qml"
    }
}
