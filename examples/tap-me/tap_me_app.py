#!/usr/bin/python3
"""Tap Me: a GLib GApplication that puts four colour widgets on WidgetHost.

It registers with the host on its own D-Bus connection (protocol
'freedesktop', so taps arrive through org.freedesktop.Application, which
GApplication implements), publishes its widget bundle, places one small
widget per colour plus a medium one with a "Show Red View" link, gives each
its view tree from this folder, and then prints every URL it is asked to open.
It places its widgets once: when the host already has them (the app ran
before; the host keeps widgets across restarts), it finds them by their
content (CurrentConfigurations, then each widget's Content) and places only
what is missing.

    /usr/bin/python3 examples/tap-me/tap_me_app.py

Tap a widget with `widget-host tap w1` (or gdbus, see the README) and watch
this program print the URL. It runs until it is stopped (Ctrl-C, SIGTERM), or
until the bus goes away. Installed with its desktop entry and D-Bus service
file (org.example.TapMe.desktop.in and org.example.TapMe.service.in, see
docs/guides/app.md#make-the-app-d-bus-activatable), the bus starts it with
--gapplication-service when a tap is delivered and it is not running.
"""
import json
import os
import signal
import sys

import gi

gi.require_version("Gio", "2.0")
from gi.repository import Gio, GLib  # noqa: E402

APP_ID = "org.example.TapMe"
HERE = os.path.dirname(os.path.abspath(__file__))
HOST, ROOT = "org.widgethost.Host1", "/org/widgethost/Host1"
# Each widget: its family and the file with its view tree.
WIDGETS = [("systemSmall", "red"), ("systemSmall", "green"), ("systemSmall", "blue"), ("systemSmall", "yellow"),
           ("systemMedium", "show-red-link")]


def read(name):
    with open(os.path.join(HERE, name), encoding="utf-8") as f:
        return f.read()


class TapMe(Gio.Application):
    def __init__(self):
        super().__init__(application_id=APP_ID, flags=Gio.ApplicationFlags.HANDLES_OPEN)

    def host(self, interface, method, signature, args, path=ROOT):
        return self.call(path, "org.widgethost.Host1." + interface, method, GLib.Variant(signature, args))

    def call(self, path, interface, method, args):
        bus = self.get_dbus_connection()
        reply = bus.call_sync(HOST, path, interface, method, args, None, Gio.DBusCallFlags.NONE, 10000, None)
        return reply.unpack()

    def placed(self):
        """The app's widgets the host already has: {(family, view tree): path}."""
        (widgets,) = self.host("Widgets", "CurrentConfigurations", "(s)", (APP_ID,))
        found = {}
        for path, kind, family, _, _ in widgets:
            (content,) = self.call(path, "org.freedesktop.DBus.Properties", "Get",
                                   GLib.Variant("(ss)", ("org.widgethost.Host1.Widget", "Content")))
            if kind == "TapMeWidget" and content:
                found.setdefault((family, canonical(content)), path)
        return found

    def do_startup(self):
        Gio.Application.do_startup(self)
        self.hold()  # stay up: taps may come at any time
        # Without the bus there is nothing left to do: quit rather than linger.
        self.get_dbus_connection().connect("closed", lambda *_: self.quit())
        self.host("Apps", "RegisterApp", "(sa{sv})", (APP_ID, {
            "protocol": GLib.Variant("s", "freedesktop"),
            "schemes": GLib.Variant("as", ["tap-me-widget"]),
        }))
        self.host("Widgets", "RegisterWidgets", "(ss)", (APP_ID, read("bundle.json")))
        placed = self.placed()
        for family, name in WIDGETS:
            content = read(name + ".json")
            path = placed.get((family, canonical(content)))
            if path:
                print(f"found {path.rsplit('/', 1)[-1]} ({name}, {family}), placed before", flush=True)
            else:
                self.place(family, content, name)
        print(f"Tap Me is ready; Ctrl-C or kill {os.getpid()} stops it.", flush=True)

    def place(self, family, content, label):
        (path,) = self.host("Widgets", "AddWidget", "(sssa{sv})", (APP_ID, "TapMeWidget", family, {}))
        self.host("Widget", "SetContent", "(s)", (content,), path=path)
        print(f"placed {path.rsplit('/', 1)[-1]} ({label}, {family})", flush=True)

    def do_activate(self):
        pass

    def do_open(self, files, n_files, hint):
        for f in files:
            print(f"Tap Me opened {f.get_uri()}", flush=True)

    def do_before_emit(self, platform_data):
        Gio.Application.do_before_emit(self, platform_data)
        token = platform_data.lookup_value("activation-token", None)
        if token is not None:
            print(f"  (activation token {token.get_string()})", flush=True)



def canonical(content):
    """A view tree's JSON, in one spelling: the host may keep it spelled otherwise."""
    return json.dumps(json.loads(content), sort_keys=True)


if __name__ == "__main__":
    # A parent may have blocked these; the app must stop when asked to.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
    app = TapMe()
    for signum in (signal.SIGINT, signal.SIGTERM):
        GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, signum, lambda: app.quit() or GLib.SOURCE_REMOVE)
    if "--gapplication-service" not in sys.argv and app.register(None) and app.get_is_remote():
        print("Tap Me already runs; it keeps the widgets it placed.", flush=True)
        sys.exit(0)
    sys.exit(app.run(sys.argv))  # --gapplication-service when the bus starts it
