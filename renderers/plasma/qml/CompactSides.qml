// A Live Activity's compact presentations side by side, compactLeading then
// compactTrailing, as a phone's island shows them; `tapAt` says which one a
// click hit and the innermost element with an id there.
import QtQuick 2.15

Item {
    id: sides

    property var presentations: ({})
    property var scope: ({})
    property real spacing: 10

    /** [presentation, element id] for a click at x, y (in this item). */
    function tapAt(x, y) {
        var side = x >= trailing.x ? trailing : leading;
        var point = sides.mapToItem(side, x, y);
        return [side === trailing ? "compactTrailing" : "compactLeading", side.elementIdAt(point.x, point.y)];
    }

    implicitWidth: leading.implicitWidth + spacing + trailing.implicitWidth
    implicitHeight: Math.max(leading.implicitHeight, trailing.implicitHeight)

    Drawing {
        id: leading
        anchors.left: parent.left
        anchors.verticalCenter: parent.verticalCenter
        width: implicitWidth
        height: implicitHeight
        tree: sides.presentations.compactLeading || null
        scope: sides.scope
    }
    Drawing {
        id: trailing
        anchors.right: parent.right
        anchors.verticalCenter: parent.verticalCenter
        width: implicitWidth
        height: implicitHeight
        tree: sides.presentations.compactTrailing || null
        scope: sides.scope
    }
}
