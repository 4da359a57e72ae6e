// A Live Activity in a panel: its compact presentations in a pill, an
// accessible push button named after them. A click taps the presentation it
// hit (so the app opens at the activity's URL), with the innermost element
// with an id there; Enter or Space tap compactLeading.
import QtQuick 2.15

import "Activity.js" as A
import "Keyboard.js" as Keyboard

Rectangle {
    id: pill

    property var host
    property bool dark: false
    property color textColour: dark ? "#fcfcfc" : "#232629"
    property string path
    property string appId
    property string content
    property string activityState
    property var contentState: ({})
    property var attributes: ({})

    readonly property var presentations: A.presentations(content)
    readonly property var bindings: A.bindings(contentState, attributes)

    function tap(presentation, elementId) {
        host.tap(path, presentation, elementId, pill);
    }

    implicitWidth: sides.implicitWidth + 20
    implicitHeight: sides.implicitHeight + 6
    radius: height / 2
    color: Qt.rgba(0.5, 0.5, 0.5, 0.2)
    opacity: A.dimmed(activityState) ? 0.6 : 1
    activeFocusOnTab: true
    Accessible.role: Accessible.Button
    Accessible.name: A.compactName(presentations, bindings, appId)
    Accessible.focusable: true
    Accessible.onPressAction: tap("compactLeading", "")
    Keys.onPressed: (event) => {
        if (Keyboard.activates(event)) {
            tap("compactLeading", "");
            event.accepted = true;
        }
    }

    CompactSides {
        id: sides
        anchors.centerIn: parent
        width: implicitWidth
        height: implicitHeight
        presentations: pill.presentations
        scope: ({
            dark: pill.dark, mono: false, bindings: pill.bindings, foreground: String(pill.textColour), cornerRadius: 0,
            owner: null,  // links and controls are not honoured here: the pill's tap is
        })
    }
    MouseArea {
        anchors.fill: parent
        cursorShape: Qt.PointingHandCursor
        onClicked: (mouse) => {
            var point = mapToItem(sides, mouse.x, mouse.y);
            var hit = sides.tapAt(Math.max(0, Math.min(sides.width - 1, point.x)), point.y);
            pill.tap(hit[0], hit[1]);
        }
    }
}
