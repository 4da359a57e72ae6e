#include "dbusvalue.h"

#include <QDBusArgument>
#include <QDBusObjectPath>
#include <QDBusSignature>
#include <QDBusVariant>

namespace widgethost {

namespace {

QVariant demarshal(const QDBusArgument &argument);

/** The items of an array, or the fields of a structure (`array` false). */
QVariantList sequence(const QDBusArgument &argument, bool array)
{
    QVariantList items;
    array ? argument.beginArray() : argument.beginStructure();
    while (!argument.atEnd()) {
        items.append(plain(argument.asVariant()));
    }
    array ? argument.endArray() : argument.endStructure();
    return items;
}

/** A map key as a string: D-Bus keys are basic types (strings, object paths, numbers). */
QString keyText(const QVariant &key)
{
    const QVariant value = plain(key);
    return value.toString();
}

QVariant demarshal(const QDBusArgument &argument)
{
    switch (argument.currentType()) {
    case QDBusArgument::BasicType:
    case QDBusArgument::VariantType:
        return plain(argument.asVariant());
    case QDBusArgument::ArrayType:
        return sequence(argument, true);
    case QDBusArgument::StructureType:
        return sequence(argument, false);
    case QDBusArgument::MapType: {
        QVariantMap map;
        argument.beginMap();
        while (!argument.atEnd()) {
            argument.beginMapEntry();
            const QVariant key = argument.asVariant();
            const QVariant value = argument.asVariant();
            argument.endMapEntry();
            map.insert(keyText(key), plain(value));
        }
        argument.endMap();
        return map;
    }
    default:
        return {};
    }
}

} // namespace

QVariant plain(const QVariant &value)
{
    const int type = value.userType();
    if (type == qMetaTypeId<QDBusArgument>()) {
        return demarshal(value.value<QDBusArgument>());
    }
    if (type == qMetaTypeId<QDBusVariant>()) {
        return plain(value.value<QDBusVariant>().variant());
    }
    if (type == qMetaTypeId<QDBusObjectPath>()) {
        return value.value<QDBusObjectPath>().path();
    }
    if (type == qMetaTypeId<QDBusSignature>()) {
        return value.value<QDBusSignature>().signature();
    }
    if (type == QMetaType::QVariantList) {
        QVariantList items;
        const QVariantList given = value.toList();
        for (const QVariant &item : given) {
            items.append(plain(item));
        }
        return items;
    }
    if (type == QMetaType::QVariantMap) {
        QVariantMap map;
        const QVariantMap given = value.toMap();
        for (auto it = given.cbegin(); it != given.cend(); ++it) {
            map.insert(it.key(), plain(it.value()));
        }
        return map;
    }
    return value;
}

QVariantMap plainMap(const QVariant &value)
{
    return plain(value).toMap();
}

QString errorText(const QString &name, const QString &message)
{
    return message.isEmpty() ? name : message;
}

} // namespace widgethost
