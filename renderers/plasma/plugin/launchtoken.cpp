#include "launchtoken.h"

#include <KStartupInfo>
#include <KUserTimestamp>
#include <KWindowSystem>
#if QT_VERSION >= QT_VERSION_CHECK(6, 0, 0)
#include <KWaylandExtras>
#endif

#include <QFile>
#include <QStandardPaths>
#include <QTimer>

namespace widgethost {

namespace {

/** How long KWin may take to give an xdg-activation token before the tap goes without one (ms). */
constexpr int TokenTimeout = 1000;

/** The keys of the [Desktop Entry] group of a desktop entry (no localized ones), by name. */
QHash<QString, QString> desktopEntry(const QString &file)
{
    QHash<QString, QString> keys;
    QFile entry(file);
    if (!entry.open(QIODevice::ReadOnly | QIODevice::Text)) {
        return keys;
    }
    bool inGroup = false;
    while (!entry.atEnd()) {
        const QString line = QString::fromUtf8(entry.readLine()).trimmed();
        if (line.startsWith(QLatin1Char('['))) {
            inGroup = line == QLatin1String("[Desktop Entry]");
        } else if (inGroup && line.contains(QLatin1Char('=')) && !line.startsWith(QLatin1Char('#'))) {
            const int equals = line.indexOf(QLatin1Char('='));
            keys.insert(line.left(equals).trimmed(), line.mid(equals + 1).trimmed());
        }
    }
    return keys;
}

/**
 * A startup id for `appId` at the user's last input time, announced as the
 * start of the app its desktop entry describes (or of one named `appId` when
 * it has none), as KIO's launchers announce the apps they start.
 */
LaunchToken startupId(const QString &appId)
{
    const QByteArray id = KStartupInfo::createNewStartupIdForTimestamp(quint32(KUserTimestamp::userTimestamp()));
    KStartupInfoId startup;
    startup.initId(id);
    KStartupInfoData data;
    data.setHostname();
    const QString file = QStandardPaths::locate(QStandardPaths::ApplicationsLocation, appId + QStringLiteral(".desktop"));
    const QHash<QString, QString> entry = file.isEmpty() ? QHash<QString, QString>() : desktopEntry(file);
    data.setName(entry.value(QStringLiteral("Name"), appId));
    data.setIcon(entry.value(QStringLiteral("Icon")));
    data.setBin(entry.value(QStringLiteral("Exec")).section(QLatin1Char(' '), 0, 0).section(QLatin1Char('/'), -1));
    if (!file.isEmpty()) {
        data.setApplicationId(file);
    }
    KStartupInfo::sendStartup(startup, data);
    return {QString::fromUtf8(id), [startup] { KStartupInfo::sendFinish(startup); }};
}

/** Asks KWin for an xdg-activation token for the last input in `window`; `ready` gets it, or "" after a second. */
void activationToken(const QString &appId, QWindow *window, QObject *context, std::function<void(LaunchToken)> ready)
{
#if QT_VERSION >= QT_VERSION_CHECK(6, 0, 0)
    auto *source = KWaylandExtras::self();
    const quint32 serial = KWaylandExtras::lastInputSerial(window);
#else
    auto *source = KWindowSystem::self();
    const quint32 serial = KWindowSystem::lastInputSerial(window);
#endif
    // Exactly one of the answer and the timeout calls `ready`.
    auto done = std::make_shared<bool>(false);
    auto answered = std::make_shared<QMetaObject::Connection>();
    auto finish = [done, answered, ready](const QString &token) {
        if (*done) {
            return;
        }
        *done = true;
        QObject::disconnect(*answered);
        ready(LaunchToken{token});
    };
    *answered = QObject::connect(source, &std::remove_pointer_t<decltype(source)>::xdgActivationTokenArrived, context,
                                 [serial, finish](int answeredSerial, const QString &token) {
                                     if (quint32(answeredSerial) == serial) {
                                         finish(token);
                                     }
                                 });
    QTimer::singleShot(TokenTimeout, context, [finish] { finish(QString()); });
#if QT_VERSION >= QT_VERSION_CHECK(6, 0, 0)
    KWaylandExtras::requestXdgActivationToken(window, serial, appId);
#else
    KWindowSystem::requestXdgActivationToken(window, serial, appId);
#endif
}

} // namespace

void mintLaunchToken(const QString &appId, QWindow *window, QObject *context, std::function<void(LaunchToken)> ready)
{
    if (KWindowSystem::isPlatformWayland() && window != nullptr) {
        activationToken(appId, window, context, std::move(ready));
    } else if (KWindowSystem::isPlatformX11()) {
        ready(startupId(appId));
    } else {
        ready(LaunchToken{});
    }
}

} // namespace widgethost
