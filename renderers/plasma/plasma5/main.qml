// The applet's root for Plasma 5 (5.27): Plasma 5's attached Plasmoid
// properties around the representations every version shares
// (Board.qml on the desktop and in the popup, Compact.qml in a panel).
import QtQuick 2.15
import org.kde.plasma.core 2.0 as PlasmaCore
import org.kde.plasma.plasmoid 2.0
import org.widgethost.plasmoid 1.0 as WidgetHost

Item {
    id: root

    // The Plasma theme's colours: Plasma 5 gives applets PlasmaCore.Theme (its Kirigami.Theme does not follow the scheme).
    readonly property bool dark: (PlasmaCore.Theme.backgroundColor.r * 0.299 + PlasmaCore.Theme.backgroundColor.g * 0.587
        + PlasmaCore.Theme.backgroundColor.b * 0.114) < 0.5
    readonly property bool inPanel: Plasmoid.formFactor === PlasmaCore.Types.Horizontal
        || Plasmoid.formFactor === PlasmaCore.Types.Vertical

    function action_addWidget() {
        Plasmoid.action("configure").trigger();
    }

    Plasmoid.preferredRepresentation: inPanel ? Plasmoid.compactRepresentation : Plasmoid.fullRepresentation
    Plasmoid.backgroundHints: inPanel ? PlasmaCore.Types.DefaultBackground : PlasmaCore.Types.NoBackground
    Plasmoid.toolTipMainText: "WidgetHost"
    Plasmoid.toolTipSubText: widgetHost.running ? "" : "WidgetHost is not running"
    Plasmoid.compactRepresentation: Compact {
        host: widgetHost
        dark: root.dark
        textColour: PlasmaCore.Theme.textColor
        onToggled: Plasmoid.expanded = !Plasmoid.expanded
    }
    Plasmoid.fullRepresentation: Board {
        host: widgetHost
        onAddRequested: root.action_addWidget()
        dark: root.dark
        textColour: PlasmaCore.Theme.textColor
    }
    Component.onCompleted: Plasmoid.setAction("addWidget", "Add Widget…", "list-add")

    WidgetHost.Host {
        id: widgetHost
    }
}
