// A freedesktop icon, drawn by Kirigami, for the shared QML (Element.qml,
// Compact.qml): the one type of it that comes from KDE Frameworks, whose
// import is spelled differently in Plasma 5 (Frameworks 5) and Plasma 6.
import QtQuick
import org.kde.kirigami as Kirigami

Kirigami.Icon {
}
