// A freedesktop icon, drawn by Kirigami, for the shared QML (Element.qml,
// Compact.qml): the one type of it that comes from KDE Frameworks, whose
// import is spelled differently in Plasma 5 (Frameworks 5) and Plasma 6.
import QtQuick 2.15
import org.kde.kirigami 2.20 as Kirigami

Kirigami.Icon {
}
