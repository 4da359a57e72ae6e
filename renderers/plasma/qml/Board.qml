// The applet's full representation: on the desktop, and in the popup of the
// panel applet. Every Live Activity (most relevant first) as a card with its
// compact and expanded presentations, then every placed widget at its
// family's size, in the order the host placed them, flowing left to right,
// row after row; all following the host live. Add Widget… opens the gallery. Light or dark as the root says
// (from the Plasma theme of its version).
import QtQuick 2.15
import QtQuick.Controls 2.15
import QtQuick.Layouts 1.15

Item {
    id: board

    property var host
    /** Add Widget… was pressed: the root opens the gallery (the applet's configuration page). */
    signal addRequested()
    /** Room around and between the widgets. */
    property real spacing: 18
    /** Whether the colour scheme is dark: tiles are drawn dark then. */
    property bool dark: false
    /** The colour scheme's text colour, for what the board says itself. */
    property color textColour: dark ? "#fcfcfc" : "#232629"
    readonly property bool empty: host.widgets.count === 0 && host.activities.count === 0

    Accessible.role: Accessible.Pane
    Accessible.name: "WidgetHost"
    Layout.minimumWidth: 364 + 2 * spacing
    Layout.minimumHeight: 170 + 2 * spacing
    Layout.preferredWidth: 768 + 2 * spacing
    Layout.preferredHeight: 780

    Flickable {
        anchors.fill: parent
        anchors.margins: board.spacing
        contentWidth: width
        contentHeight: column.implicitHeight
        interactive: contentHeight > height
        boundsBehavior: Flickable.StopAtBounds
        clip: true

        Column {
            id: column
            width: parent.width
            spacing: board.spacing

            Repeater {
                model: board.host.activities

                ActivityCard {
                    host: board.host
                    path: model.path
                    appId: model.appId
                    content: model.content
                    activityState: model.state
                    contentState: model.contentState
                    attributes: model.attributes
                    dark: board.dark
                }
            }
            Flow {
                width: parent.width
                spacing: board.spacing

                Repeater {
                    model: board.host.widgets

                    Tile {
                        host: board.host
                        path: model.path
                        widgetId: model.objectId
                        kind: model.kind
                        family: model.family
                        content: model.content
                        dark: board.dark
                    }
                }
            }
            Button {
                text: "Add Widget…"
                icon.name: "list-add"
                visible: board.host.running
                onClicked: board.addRequested()
            }
            Text {
                width: parent.width
                visible: board.empty
                text: board.host.running
                    ? "No widgets yet: add them with Add Widget…"
                    : "WidgetHost is not running: its widgets show once it starts"
                color: board.textColour
                wrapMode: Text.Wrap
                Accessible.role: Accessible.StaticText
                Accessible.name: text
            }
        }
    }
}
