// The children of a vstack or an hstack (and of a color, a link, a button or a
// toggle, which hold theirs as a vstack does), laid out as
// docs/vocabulary.md says: in order along the stack's axis, `spacing` apart,
// lined up across it as `alignment` says; those greedy along the axis
// (a spacer, a stack a spacer stretches) share the room left over, and those
// greedy across it (a color, a bar, a divider) fill it across.
import QtQuick 2.15
import QtQuick.Layouts 1.15

import "Vocabulary.js" as V

GridLayout {
    id: stack

    /** The elements to lay out. */
    property var items: []
    property bool vertical: true
    /** The stack's `alignment`: where its children sit across it. */
    property string alignment: ""
    property real spacing: V.defaultOf("vstack", "spacing")
    /** What the elements draw with (see Element.qml). */
    property var scope: ({})
    property int depth: 0
    /** The most width a child may take. */
    property real room: 0

    readonly property string axis: vertical ? "y" : "x"
    readonly property string place: V.place(alignment) || "center"

    flow: vertical ? GridLayout.TopToBottom : GridLayout.LeftToRight
    rows: vertical ? Math.max(1, items.length) : 1
    columns: vertical ? 1 : Math.max(1, items.length)
    rowSpacing: Math.max(0, spacing)
    columnSpacing: Math.max(0, spacing)

    Repeater {
        model: stack.items

        Loader {
            readonly property string type: V.drawnType(modelData)
            readonly property bool alongGreedy: V.greedy(modelData, stack.axis, stack.axis)
            readonly property bool acrossGreedy: type === "divider" || stack.place === "fill"
                || V.greedy(modelData, stack.vertical ? "x" : "y", stack.axis)
            readonly property real minimumLength: type === "spacer" ? Math.max(0, V.number(modelData.minLength, V.defaultOf("spacer", "minLength"))) : 0

            Layout.fillWidth: stack.vertical ? acrossGreedy : alongGreedy
            Layout.fillHeight: stack.vertical ? alongGreedy : acrossGreedy
            Layout.minimumWidth: stack.vertical ? -1 : minimumLength
            Layout.minimumHeight: stack.vertical ? minimumLength : -1
            Layout.maximumWidth: stack.room > 0 ? stack.room : Number.POSITIVE_INFINITY
            Layout.alignment: stack.vertical
                ? (stack.place === "start" ? Qt.AlignLeft : stack.place === "end" ? Qt.AlignRight : Qt.AlignHCenter) | Qt.AlignVCenter
                : (stack.place === "start" ? Qt.AlignTop : stack.place === "end" ? Qt.AlignBottom : Qt.AlignVCenter) | Qt.AlignHCenter

            // Element.qml holds stacks, so it comes by URL: QML makes no type out of itself.
            Component.onCompleted: setSource("Element.qml", {
                element: modelData, scope: stack.scope, depth: stack.depth + 1, along: stack.axis, room: stack.room,
            })
        }
    }
}
