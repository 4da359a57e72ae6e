// The applet's configuration: one page, the host's gallery (Gallery.qml).
import QtQuick 2.15
import org.kde.plasma.configuration 2.0

ConfigModel {
    ConfigCategory {
        name: "Widgets"
        icon: "view-grid"
        source: "Gallery.qml"
    }
}
