// One element of a view tree, drawn as docs/vocabulary.md says, with the
// keys every element may carry (background, padding, cornerRadius, opacity,
// foreground, fontSize, fontWeight) and its type's own. An element with an
// id remembers it in `elementId`: a click reports the innermost one under the
// pointer (Tile.qml). link, button and toggle take the keyboard focus and are
// accessible objects of their role, named as docs/vocabulary.md#accessible-names
// says, so the keyboard and assistive technologies reach them.
import QtQuick 2.15
import QtQuick.Layouts 1.15

import "Vocabulary.js" as V
import "Keyboard.js" as Keyboard

Item {
    id: node

    property var element: ({})
    /**
     * What the elements draw with, handed down the tree: `dark`, `mono` (one
     * colour), `bindings` (a Live Activity's state and attributes), the
     * inherited `foreground`, `fontSize` and `fontWeight`, the widget's
     * `cornerRadius`, and its `owner`, whose `activateElement(id, item)`
     * reports a link, button or toggle activated by the keyboard or an
     * assistive technology. (An item, not a function: the scope goes through
     * models, which keep objects but drop functions.)
     */
    property var scope: ({})
    property int depth: 0
    /** The axis of the stack the element is in: "y" in a vstack (and at the root, in a zstack, on a color), "x" in an hstack. */
    property string along: "y"
    /** The most width it may take: longer text wraps. */
    property real room: 0

    readonly property string type: V.drawnType(element)
    readonly property string elementId: typeof element.id === "string" ? element.id : ""
    readonly property var items: V.children(element)
    readonly property real padding: Math.max(0, V.number(element.padding, 0))
    readonly property bool isTappable: V.tappable(type)
    readonly property bool isOn: type === "toggle" && element.isOn === true
    readonly property string name: V.accessibleName(element, scope.bindings)
    readonly property string ownForeground: scope.mono ? ""
        : (V.colour(element.foreground !== undefined || type !== "text" ? element.foreground : element.color, scope.dark) || "")
    readonly property string background: scope.mono ? "" : (V.colour(element.background, scope.dark) || "")
    /** What the elements inside it draw with: its own foreground and font, a link's and an on toggle's colour. */
    readonly property var inner: {
        var given = {};
        if (type === "link" && !scope.mono)
            given.foreground = scope.dark ? "#78b4ff" : "#0a60d0";
        if (isOn && !scope.mono)
            given.foreground = "#ffffff";
        if (ownForeground)
            given.foreground = ownForeground;
        var size = V.number(element.fontSize);
        if (size !== null && size > 0)
            given.fontSize = size;
        var weight = V.fontWeight(element.fontWeight);
        if (weight !== null)
            given.fontWeight = weight;
        return Object.assign({}, scope, given);
    }
    readonly property real childRoom: Math.max(0, room - 2 * padding)

    implicitWidth: (type === "spacer" ? spacerLength("x") : body.implicitWidth) + 2 * padding
    implicitHeight: (type === "spacer" ? spacerLength("y") : body.implicitHeight) + 2 * padding
    opacity: Math.min(1, Math.max(0, V.number(element.opacity, 1)))

    /** The accessible role the declaration gives the type (AT-SPI's name), "" for none. */
    readonly property string roleName: V.roleName(type)
    /**
     * Qt's role for each of the declaration's: Qt has no toggle button (a
     * checkable push button is one) and no level bar (a progress bar stands
     * in), see docs/vocabulary.md#accessible-names.
     */
    readonly property var qtRoles: ({
        "push button": Accessible.Button, "toggle button": Accessible.Button, "link": Accessible.Link,
        "image": Accessible.Graphic, "progress bar": Accessible.ProgressBar, "level bar": Accessible.ProgressBar,
    })
    readonly property bool isBar: roleName === "progress bar" || roleName === "level bar"

    activeFocusOnTab: isTappable
    Accessible.role: qtRoles[roleName] !== undefined ? qtRoles[roleName] : Accessible.NoRole
    // An image is an accessible object when it has a name to give; every other element with a role is one.
    Accessible.ignored: roleName === "" || (roleName === "image" && !name)
    Accessible.name: isBar ? (name || Math.round(V.fraction(element) * 100) + "%") : name
    Accessible.focusable: isTappable
    Accessible.checkable: roleName === "toggle button"
    Accessible.checked: isOn
    Accessible.onPressAction: activate()
    Accessible.onToggleAction: activate()
    Keys.onPressed: (event) => {
        if (isTappable && Keyboard.activates(event)) {
            activate();
            event.accepted = true;
        }
    }

    /** A link, button or toggle was activated by the keyboard or an assistive technology: it reports its own id. */
    function activate() {
        if (isTappable && scope.owner)
            scope.owner.activateElement(elementId, node);
    }

    function spacerLength(axis) {
        return axis === along ? Math.max(0, V.number(element.minLength, V.defaultOf("spacer", "minLength"))) : 0;
    }

    Rectangle {
        anchors.fill: parent
        visible: node.background !== ""
        color: node.background || "transparent"
        radius: Math.max(0, V.number(node.element.cornerRadius, 0))
    }

    Loader {
        id: body
        anchors.fill: parent
        anchors.margins: node.padding
        sourceComponent: ({
            vstack: stackBody, hstack: stackBody, zstack: zstackBody, text: textBody, image: imageBody,
            divider: dividerBody, color: colorBody, link: tappableBody, button: tappableBody, toggle: tappableBody,
            progress: barBody, gauge: barBody,
        })[node.type] || null
    }

    Component {
        id: stackBody
        Stack {
            items: node.items
            vertical: node.type !== "hstack"
            alignment: typeof node.element.alignment === "string" ? node.element.alignment : ""
            spacing: V.number(node.element.spacing, V.defaultOf(node.type, "spacing"))
            scope: node.inner
            depth: node.depth
            room: node.childRoom
        }
    }

    Component {
        id: zstackBody
        Item {
            id: layers
            readonly property string place: V.place(node.element.alignment) || "center"
            implicitWidth: repeater.count > 0 && repeater.itemAt(0) ? repeater.itemAt(0).implicitWidth : 0
            implicitHeight: repeater.count > 0 && repeater.itemAt(0) ? repeater.itemAt(0).implicitHeight : 0

            function offset(room, size) {
                return place === "start" ? 0 : place === "end" ? room - size : Math.round((room - size) / 2);
            }

            Repeater {
                id: repeater
                model: node.items

                Loader {
                    // The first child sets the size and fills it; a color fills it; a greedy one fills it that way.
                    readonly property bool fillsX: index === 0 || V.greedy(modelData, "x", "y")
                    readonly property bool fillsY: index === 0 || V.greedy(modelData, "y", "y")
                    width: fillsX ? layers.width : implicitWidth
                    height: fillsY ? layers.height : implicitHeight
                    x: fillsX ? 0 : layers.offset(layers.width, width)
                    y: fillsY ? 0 : layers.offset(layers.height, height)
                    Component.onCompleted: setSource("Element.qml", {
                        element: modelData, scope: node.inner, depth: node.depth + 1, along: "y", room: node.childRoom,
                    })
                }
            }
        }
    }

    Component {
        id: textBody
        Text {
            readonly property real lines: V.number(node.element.lineLimit, 0)
            text: V.boundText(node.element, node.scope.bindings)
            color: node.inner.foreground || "#1c1c1e"
            font.pixelSize: node.inner.fontSize || 13
            font.weight: ({100: Font.Thin, 200: Font.ExtraLight, 300: Font.Light, 400: Font.Normal, 500: Font.Medium,
                600: Font.DemiBold, 700: Font.Bold, 800: Font.ExtraBold, 900: Font.Black})[node.inner.fontWeight || 400]
            // Lines past lineLimit are left out. No ellipsis: Qt gives an eliding text no natural width.
            wrapMode: lines === 1 ? Text.NoWrap : Text.WrapAtWordBoundaryOrAnywhere
            maximumLineCount: lines >= 1 ? lines : 1000
            horizontalAlignment: Text.AlignHCenter
            verticalAlignment: Text.AlignVCenter
            Accessible.role: Accessible.StaticText
            Accessible.name: text
        }
    }

    Component {
        id: imageBody
        Item {
            readonly property real size: Math.max(1, Math.round(V.number(node.element.size, V.defaultOf("image", "size"))))
            readonly property string source: V.imageSource(node.element.src)
            readonly property string icon: typeof node.element.icon === "string" && node.element.icon ? node.element.icon : "image-missing"
            implicitWidth: size
            implicitHeight: size

            Image {
                anchors.centerIn: parent
                width: parent.size
                height: parent.size
                visible: parent.source !== "" && status === Image.Ready
                source: parent.source
                sourceSize: Qt.size(parent.size, parent.size)
                fillMode: Image.PreserveAspectFit
                smooth: true
            }
            Icon {
                anchors.centerIn: parent
                width: parent.size
                height: parent.size
                visible: parent.source === ""
                source: parent.source === "" ? parent.icon : ""
                // A symbolic icon takes the colour of the text around it, as a glyph does.
                isMask: parent.icon.endsWith("-symbolic")
                color: node.inner.foreground || "#1c1c1e"
            }
        }
    }

    Component {
        id: dividerBody
        Rectangle {
            implicitWidth: node.along === "x" ? 1 : 0
            implicitHeight: node.along === "x" ? 0 : 1
            color: Qt.rgba(0.5, 0.5, 0.5, 0.4)
        }
    }

    Component {
        id: colorBody
        Item {
            readonly property bool greedyX: V.greedy({type: "vstack", children: node.items}, "x", "y")
            readonly property bool greedyY: V.greedy({type: "vstack", children: node.items}, "y", "y")
            readonly property string fill: node.scope.mono ? "" : (V.colour(node.element.color, node.scope.dark) || "")
            implicitWidth: inside.implicitWidth
            implicitHeight: inside.implicitHeight

            Rectangle {
                anchors.fill: parent
                visible: parent.fill !== ""
                color: parent.fill || "transparent"
                // A colour that fills the whole widget follows its rounded corners.
                radius: node.depth <= 1 ? (node.scope.cornerRadius || 0) : 0
            }
            Stack {
                id: inside
                x: parent.greedyX ? 0 : Math.round((parent.width - width) / 2)
                y: parent.greedyY ? 0 : Math.round((parent.height - height) / 2)
                width: parent.greedyX ? parent.width : implicitWidth
                height: parent.greedyY ? parent.height : implicitHeight
                items: node.items
                spacing: V.number(node.element.spacing, V.defaultOf("color", "spacing"))
                alignment: typeof node.element.alignment === "string" ? node.element.alignment : ""
                scope: node.inner
                depth: node.depth
                room: node.childRoom
            }
        }
    }

    Component {
        id: barBody
        Item {
            readonly property real value: V.fraction(node.element)
            implicitWidth: 100
            implicitHeight: node.type === "gauge" ? 8 : 6

            Rectangle {
                anchors.fill: parent
                radius: height / 2
                color: node.scope.dark ? Qt.rgba(1, 1, 1, 0.18) : Qt.rgba(0, 0, 0, 0.12)
            }
            Rectangle {
                visible: parent.value > 0
                width: Math.max(parent.height, parent.width * parent.value)
                height: parent.height
                radius: height / 2
                color: node.scope.mono ? "#808080" : node.type === "gauge" ? "#33c759" : "#0a85ff"
            }
        }
    }

    Component {
        id: tappableBody
        Rectangle {
            // A control's own look: a rounded tint (a link has none), the accent when a toggle is on, a ring when focused.
            readonly property real across: node.element.padding !== undefined ? 0 : node.type === "link" ? 6 : 8
            readonly property real down: node.element.padding !== undefined ? 0 : 2
            implicitWidth: content.implicitWidth + 2 * across
            implicitHeight: content.implicitHeight + 2 * down
            radius: 8
            color: node.isOn && !node.scope.mono ? "#0a84ff" : node.type === "link" ? "transparent" : Qt.rgba(0.5, 0.5, 0.5, 0.16)
            border.width: node.activeFocus ? 2 : 0
            border.color: "#3584e4"

            Loader {
                id: content
                anchors.fill: parent
                anchors.leftMargin: parent.across
                anchors.rightMargin: parent.across
                anchors.topMargin: parent.down
                anchors.bottomMargin: parent.down
                sourceComponent: node.items.length > 0 ? tappableChildren : tappableLabel
            }
        }
    }

    Component {
        id: tappableChildren
        Stack {
            items: node.items
            spacing: V.number(node.element.spacing, V.defaultOf("vstack", "spacing"))
            scope: node.inner
            depth: node.depth
            room: node.childRoom
        }
    }

    Component {
        id: tappableLabel
        Text {
            text: node.name
            color: node.inner.foreground || "#1c1c1e"
            font.pixelSize: node.inner.fontSize || 13
            horizontalAlignment: Text.AlignHCenter
            verticalAlignment: Text.AlignVCenter
            Accessible.ignored: true
        }
    }
}
