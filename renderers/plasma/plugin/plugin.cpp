// The QML module org.widgethost.plasmoid: the applet's one piece of C++,
// because Plasma 5's QML has no D-Bus module (docs/plasma.md#how-it-is-built).
#include "host.h"

#include <QQmlEngine>
#include <QQmlExtensionPlugin>

class WidgetHostPlugin : public QQmlExtensionPlugin
{
    Q_OBJECT
    Q_PLUGIN_METADATA(IID QQmlExtensionInterface_iid)

public:
    void registerTypes(const char *uri) override
    {
        qmlRegisterType<widgethost::Host>(uri, 1, 0, "Host");
        qmlRegisterUncreatableType<widgethost::ObjectModel>(uri, 1, 0, "ObjectModel", QStringLiteral("Host makes them"));
    }
};

#include "plugin.moc"
