#include "mirror.h"

#include "dbusvalue.h"

#include <QDBusPendingCallWatcher>
#include <QDBusPendingReply>
#include <QWeakPointer>

namespace widgethost {

namespace {

const QString ObjectManagerInterface = QStringLiteral("org.freedesktop.DBus.ObjectManager");
const QString PropertiesInterface = QStringLiteral("org.freedesktop.DBus.Properties");
/** How long a read of the host may take before it counts as failed (ms). */
constexpr int CallTimeout = 30000;

const QStringList WidgetProperties = {
    QStringLiteral("Id"), QStringLiteral("AppId"), QStringLiteral("Kind"), QStringLiteral("Family"),
    QStringLiteral("Configuration"), QStringLiteral("Content"),
};

const QStringList ActivityProperties = {
    QStringLiteral("Id"), QStringLiteral("AppId"), QStringLiteral("AttributesType"), QStringLiteral("Content"),
    QStringLiteral("State"), QStringLiteral("StaleDate"), QStringLiteral("Relevance"), QStringLiteral("Attributes"),
    QStringLiteral("ContentState"), QStringLiteral("StartDate"),
};

/** A D-Bus property's role name: AppId → appId, and Id → objectId. */
QString roleName(const QString &property)
{
    if (property == QLatin1String("Id")) {
        return QStringLiteral("objectId");
    }
    return property.left(1).toLower() + property.mid(1);
}

/** A method call to the host with no auto-start: an absent host is never started by a renderer. */
QDBusMessage hostCall(const QString &path, const QString &interface, const QString &method)
{
    QDBusMessage message = QDBusMessage::createMethodCall(HostService, path, interface, method);
    message.setAutoStartService(false);
    return message;
}

} // namespace

bool byPlacement(const QString &a, const QString &b)
{
    if (a.size() != b.size()) {
        return a.size() < b.size();
    }
    return a < b;
}

ObjectModel::ObjectModel(const QStringList &properties, Order order, QObject *parent)
    : QAbstractListModel(parent)
    , m_properties(properties)
    , m_order(std::move(order))
{
    int role = Qt::UserRole + 1;
    m_roles.insert(role++, "path");
    for (const QString &property : properties) {
        m_roles.insert(role++, roleName(property).toUtf8());
    }
}

int ObjectModel::rowCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : int(m_rows.size());
}

QVariant ObjectModel::data(const QModelIndex &index, int role) const
{
    if (!index.isValid() || index.row() >= m_rows.size() || !m_roles.contains(role)) {
        return {};
    }
    const Row &row = m_rows.at(index.row());
    const QString name = QString::fromUtf8(m_roles.value(role));
    return name == QLatin1String("path") ? QVariant(row.path) : row.values.value(name);
}

QHash<int, QByteArray> ObjectModel::roleNames() const
{
    return m_roles;
}

QVariantMap ObjectModel::get(int row) const
{
    if (row < 0 || row >= m_rows.size()) {
        return {};
    }
    QVariantMap values = m_rows.at(row).values;
    values.insert(QStringLiteral("path"), m_rows.at(row).path);
    return values;
}

int ObjectModel::indexOf(const QString &path) const
{
    for (int i = 0; i < m_rows.size(); ++i) {
        if (m_rows.at(i).path == path) {
            return i;
        }
    }
    return -1;
}

QVariantMap ObjectModel::roleValues(const QVariantMap &properties) const
{
    QVariantMap values;
    for (auto it = properties.cbegin(); it != properties.cend(); ++it) {
        if (m_properties.contains(it.key())) {
            values.insert(roleName(it.key()), plain(it.value()));
        }
    }
    return values;
}

int ObjectModel::placeOf(const Row &row, int skipping) const
{
    int place = 0;
    for (int i = 0; i < m_rows.size(); ++i) {
        if (i != skipping && m_order(m_rows.at(i).values, row.values)) {
            ++place;
        }
    }
    return place;
}

void ObjectModel::upsert(const QString &path, const QVariantMap &properties)
{
    if (update(path, properties)) {
        return;
    }
    Row row{path, roleValues(properties)};
    const int place = placeOf(row, -1);
    beginInsertRows({}, place, place);
    m_rows.insert(place, row);
    endInsertRows();
    Q_EMIT countChanged();
}

bool ObjectModel::update(const QString &path, const QVariantMap &properties)
{
    const int index = indexOf(path);
    if (index < 0) {
        return false;
    }
    const QVariantMap values = roleValues(properties);
    QVector<int> changed;
    for (auto it = values.cbegin(); it != values.cend(); ++it) {
        if (m_rows[index].values.value(it.key()) != it.value()) {
            m_rows[index].values.insert(it.key(), it.value());
            changed.append(m_roles.key(it.key().toUtf8()));
        }
    }
    if (!changed.isEmpty()) {
        Q_EMIT dataChanged(this->index(index), this->index(index), changed);
        reorder(index);
    }
    return true;
}

void ObjectModel::reorder(int index)
{
    // Where the row belongs once the others close up behind it.
    const int place = placeOf(m_rows.at(index), index);
    if (place == index) {
        return;
    }
    // beginMoveRows counts the destination before the move: one further down.
    beginMoveRows({}, index, index, {}, place > index ? place + 1 : place);
    m_rows.move(index, place);
    endMoveRows();
}

void ObjectModel::remove(const QString &path)
{
    const int index = indexOf(path);
    if (index < 0) {
        return;
    }
    beginRemoveRows({}, index, index);
    m_rows.remove(index);
    endRemoveRows();
    Q_EMIT countChanged();
}

void ObjectModel::clear()
{
    if (m_rows.isEmpty()) {
        return;
    }
    beginResetModel();
    m_rows.clear();
    endResetModel();
    Q_EMIT countChanged();
}

QSharedPointer<Mirror> Mirror::shared()
{
    static QWeakPointer<Mirror> current;
    QSharedPointer<Mirror> mirror = current.toStrongRef();
    if (!mirror) {
        mirror = QSharedPointer<Mirror>(new Mirror(QDBusConnection::sessionBus()), &QObject::deleteLater);
        current = mirror;
    }
    return mirror;
}

Mirror::Mirror(const QDBusConnection &bus, QObject *parent)
    : QObject(parent)
    , m_bus(bus)
    , m_watcher(HostService, bus, QDBusServiceWatcher::WatchForOwnerChange)
{
    m_widgets = new ObjectModel(WidgetProperties, [](const QVariantMap &a, const QVariantMap &b) {
        return byPlacement(a.value(QStringLiteral("objectId")).toString(), b.value(QStringLiteral("objectId")).toString());
    }, this);
    // Most relevant first, as the host's LiveActivities.Order lists them: by
    // relevance (highest first), then the earlier start, then the lower id.
    m_activities = new ObjectModel(ActivityProperties, [](const QVariantMap &a, const QVariantMap &b) {
        const double ra = a.value(QStringLiteral("relevance")).toDouble(), rb = b.value(QStringLiteral("relevance")).toDouble();
        if (ra != rb) {
            return ra > rb;
        }
        const qint64 sa = a.value(QStringLiteral("startDate")).toLongLong(), sb = b.value(QStringLiteral("startDate")).toLongLong();
        if (sa != sb) {
            return sa < sb;
        }
        return byPlacement(a.value(QStringLiteral("objectId")).toString(), b.value(QStringLiteral("objectId")).toString());
    }, this);

    connect(&m_watcher, &QDBusServiceWatcher::serviceOwnerChanged, this, &Mirror::ownerChanged);
    // The bus matches these by the name's current owner: they follow the host across restarts.
    m_bus.connect(HostService, RootPath, ObjectManagerInterface, QStringLiteral("InterfacesAdded"),
                  this, SLOT(interfacesAdded(QDBusMessage)));
    m_bus.connect(HostService, RootPath, ObjectManagerInterface, QStringLiteral("InterfacesRemoved"),
                  this, SLOT(interfacesRemoved(QDBusMessage)));
    m_bus.connect(HostService, QString(), PropertiesInterface, QStringLiteral("PropertiesChanged"),
                  this, SLOT(propertiesChanged(QDBusMessage)));
    load();
}

void Mirror::ownerChanged(const QString &, const QString &, const QString &newOwner)
{
    ++m_generation;
    forgetAll();
    if (newOwner.isEmpty()) {
        setRunning(false);
    } else {
        load();
    }
}

void Mirror::load()
{
    const quint64 generation = m_generation;
    auto *watcher = new QDBusPendingCallWatcher(
        m_bus.asyncCall(hostCall(RootPath, ObjectManagerInterface, QStringLiteral("GetManagedObjects")), CallTimeout), this);
    connect(watcher, &QDBusPendingCallWatcher::finished, this, [this, generation](QDBusPendingCallWatcher *call) {
        call->deleteLater();
        if (generation != m_generation) {
            return; // the host changed meanwhile: its new owner is read instead
        }
        const QDBusMessage reply = call->reply();
        if (reply.type() != QDBusMessage::ReplyMessage) {
            // No owner (not running) is the usual case; anything else is worth saying.
            if (reply.errorName() != QLatin1String("org.freedesktop.DBus.Error.ServiceUnknown")
                && reply.errorName() != QLatin1String("org.freedesktop.DBus.Error.NameHasNoOwner")) {
                Q_EMIT problem(QStringLiteral("cannot read %1: %2").arg(HostService, errorText(reply.errorName(), reply.errorMessage())));
            }
            setRunning(false);
            return;
        }
        const QVariantMap objects = reply.arguments().isEmpty() ? QVariantMap() : plainMap(reply.arguments().constFirst());
        // In the order the host placed them, so that rows are added where they end up.
        QStringList paths = objects.keys();
        std::sort(paths.begin(), paths.end(), byPlacement);
        for (const QString &path : std::as_const(paths)) {
            addObject(path, objects.value(path).toMap());
        }
        setRunning(true);
    });
}

void Mirror::setRunning(bool running)
{
    if (m_running != running) {
        m_running = running;
        Q_EMIT runningChanged();
    }
}

void Mirror::forgetAll()
{
    m_widgets->clear();
    m_activities->clear();
}

ObjectModel *Mirror::modelFor(const QString &interface) const
{
    if (interface == WidgetInterface) {
        return m_widgets;
    }
    if (interface == ActivityInterface) {
        return m_activities;
    }
    return nullptr;
}

void Mirror::addObject(const QString &path, const QVariantMap &interfaces)
{
    for (auto it = interfaces.cbegin(); it != interfaces.cend(); ++it) {
        if (ObjectModel *model = modelFor(it.key())) {
            model->upsert(path, it.value().toMap());
        }
    }
}

void Mirror::interfacesAdded(const QDBusMessage &message)
{
    const QVariantList args = message.arguments();
    if (args.size() < 2) {
        return;
    }
    addObject(plain(args.at(0)).toString(), plainMap(args.at(1)));
    setRunning(true);
}

void Mirror::interfacesRemoved(const QDBusMessage &message)
{
    const QVariantList args = message.arguments();
    if (args.size() < 2) {
        return;
    }
    const QString path = plain(args.at(0)).toString();
    const QStringList interfaces = plain(args.at(1)).toStringList();
    for (const QString &interface : interfaces) {
        if (ObjectModel *model = modelFor(interface)) {
            model->remove(path);
        }
    }
}

void Mirror::propertiesChanged(const QDBusMessage &message)
{
    const QVariantList args = message.arguments();
    if (args.size() < 3) {
        return;
    }
    const QString interface = args.at(0).toString();
    ObjectModel *model = modelFor(interface);
    if (model == nullptr) {
        return;
    }
    if (!model->update(message.path(), plainMap(args.at(1)))) {
        return; // an object not read yet: GetManagedObjects brings it whole
    }
    if (!plain(args.at(2)).toStringList().isEmpty()) {
        reread(message.path(), interface);
    }
}

void Mirror::reread(const QString &path, const QString &interface)
{
    QDBusMessage call = hostCall(path, PropertiesInterface, QStringLiteral("GetAll"));
    call.setArguments({interface});
    const quint64 generation = m_generation;
    auto *watcher = new QDBusPendingCallWatcher(m_bus.asyncCall(call, CallTimeout), this);
    connect(watcher, &QDBusPendingCallWatcher::finished, this, [this, generation, path, interface](QDBusPendingCallWatcher *pending) {
        pending->deleteLater();
        const QDBusMessage reply = pending->reply();
        if (generation != m_generation || reply.type() != QDBusMessage::ReplyMessage || reply.arguments().isEmpty()) {
            return; // gone meanwhile, or the host went away: nothing to show of it
        }
        if (ObjectModel *model = modelFor(interface)) {
            model->update(path, plainMap(reply.arguments().constFirst()));
        }
    });
}

} // namespace widgethost
