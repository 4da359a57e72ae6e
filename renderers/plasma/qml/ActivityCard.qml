// A Live Activity where there is room for it (the applet on the desktop, the
// panel applet's popup): its compact presentations as a header, which a click
// taps as the panel's does, over its expanded presentation, where links,
// buttons and toggles work as on a widget (CONTRACT §5).
import QtQuick 2.15

import "Activity.js" as A
import "Vocabulary.js" as V
import "Keyboard.js" as Keyboard

Rectangle {
    id: card

    property var host
    property string path
    property string appId
    property string content
    property string activityState
    property var contentState: ({})
    property var attributes: ({})
    property bool dark: false

    readonly property var presentations: A.presentations(content)
    readonly property var bindings: A.bindings(contentState, attributes)
    readonly property var scope: ({
        dark: dark, mono: false, bindings: bindings, foreground: dark ? "#f2f2f7" : "#1c1c1e", cornerRadius: 0,
        owner: card,
    })

    /** A link, button or toggle of the expanded presentation, activated by the keyboard or an assistive technology. */
    function activateElement(elementId, item) {
        tap("expanded", elementId, item);
    }

    function tap(presentation, elementId, item) {
        host.tap(path, presentation, elementId, item || card);
    }

    width: V.familySize("systemMedium")[0]
    height: column.implicitHeight + 24
    radius: 22
    color: dark ? "#2c2c2e" : "#ffffff"
    opacity: A.dimmed(activityState) ? 0.6 : 1

    Column {
        id: column
        x: 12
        y: 12
        width: card.width - 24
        spacing: 10

        Item {
            id: header
            width: parent.width
            height: Math.max(20, sides.implicitHeight)
            activeFocusOnTab: true
            Accessible.role: Accessible.Button
            Accessible.name: A.compactName(card.presentations, card.bindings, card.appId)
            Accessible.focusable: true
            Accessible.onPressAction: card.tap("compactLeading", "", header)
            Keys.onPressed: (event) => {
                if (Keyboard.activates(event)) {
                    card.tap("compactLeading", "", header);
                    event.accepted = true;
                }
            }

            CompactSides {
                id: sides
                anchors.fill: parent
                presentations: card.presentations
                scope: card.scope
            }
            MouseArea {
                anchors.fill: parent
                cursorShape: Qt.PointingHandCursor
                onClicked: (mouse) => {
                    var hit = sides.tapAt(mouse.x, mouse.y);
                    card.tap(hit[0], hit[1], header);
                }
            }
        }
        Item {
            width: parent.width
            height: expanded.implicitHeight
            visible: card.presentations.expanded !== undefined

            Drawing {
                id: expanded
                anchors.fill: parent
                tree: card.presentations.expanded || null
                scope: card.scope
            }
            MouseArea {
                anchors.fill: parent
                cursorShape: Qt.PointingHandCursor
                onClicked: (mouse) => card.tap("expanded", expanded.elementIdAt(mouse.x, mouse.y), expanded)
            }
        }
    }
    Feedback {
        id: feedback
        anchors.horizontalCenter: parent.horizontalCenter
        anchors.bottom: parent.bottom
        anchors.bottomMargin: 6
    }
    Connections {
        target: card.host
        function onTapped(path, outcome, message) {
            if (path === card.path && message)
                feedback.show(message);
        }
    }
}
