// A short text over what it sits on, for a few seconds: a tap whose outcome is
// 'none', or that failed, is never dropped silently.
import QtQuick 2.15

Rectangle {
    id: feedback

    function show(text) {
        label.text = text;
        visible = true;
        timer.restart();
    }

    visible: false
    width: Math.min(parent ? parent.width - 12 : 200, label.implicitWidth + 16)
    height: label.implicitHeight + 8
    radius: 10
    color: Qt.rgba(0, 0, 0, 0.72)
    z: 20

    Text {
        id: label
        anchors.centerIn: parent
        width: Math.min(implicitWidth, feedback.width - 16)
        color: "#ffffff"
        font.pixelSize: 12
        wrapMode: Text.Wrap
        Accessible.role: Accessible.StaticText
        Accessible.name: text
    }
    Timer {
        id: timer
        interval: 3000
        onTriggered: feedback.visible = false
    }
}
