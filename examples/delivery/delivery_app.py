#!/usr/bin/python3
"""Delivery tracker: a GLib GApplication that starts a Live Activity on WidgetHost.

It registers with the host on its own D-Bus connection (protocol
'freedesktop', so taps arrive through org.freedesktop.Application), starts
the Live Activity in activity.json with GDBus — the same StartActivity call
`gdbus call` makes, but on the connection that holds the app's registration,
which is the only one allowed to start, update or end the app's activities —
counts the minutes down with Update, once a minute, and prints every URL it is
asked to open.
It starts its activity once: when the host already has one of the app's
activities that has not ended (the app ran before; the host keeps activities
across restarts), it goes on with that one.

    /usr/bin/python3 examples/delivery/delivery_app.py

Tap it with `widget-host tap-activity a1 expanded map` (or gdbus, see the
README) and watch this program print the URL. It runs until it is stopped
(Ctrl-C, SIGTERM), or until the bus goes away; the activity stays, as a
delivery goes on when its app is closed, and ends by itself after 8 hours.
Installed with its desktop entry and D-Bus service file
(org.example.Delivery.desktop.in and org.example.Delivery.service.in), the bus
starts it with --gapplication-service when a tap is delivered and it is not
running.
"""
import os
import signal
import sys
import time

import gi

gi.require_version("Gio", "2.0")
from gi.repository import Gio, GLib  # noqa: E402

APP_ID = "org.example.Delivery"
HERE = os.path.dirname(os.path.abspath(__file__))
HOST, ROOT = "org.widgethost.Host1", "/org/widgethost/Host1"


class Delivery(Gio.Application):
    def __init__(self):
        super().__init__(application_id=APP_ID, flags=Gio.ApplicationFlags.HANDLES_OPEN)
        self.activity = None
        self.eta = 10

    def host(self, interface, method, signature, args, path=ROOT):
        bus = self.get_dbus_connection()
        reply = bus.call_sync(HOST, path, "org.widgethost.Host1." + interface, method,
                              GLib.Variant(signature, args), None, Gio.DBusCallFlags.NONE, 10000, None)
        return reply.unpack()

    def do_startup(self):
        Gio.Application.do_startup(self)
        self.hold()  # stay up: taps may come at any time
        # Without the bus there is nothing left to do: quit rather than linger.
        self.get_dbus_connection().connect("closed", lambda *_: self.quit())
        self.host("Apps", "RegisterApp", "(sa{sv})", (APP_ID, {
            "protocol": GLib.Variant("s", "freedesktop"),
            "schemes": GLib.Variant("as", ["delivery-tracker"]),
        }))
        self.activity = self.running_activity()
        if self.activity:
            self.host("LiveActivity", "Update", "(sa{sv})", ("", {"state": self.state()}), path=self.activity)
            print(f"went on with {self.activity.rsplit('/', 1)[-1]} ({self.activity}), started before", flush=True)
        else:
            with open(os.path.join(HERE, "activity.json"), encoding="utf-8") as f:
                content = f.read()
            (self.activity,) = self.host("LiveActivities", "StartActivity", "(sssa{sv})", (APP_ID, "DeliveryAttributes", content, {
                "attributes": GLib.Variant("a{sv}", {"order": GLib.Variant("s", "1234")}),
                "state": self.state(),
                "stale_date": GLib.Variant("x", int(time.time()) + 3600),
                "relevance": GLib.Variant("d", 5.0),
            }))
            print(f"started {self.activity.rsplit('/', 1)[-1]} ({self.activity})", flush=True)
        print(f"Delivery is ready; Ctrl-C or kill {os.getpid()} stops it.", flush=True)
        GLib.timeout_add_seconds(60, self.tick)  # the ETA is in minutes

    def running_activity(self):
        """The path of the app's Live Activity that has not ended, if the host has one."""
        bus = self.get_dbus_connection()
        (objects,) = bus.call_sync(HOST, ROOT, "org.freedesktop.DBus.ObjectManager", "GetManagedObjects", None, None,
                                   Gio.DBusCallFlags.NONE, 10000, None).unpack()
        for path, interfaces in sorted(objects.items()):
            activity = interfaces.get("org.widgethost.Host1.LiveActivity")
            if activity and activity.get("AppId") == APP_ID and activity.get("EndDate", 0) == 0:
                return path
        return None

    def state(self):
        return GLib.Variant("a{sv}", {
            "eta_minutes": GLib.Variant("x", self.eta),
            "status": GLib.Variant("s", "out-for-delivery"),
        })

    def tick(self):
        self.eta = max(0, self.eta - 1)
        self.host("LiveActivity", "Update", "(sa{sv})", ("", {"state": self.state()}), path=self.activity)
        return self.eta > 0

    def do_activate(self):
        pass

    def do_open(self, files, n_files, hint):
        for f in files:
            print(f"Delivery opened {f.get_uri()}", flush=True)



if __name__ == "__main__":
    # A parent may have blocked these; the app must stop when asked to.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
    app = Delivery()
    for signum in (signal.SIGINT, signal.SIGTERM):
        GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, signum, lambda: app.quit() or GLib.SOURCE_REMOVE)
    if "--gapplication-service" not in sys.argv and app.register(None) and app.get_is_remote():
        print("Delivery already runs; it keeps its activity.", flush=True)
        sys.exit(0)
    sys.exit(app.run(sys.argv))  # --gapplication-service when the bus starts it
