// The QML type `Host` of the module org.widgethost.plasmoid: what the applet
// knows of WidgetHost (the process's one Mirror) and what it asks of it. Every
// call is asynchronous: QML is told of the answer later, by a signal or a
// callback, and never waits for the host.
#pragma once

#include "mirror.h"

#include <QJSValue>
#include <QObject>
#include <QQuickItem>
#include <QSharedPointer>

namespace widgethost {

class Host : public QObject
{
    Q_OBJECT
    /** The placed widgets, in the order the host placed them (an ObjectModel). */
    Q_PROPERTY(QObject *widgets READ widgets CONSTANT)
    /** The Live Activities, most relevant first (an ObjectModel). */
    Q_PROPERTY(QObject *activities READ activities CONSTANT)
    /** Whether WidgetHost is running and its objects are read. */
    Q_PROPERTY(bool running READ running NOTIFY runningChanged)

public:
    explicit Host(QObject *parent = nullptr);

    QObject *widgets() const { return m_mirror->widgets(); }
    QObject *activities() const { return m_mirror->activities(); }
    bool running() const { return m_mirror->running(); }

    /**
     * Reports a tap on the widget or Live Activity at `path` (a Live Activity
     * when `presentation` is not empty) on its element `elementId`, with a
     * token minted for its app for the click in `source`'s window. `tapped`
     * tells of the outcome.
     */
    Q_INVOKABLE void tap(const QString &path, const QString &presentation, const QString &elementId, QQuickItem *source);

    /**
     * Calls `method` of `interface` at the host's object `path` with `args`
     * (strings, numbers, booleans, and objects as a{sv}); `done(error,
     * result)` gets "" and the reply's arguments as a list, or the error's
     * text and an empty list.
     */
    Q_INVOKABLE void call(const QString &path, const QString &interface, const QString &method,
                          const QVariantList &args, const QJSValue &done);

Q_SIGNALS:
    void runningChanged();
    /**
     * A tap on `path` was answered: its outcome ('open-url', 'perform-action',
     * …), or '' when it failed; `message` says what a person should know of a
     * failure or of an outcome of 'none'.
     */
    void tapped(const QString &path, const QString &outcome, const QString &message);

private:
    QSharedPointer<Mirror> m_mirror;
};

} // namespace widgethost
