// One placed widget: a tile of its family's size drawn from its Content, an
// accessible push button named after its tree (docs/vocabulary.md#accessible-names)
// that the keyboard reaches. A click reports the innermost element with an id
// under the pointer; Enter or Space on the widget, or on a link, button or
// toggle in it, report that element; the host is told with a token minted for
// the widget's app (Host.tap).
import QtQuick 2.15

import "Vocabulary.js" as V
import "Keyboard.js" as Keyboard

Item {
    id: tile

    property var host
    property string path
    property string widgetId
    property string kind
    property string family: "systemSmall"
    property string content
    property bool dark: false

    readonly property var size: V.familySize(family)
    readonly property bool mono: V.monochrome(family)
    readonly property var tree: V.parseTree(content)
    readonly property real cornerRadius: mono ? 14 : 22
    readonly property color textColour: mono ? (dark ? "#d1d1d6" : "#3a3a3c") : (dark ? "#f2f2f7" : "#1c1c1e")

    /** Reports a tap on the element `elementId` ("" for the widget itself), clicked in `item`. */
    function tap(elementId, item) {
        host.tap(path, "", elementId, item || tile);
    }

    /** A link, button or toggle in the widget, activated by the keyboard or an assistive technology. */
    function activateElement(elementId, item) {
        tap(elementId, item);
    }

    width: size[0]
    height: size[1]
    activeFocusOnTab: true
    // The declaration's role of a widget, a push button (V.roleName("widget")).
    Accessible.role: V.roleName("widget") === "push button" ? Accessible.Button : Accessible.Pane
    Accessible.name: V.accessibleName(tree, null) || kind || widgetId
    Accessible.focusable: true
    Accessible.onPressAction: tap("", tile)
    Keys.onPressed: (event) => {
        if (Keyboard.activates(event)) {
            tap("", tile);
            event.accepted = true;
        }
    }

    Rectangle {
        anchors.fill: parent
        radius: tile.cornerRadius
        color: tile.mono ? (tile.dark ? "#1c1c1e" : "#e8e8ed") : (tile.dark ? "#2c2c2e" : "#ffffff")
        border.width: tile.activeFocus ? 3 : 0
        border.color: "#3584e4"
    }
    Drawing {
        id: drawing
        anchors.fill: parent
        clip: true
        tree: tile.tree
        scope: ({
            dark: tile.dark, mono: tile.mono, bindings: null, foreground: String(tile.textColour),
            cornerRadius: tile.cornerRadius, owner: tile,
        })
    }
    // Above the drawing: every click is the widget's, and reports what is under the pointer.
    MouseArea {
        anchors.fill: parent
        cursorShape: Qt.PointingHandCursor
        onClicked: (mouse) => tile.tap(drawing.elementIdAt(mouse.x, mouse.y), tile)
    }
    Feedback {
        id: feedback
        anchors.horizontalCenter: parent.horizontalCenter
        anchors.bottom: parent.bottom
        anchors.bottomMargin: 6
    }
    Connections {
        target: tile.host
        function onTapped(path, outcome, message) {
            if (path === tile.path && message)
                feedback.show(message);
        }
    }
}
