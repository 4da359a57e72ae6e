// The applet's root for Plasma 6: a PlasmoidItem around the representations
// every version shares (Board.qml on the desktop and in the popup,
// Compact.qml in a panel). Untested: Debian 12, where the tests run, has no
// Plasma 6 (docs/plasma.md#plasma-6).
import QtQuick
import org.kde.kirigami as Kirigami
import org.kde.plasma.core as PlasmaCore
import org.kde.plasma.plasmoid
import org.widgethost.plasmoid as WidgetHost

PlasmoidItem {
    id: root

    // Plasma 6 gives applets the Plasma theme as Kirigami.Theme.
    readonly property bool dark: Kirigami.ColorUtils.brightnessForColor(Kirigami.Theme.backgroundColor) === Kirigami.ColorUtils.Dark
    readonly property bool inPanel: Plasmoid.formFactor === PlasmaCore.Types.Horizontal
        || Plasmoid.formFactor === PlasmaCore.Types.Vertical

    function addWidget() {
        Plasmoid.internalAction("configure").trigger();
    }

    preferredRepresentation: inPanel ? compactRepresentation : fullRepresentation
    Plasmoid.backgroundHints: inPanel ? PlasmaCore.Types.DefaultBackground : PlasmaCore.Types.NoBackground
    toolTipMainText: "WidgetHost"
    toolTipSubText: widgetHost.running ? "" : "WidgetHost is not running"
    compactRepresentation: Compact {
        host: widgetHost
        dark: root.dark
        textColour: Kirigami.Theme.textColor
        onToggled: root.expanded = !root.expanded
    }
    fullRepresentation: Board {
        host: widgetHost
        onAddRequested: root.addWidget()
        dark: root.dark
        textColour: Kirigami.Theme.textColor
    }
    Plasmoid.contextualActions: [
        PlasmaCore.Action {
            text: "Add Widget…"
            icon.name: "list-add"
            onTriggered: root.addWidget()
        }
    ]

    WidgetHost.Host {
        id: widgetHost
    }
}
