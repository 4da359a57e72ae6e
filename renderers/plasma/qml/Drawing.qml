// A view tree drawn in the room it is given: its root element at its natural
// size, centred, or filling the room along an axis where it is greedy (a
// color, a zstack, a stack a spacer stretches), as widget-board and the GNOME
// Shell extension place it. Drawn afresh whenever the tree or what it is
// drawn with (`scope`, see Element.qml) changes.
import QtQuick 2.15

import "Vocabulary.js" as V

Item {
    id: drawing

    property var tree: null
    property var scope: ({})

    implicitWidth: root.count > 0 && root.itemAt(0) ? root.itemAt(0).implicitWidth : 0
    implicitHeight: root.count > 0 && root.itemAt(0) ? root.itemAt(0).implicitHeight : 0

    /**
     * The id of the innermost element with an id at x, y (in this item), or ""
     * on no element with one: what a click there reports (CONTRACT §3).
     */
    function elementIdAt(x, y) {
        var found = "";
        var item = root.count > 0 ? root.itemAt(0) : null;
        var point = item ? drawing.mapToItem(item, x, y) : null;
        while (item && point && item.contains(Qt.point(point.x, point.y))) {
            if (typeof item.elementId === "string" && item.elementId)
                found = item.elementId;
            var child = item.childAt(point.x, point.y);
            if (!child)
                break;
            point = item.mapToItem(child, point.x, point.y);
            item = child;
        }
        return found;
    }

    Repeater {
        id: root
        // A new array each time: the whole tree is made again, in the new scope.
        model: drawing.tree !== null ? [{tree: drawing.tree, scope: drawing.scope}] : []

        Element {
            readonly property bool fillsX: type === "zstack" || V.greedy(element, "x", "y")
            readonly property bool fillsY: type === "zstack" || V.greedy(element, "y", "y")
            element: modelData.tree
            scope: modelData.scope
            room: drawing.width
            width: fillsX ? drawing.width : Math.min(implicitWidth, drawing.width)
            height: fillsY ? drawing.height : Math.min(implicitHeight, drawing.height)
            x: Math.round((drawing.width - width) / 2)
            y: Math.round((drawing.height - height) / 2)
        }
    }
}
