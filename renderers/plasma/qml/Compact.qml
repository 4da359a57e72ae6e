// The applet in a panel: the most relevant Live Activity as a pill (Pill.qml),
// and the applet's own button, which opens the full representation (the
// widgets and every activity's expanded presentation) as a popup.
import QtQuick 2.15
import QtQuick.Layouts 1.15
import "Keyboard.js" as Keyboard

Item {
    id: compact

    property var host
    /** Whether the panel is dark, and the colour of its text: a pill's text takes it. */
    property bool dark: false
    property color textColour: dark ? "#fcfcfc" : "#232629"
    /** The applet's button was pressed: the popup opens or closes. */
    signal toggled()

    Layout.minimumWidth: row.implicitWidth
    Layout.preferredWidth: row.implicitWidth
    implicitWidth: row.implicitWidth
    implicitHeight: 24

    Row {
        id: row
        anchors.verticalCenter: parent.verticalCenter
        height: parent.height
        spacing: 4

        Repeater {
            model: compact.host.activities

            Pill {
                // The most relevant one: the first.
                visible: index === 0
                anchors.verticalCenter: parent.verticalCenter
                height: Math.min(implicitHeight, row.height)
                host: compact.host
                dark: compact.dark
                textColour: compact.textColour
                path: model.path
                appId: model.appId
                content: model.content
                activityState: model.state
                contentState: model.contentState
                attributes: model.attributes
            }
        }
        Item {
            id: button
            width: Math.max(16, row.height)
            height: row.height
            activeFocusOnTab: true
            Accessible.role: Accessible.Button
            Accessible.name: "Show Widgets"
            Accessible.focusable: true
            Accessible.onPressAction: compact.toggled()
            Keys.onPressed: (event) => {
                if (Keyboard.activates(event)) {
                    compact.toggled();
                    event.accepted = true;
                }
            }

            Icon {
                anchors.centerIn: parent
                width: Math.min(parent.height, 22)
                height: width
                source: "view-grid-symbolic"
                color: compact.textColour
                active: mouse.containsMouse
            }
            MouseArea {
                id: mouse
                anchors.fill: parent
                hoverEnabled: true
                onClicked: compact.toggled()
            }
        }
    }
}
