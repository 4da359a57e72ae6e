#!/usr/bin/python3
"""caller.py: a WidgetHost client for the identity tests, run inside bwrap the
way Flatpak runs an app (or in a Snap-like cgroup).

    /usr/bin/python3 caller.py PLAN

PLAN is a JSON list of steps, run in order on one bus connection
($DBUS_SESSION_BUS_ADDRESS):

    ["own", NAME]                                  RequestName(NAME, DO_NOT_QUEUE)
    ["call", PATH, INTERFACE, METHOD, SIGNATURE, ARGS]
                                                   a call to org.widgethost.Host1;
                                                   ARGS is the arguments as GVariant
                                                   text, e.g. "('org.example.A', @a{sv} {})"

Each step prints one JSON line: {"step": N, "ok": true, "reply": TEXT} or
{"step": N, "ok": false, "error": NAME, "message": TEXT}. Then it prints
"done" and stays connected (its registrations last as long as its connection)
until SIGTERM or the bus goes away.
"""

import json
import signal
import sys

from gi.repository import Gio, GLib

HOST = "org.widgethost.Host1"


def main():
    plan = json.loads(sys.argv[1])
    bus = Gio.bus_get_sync(Gio.BusType.SESSION, None)
    for number, step in enumerate(plan):
        try:
            if step[0] == "own":
                reply = bus.call_sync("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "RequestName",
                                      GLib.Variant("(su)", (step[1], 4)), None, Gio.DBusCallFlags.NONE, 10000, None)
            else:
                _, path, interface, method, signature, args = step
                value = GLib.Variant.parse(GLib.VariantType.new("(" + signature + ")"), args, None, None)
                reply = bus.call_sync(HOST, path, interface, method, value, None, Gio.DBusCallFlags.NONE, 10000, None)
            print(json.dumps({"step": number, "ok": True, "reply": reply.print_(True)}), flush=True)
        except GLib.Error as error:
            name = Gio.DBusError.get_remote_error(error) or str(error.domain)
            Gio.DBusError.strip_remote_error(error)
            print(json.dumps({"step": number, "ok": False, "error": name, "message": error.message}), flush=True)
    print("done", flush=True)
    loop = GLib.MainLoop()
    GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, signal.SIGTERM, loop.quit)
    bus.connect("closed", lambda *_: loop.quit())
    loop.run()


if __name__ == "__main__":
    main()
