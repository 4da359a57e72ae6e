"""A live mirror of what WidgetHost serves: its widgets and Live Activities.

It reads GetManagedObjects of org.widgethost.Host1 at /org/widgethost/Host1
and follows InterfacesAdded, InterfacesRemoved and PropertiesChanged through
GLib's GDBusObjectManagerClient, which also watches the name's owner: when the
host stops every object goes away, and when it comes back they are read again.
Nothing is polled.
"""
import gi

gi.require_version("Gio", "2.0")
from gi.repository import Gio, GLib  # noqa: E402

HOST = "org.widgethost.Host1"
ROOT = "/org/widgethost/Host1"
WIDGET = "org.widgethost.Host1.Widget"
ACTIVITY = "org.widgethost.Host1.LiveActivity"
# How long a call waits for the host (ms): longer than the host waits for an
# app (--delivery-timeout, 25 s by default), so a tap, which the host answers
# once the app has, is not given up first. A tap's deadline says so.
CALL_TIMEOUT_MS = 30000


def error_text(error):
    """A D-Bus error's message in the host's words: without GLib's
    'GDBus.Error:NAME: ' prefix when it is a remote error."""
    if Gio.DBusError.get_remote_error(error):
        return error.message.split(": ", 1)[-1]
    return error.message


def unpack(proxy, name, default=None):
    value = proxy.get_cached_property(name)
    return default if value is None else value.unpack()


class Mirror:
    """Calls `added(kind, path, proxy)`, `changed(kind, path, proxy, names)`
    and `removed(kind, path)` as the host's objects come, change and go
    (kind is "widget" or "activity"), and `host(owner)` when the host's
    name gets or loses an owner (owner is None while it has none)."""

    def __init__(self, bus, added, changed, removed, host):
        self.bus = bus
        self.added, self.changed, self.removed, self.host = added, changed, removed, host
        self.manager = None
        self.known = {}
        Gio.DBusObjectManagerClient.new(
            bus, Gio.DBusObjectManagerClientFlags.NONE, HOST, ROOT, None, None, None, self.ready)

    @staticmethod
    def kind(proxy):
        name = proxy.get_interface_name()
        return "widget" if name == WIDGET else "activity" if name == ACTIVITY else None

    def ready(self, _source, result):
        try:
            self.manager = Gio.DBusObjectManagerClient.new_finish(result)
        except GLib.Error as error:
            print(f"widget-board: cannot follow {HOST}: {error.message}", flush=True)
            return
        self.manager.connect("interface-added", lambda _m, _o, proxy: self.add(proxy))
        self.manager.connect("interface-removed", lambda _m, _o, proxy: self.remove(proxy))
        self.manager.connect("object-added", lambda _m, obj: [self.add(p) for p in obj.get_interfaces()])
        self.manager.connect("object-removed", lambda _m, obj: [self.remove(p) for p in obj.get_interfaces()])
        self.manager.connect("interface-proxy-properties-changed", self.properties_changed)
        self.manager.connect("notify::name-owner", lambda *_: self.host(self.manager.get_name_owner()))
        self.host(self.manager.get_name_owner())
        # In the order the host placed them: its ids grow in length, then in text (w9 < w10).
        ids = sorted(self.manager.get_objects(), key=lambda o: (len(o.get_object_path()), o.get_object_path()))
        for obj in ids:
            for proxy in obj.get_interfaces():
                self.add(proxy)

    def add(self, proxy):
        kind = self.kind(proxy)
        path = proxy.get_object_path()
        if kind is None or (kind, path) in self.known:
            return
        self.known[(kind, path)] = proxy
        self.added(kind, path, proxy)

    def remove(self, proxy):
        kind = self.kind(proxy)
        path = proxy.get_object_path()
        if kind is None or self.known.pop((kind, path), None) is None:
            return
        self.removed(kind, path)

    def properties_changed(self, _manager, _obj, proxy, changed, invalidated):
        kind = self.kind(proxy)
        if kind is None:
            return
        names = set(changed.unpack().keys()) | set(invalidated)
        self.changed(kind, proxy.get_object_path(), proxy, names)

    def call_root(self, interface, method, args, callback, timeout=CALL_TIMEOUT_MS):
        """Calls a method of the host's root object; `callback(result, error)`."""
        def done(bus, res):
            try:
                callback(bus.call_finish(res).unpack(), None)
            except GLib.Error as error:
                callback(None, error)
        self.bus.call(HOST, ROOT, interface, method, args, None, Gio.DBusCallFlags.NONE, timeout, None, done)
