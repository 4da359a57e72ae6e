// Quickshell: the most relevant Live Activity (docs/bars.md). Put this file beside
// your shell.qml and LiveActivity {} in a bar.
import QtQuick
import Quickshell.Io

Text {
    id: root
    property var activity: ({ text: "", tooltip: "", state: "" })
    text: activity.text
    visible: activity.text !== ""
    opacity: activity.state === "active" ? 1 : 0.6

    Process {
        command: ["widget-host", "bar", "--format", "json"]
        running: true
        stdout: SplitParser {
            onRead: line => root.activity = JSON.parse(line)
        }
    }

    Process {
        id: tap
        command: ["widget-host", "tap-activity", "most-relevant", "compactTrailing"]
    }

    MouseArea {
        anchors.fill: parent
        onClicked: tap.running = true
    }
}
