#include "host.h"

#include "dbusvalue.h"
#include "launchtoken.h"

#include <QDBusPendingCallWatcher>
#include <QDateTime>
#include <QJSEngine>
#include <QQmlEngine>
#include <QQuickWindow>

namespace widgethost {

namespace {

/** How long the host may take to answer a tap: it replies once the app has (ms). */
constexpr int TapTimeout = 30000;
/** How long any other call may take (ms). */
constexpr int CallTimeout = 30000;

QDBusMessage hostCall(const QString &path, const QString &interface, const QString &method, const QVariantList &args)
{
    QDBusMessage message = QDBusMessage::createMethodCall(HostService, path, interface, method);
    message.setAutoStartService(false);
    message.setArguments(args);
    return message;
}

/** An outcome of 'none' in a person's words: why nothing happened. */
QString noneText(const QVariantMap &details)
{
    const QString reason = details.value(QStringLiteral("reason"), QStringLiteral("none")).toString();
    return QStringLiteral("Not available here (%1)").arg(reason);
}

} // namespace

Host::Host(QObject *parent)
    : QObject(parent)
    , m_mirror(Mirror::shared())
{
    connect(m_mirror.data(), &Mirror::runningChanged, this, &Host::runningChanged);
}

void Host::tap(const QString &path, const QString &presentation, const QString &elementId, QQuickItem *source)
{
    const bool activity = !presentation.isEmpty();
    ObjectModel *model = activity ? m_mirror->activities() : m_mirror->widgets();
    const int row = model->indexOf(path);
    if (row < 0) {
        Q_EMIT tapped(path, QString(), QStringLiteral("It is gone"));
        return;
    }
    const QString appId = model->get(row).value(QStringLiteral("appId")).toString();
    QPointer<Host> self(this);
    QPointer<QQuickWindow> window(source != nullptr ? source->window() : nullptr);
    mintLaunchToken(appId, window.data(), this, [self, path, presentation, elementId, activity](LaunchToken token) {
        if (!self) {
            token.withdraw();
            return;
        }
        // The deadline: a host that reads the tap only after this call stopped
        // waiting (stopped, or busy) delivers it to nobody (docs/delivery.md).
        QVariantMap options{
            {QStringLiteral("surface"), QStringLiteral("desktop")},
            {QStringLiteral("deadline"), QVariant::fromValue<qlonglong>(QDateTime::currentMSecsSinceEpoch() + TapTimeout)},
        };
        if (!token.token.isEmpty()) {
            options.insert(QStringLiteral("activation_token"), token.token);
        }
        const QVariantList args = activity ? QVariantList{presentation, elementId, options} : QVariantList{elementId, options};
        const QString interface = activity ? ActivityInterface : WidgetInterface;
        auto *watcher = new QDBusPendingCallWatcher(
            self->m_mirror->bus().asyncCall(hostCall(path, interface, QStringLiteral("Tap"), args), TapTimeout), self);
        const std::function<void()> withdraw = token.withdraw;
        connect(watcher, &QDBusPendingCallWatcher::finished, self, [self, path, withdraw](QDBusPendingCallWatcher *call) {
            call->deleteLater();
            const QDBusMessage reply = call->reply();
            if (reply.type() != QDBusMessage::ReplyMessage || reply.arguments().size() < 2) {
                withdraw();
                Q_EMIT self->tapped(path, QString(), errorText(reply.errorName(), reply.errorMessage()));
                return;
            }
            const QString outcome = reply.arguments().at(0).toString();
            const QVariantMap details = plainMap(reply.arguments().at(1));
            // An action is performed without raising the app, and 'none' does nothing: no window is to come.
            if (outcome == QLatin1String("perform-action") || outcome == QLatin1String("none")) {
                withdraw();
            }
            Q_EMIT self->tapped(path, outcome, outcome == QLatin1String("none") ? noneText(details) : QString());
        });
    });
}

void Host::call(const QString &path, const QString &interface, const QString &method, const QVariantList &args, const QJSValue &done)
{
    auto *watcher = new QDBusPendingCallWatcher(m_mirror->bus().asyncCall(hostCall(path, interface, method, args), CallTimeout), this);
    connect(watcher, &QDBusPendingCallWatcher::finished, this, [this, done](QDBusPendingCallWatcher *call) {
        call->deleteLater();
        QJSEngine *engine = qmlEngine(this);
        if (engine == nullptr || !done.isCallable()) {
            return;
        }
        const QDBusMessage reply = call->reply();
        QJSValue callback = done;
        if (reply.type() != QDBusMessage::ReplyMessage) {
            const QString text = m_mirror->running() ? errorText(reply.errorName(), reply.errorMessage()) : QStringLiteral("WidgetHost is not running");
            callback.call({QJSValue(text), engine->newArray()});
            return;
        }
        callback.call({QJSValue(QString()), engine->toScriptValue(plain(QVariant(reply.arguments())))});
    });
}

} // namespace widgethost
