// A live mirror of what WidgetHost serves: its placed widgets and its Live
// Activities, as two list models QML draws from.
//
// It reads GetManagedObjects of org.widgethost.Host1 at /org/widgethost/Host1
// (org.freedesktop.DBus.ObjectManager) and follows InterfacesAdded,
// InterfacesRemoved and PropertiesChanged; it watches the name's owner, so
// when the host stops every object goes away and when it comes back they are
// read again. Every call is asynchronous (QDBusPendingCallWatcher) and nothing
// is polled: a host that is absent, restarting or slow costs plasmashell
// nothing. One mirror serves every applet of a process.
#pragma once

#include <QAbstractListModel>
#include <QDBusConnection>
#include <QDBusMessage>
#include <QDBusServiceWatcher>
#include <QSharedPointer>
#include <QStringList>
#include <QVariantMap>
#include <QVector>

#include <functional>

namespace widgethost {

inline const QString HostService = QStringLiteral("org.widgethost.Host1");
inline const QString RootPath = QStringLiteral("/org/widgethost/Host1");
inline const QString WidgetInterface = QStringLiteral("org.widgethost.Host1.Widget");
inline const QString ActivityInterface = QStringLiteral("org.widgethost.Host1.LiveActivity");

/** Widget ids grow in length, then in text: w9 comes before w10 (the order the host placed them in). */
bool byPlacement(const QString &a, const QString &b);

/**
 * The host's objects of one interface, one row each, in an order of their
 * own. Each D-Bus property is a role named as the property with its first
 * letter lowered (AppId → appId), except Id, which is `objectId` (QML keeps
 * `id` for itself); `path` is the object's path.
 */
class ObjectModel : public QAbstractListModel
{
    Q_OBJECT
    Q_PROPERTY(int count READ count NOTIFY countChanged)

public:
    using Order = std::function<bool(const QVariantMap &, const QVariantMap &)>;

    ObjectModel(const QStringList &properties, Order order, QObject *parent = nullptr);

    int rowCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role) const override;
    QHash<int, QByteArray> roleNames() const override;

    int count() const { return int(m_rows.size()); }
    /** The row's properties by their role names, and `path`. */
    Q_INVOKABLE QVariantMap get(int row) const;
    /** The row of the object at `path`, or -1. */
    Q_INVOKABLE int indexOf(const QString &path) const;

    /** Adds the object at `path`, or merges `properties` (by D-Bus name) into it. */
    void upsert(const QString &path, const QVariantMap &properties);
    /** Merges `properties` into the object at `path` if it is known; returns whether it is. */
    bool update(const QString &path, const QVariantMap &properties);
    void remove(const QString &path);
    void clear();

Q_SIGNALS:
    void countChanged();

private:
    struct Row {
        QString path;
        QVariantMap values; // by role name
    };
    QVariantMap roleValues(const QVariantMap &properties) const;
    /** Where `row` belongs among the others, by the order. */
    int placeOf(const Row &row, int skipping) const;
    void reorder(int index);

    QStringList m_properties;
    QHash<int, QByteArray> m_roles;
    Order m_order;
    QVector<Row> m_rows;
};

class Mirror : public QObject
{
    Q_OBJECT

public:
    /** The process's one mirror, made on first use and kept while anyone holds it. */
    static QSharedPointer<Mirror> shared();

    explicit Mirror(const QDBusConnection &bus, QObject *parent = nullptr);

    ObjectModel *widgets() const { return m_widgets; }
    ObjectModel *activities() const { return m_activities; }
    /** Whether the host's name has an owner and its objects are read. */
    bool running() const { return m_running; }
    QDBusConnection bus() const { return m_bus; }

Q_SIGNALS:
    void runningChanged();
    /** The host could not be read or followed: `message` says why. */
    void problem(const QString &message);

private Q_SLOTS:
    void ownerChanged(const QString &name, const QString &oldOwner, const QString &newOwner);
    void interfacesAdded(const QDBusMessage &message);
    void interfacesRemoved(const QDBusMessage &message);
    void propertiesChanged(const QDBusMessage &message);

private:
    /** Reads every object of the host (GetManagedObjects), asynchronously. */
    void load();
    void setRunning(bool running);
    void forgetAll();
    /** Adds or updates the object at `path` from its interfaces and their properties. */
    void addObject(const QString &path, const QVariantMap &interfaces);
    /** Reads all properties of `interface` at `path` again (a property was invalidated). */
    void reread(const QString &path, const QString &interface);
    ObjectModel *modelFor(const QString &interface) const;

    QDBusConnection m_bus;
    QDBusServiceWatcher m_watcher;
    ObjectModel *m_widgets;
    ObjectModel *m_activities;
    bool m_running = false;
    /** Grows with each owner of the host's name: replies for an earlier owner are dropped. */
    quint64 m_generation = 0;
};

} // namespace widgethost
