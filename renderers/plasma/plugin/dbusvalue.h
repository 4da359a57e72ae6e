// D-Bus values as QML takes them: QtDBus hands containers over as
// QDBusArgument and variants as QDBusVariant, which QML cannot read; these
// unwrap them into plain QVariants (lists, maps with string keys, strings,
// numbers, booleans). Shared by the Plasma 5 and Plasma 6 builds.
#pragma once

#include <QString>
#include <QVariant>
#include <QVariantList>
#include <QVariantMap>

namespace widgethost {

/** `value` with every QDBusArgument, QDBusVariant, object path and signature inside it unwrapped. */
QVariant plain(const QVariant &value);

/** `value` unwrapped as a map (an a{sv}, or any dictionary); empty when it is none. */
QVariantMap plainMap(const QVariant &value);

/** A D-Bus error's name and message as a person reads them: the message, else the name. */
QString errorText(const QString &name, const QString &message);

} // namespace widgethost
