// The applet's configuration page (Configure WidgetHost…, and Add Widget… in
// its menu): the host's gallery. Every app's widget kinds (ListBundles, under
// the app's name from ListApps), each with a button per family that places it
// (AddWidget); then every placed widget, with what configures it (its kind's
// parameters: a dynamic one's choices asked of the app with
// GetConfigurationOptions, a plain one as a text field) and what removes it.
// Every change goes to the host at once: the applet keeps no settings of its own.
import QtQuick 2.15
import QtQuick.Controls 2.15
import QtQuick.Layouts 1.15
import org.widgethost.plasmoid 1.0 as WidgetHost

import "Vocabulary.js" as V

ScrollView {
    id: gallery

    /** The apps and their kinds: [{appId, name, kinds: [{kind, name, description, families, parameters}]}]. */
    property var apps: []
    /** What the host last said went wrong, in its words. */
    property string problem: ""

    readonly property string widgets: "org.widgethost.Host1.Widgets"
    readonly property var familyNames: ({
        systemSmall: "Small", systemMedium: "Medium", systemLarge: "Large", systemExtraLarge: "Extra Large",
        accessoryCircular: "Circular", accessoryRectangular: "Rectangular", accessoryInline: "Inline", accessoryCorner: "Corner",
    })

    /** The kind `kind` of `appId` in the gallery, or null. */
    function kindOf(appId, kind) {
        for (var a = 0; a < apps.length; a++) {
            if (apps[a].appId !== appId)
                continue;
            for (var k = 0; k < apps[a].kinds.length; k++) {
                if (apps[a].kinds[k].kind === kind)
                    return apps[a].kinds[k];
            }
        }
        return null;
    }

    /** Reads the gallery afresh: the bundles, then the apps' names. */
    function load() {
        host.call("/org/widgethost/Host1", widgets, "ListBundles", [], function (error, reply) {
            if (error) {
                problem = error;
                return;
            }
            host.call("/org/widgethost/Host1", "org.widgethost.Host1.Apps", "ListApps", [], function (appsError, appsReply) {
                var names = {};
                (appsError ? [] : appsReply[0]).forEach(function (app) {
                    if (app[1] && typeof app[1].name === "string" && app[1].name)
                        names[app[0]] = app[1].name;
                });
                apps = reply[0].map(function (bundle) {
                    var entries = V.parseTree(bundle[1]);
                    var kinds = (entries && Array.isArray(entries.widgets) ? entries.widgets : []).filter(function (e) {
                        return e !== null && typeof e === "object" && typeof e.kind === "string" && e.kind;
                    }).map(function (e) {
                        var configuration = e.configuration !== null && typeof e.configuration === "object" ? e.configuration : {};
                        return {
                            kind: e.kind, name: typeof e.displayName === "string" && e.displayName ? e.displayName : e.kind,
                            description: typeof e.description === "string" ? e.description : "",
                            families: (Array.isArray(e.families) ? e.families : []).filter(function (f) { return typeof f === "string"; }),
                            parameters: (Array.isArray(configuration.parameters) ? configuration.parameters : []).filter(function (p) {
                                return p !== null && typeof p === "object" && typeof p.name === "string" && p.name;
                            }),
                        };
                    });
                    return {appId: bundle[0], name: names[bundle[0]] || bundle[0], kinds: kinds};
                }).filter(function (app) { return app.kinds.length > 0; }).sort(function (a, b) {
                    return a.name.localeCompare(b.name);
                });
                problem = "";
            });
        });
    }

    /** Reports what a call answered: nothing when it went well. */
    function done(error) {
        problem = error;
    }

    Component.onCompleted: load()

    WidgetHost.Host {
        id: host
        onRunningChanged: gallery.load()
    }

    ColumnLayout {
        width: gallery.availableWidth
        spacing: 12

        Label {
            Layout.fillWidth: true
            visible: gallery.problem !== "" || !host.running
            text: host.running ? gallery.problem : "WidgetHost is not running: its gallery shows once it starts"
            color: "#c0392b"
            wrapMode: Text.Wrap
        }
        Label {
            text: "Add a Widget"
            font.bold: true
        }
        Repeater {
            model: gallery.apps

            ColumnLayout {
                readonly property var app: modelData
                Layout.fillWidth: true

                Label {
                    text: app.name
                    font.italic: true
                }
                Repeater {
                    model: app.kinds

                    RowLayout {
                        id: kindRow
                        readonly property var kind: modelData
                        Layout.fillWidth: true

                        Label {
                            Layout.fillWidth: true
                            text: kindRow.kind.description ? kindRow.kind.name + ": " + kindRow.kind.description : kindRow.kind.name
                            wrapMode: Text.Wrap
                        }
                        Repeater {
                            model: kindRow.kind.families

                            Button {
                                text: gallery.familyNames[modelData] || modelData
                                Accessible.name: kindRow.kind.name + ", " + text
                                onClicked: host.call("/org/widgethost/Host1", gallery.widgets, "AddWidget",
                                    [app.appId, kindRow.kind.kind, modelData, {}], gallery.done)
                            }
                        }
                    }
                }
            }
        }
        Label {
            text: "Placed Widgets"
            font.bold: true
        }
        Repeater {
            model: host.widgets

            ColumnLayout {
                id: placed
                readonly property var kind: gallery.kindOf(model.appId, model.kind)
                readonly property string title: (kind ? kind.name : model.kind) + ", " + (gallery.familyNames[model.family] || model.family)
                readonly property string path: model.path
                readonly property string appId: model.appId
                readonly property string kindName: model.kind
                readonly property var configuration: model.configuration || ({})
                Layout.fillWidth: true

                RowLayout {
                    Layout.fillWidth: true
                    Label {
                        Layout.fillWidth: true
                        text: placed.title
                    }
                    Button {
                        text: "Remove"
                        Accessible.name: "Remove " + placed.title
                        onClicked: host.call(placed.path, "org.widgethost.Host1.Widget", "Remove", [], gallery.done)
                    }
                }
                Repeater {
                    model: placed.kind ? placed.kind.parameters : []

                    RowLayout {
                        readonly property var parameter: modelData
                        readonly property string label: (typeof parameter.title === "string" && parameter.title ? parameter.title : parameter.name)

                        Label {
                            text: label
                        }
                        ComboBox {
                            id: choices
                            /** The app's choices: [{value, text}]. */
                            property var options: []
                            visible: parameter.dynamic === true
                            Layout.fillWidth: true
                            model: options
                            textRole: "text"
                            Accessible.name: label + " of " + placed.title
                            Component.onCompleted: {
                                if (!visible)
                                    return;
                                host.call("/org/widgethost/Host1", gallery.widgets, "GetConfigurationOptions",
                                    [placed.appId, placed.kindName, parameter.name, placed.configuration], function (error, reply) {
                                        if (error) {
                                            gallery.problem = error;
                                            return;
                                        }
                                        options = reply[0].map(function (option) { return {value: option[0], text: option[1]}; });
                                        currentIndex = options.findIndex(function (option) {
                                            return option.value === placed.configuration[parameter.name];
                                        });
                                    });
                            }
                            onActivated: (index) => {
                                var chosen = Object.assign({}, placed.configuration);
                                chosen[parameter.name] = options[index].value;
                                host.call(placed.path, "org.widgethost.Host1.Widget", "Configure", [chosen], gallery.done);
                            }
                        }
                        TextField {
                            visible: parameter.dynamic !== true
                            Layout.fillWidth: true
                            text: typeof placed.configuration[parameter.name] === "string" ? placed.configuration[parameter.name] : ""
                            Accessible.name: label + " of " + placed.title
                            onEditingFinished: {
                                var chosen = Object.assign({}, placed.configuration);
                                chosen[parameter.name] = text;
                                host.call(placed.path, "org.widgethost.Host1.Widget", "Configure", [chosen], gallery.done);
                            }
                        }
                    }
                }
            }
        }
    }
}
