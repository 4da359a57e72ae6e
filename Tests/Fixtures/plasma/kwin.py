#!/usr/bin/python3
"""kwin.py: real input to, and a look at, a KWin running as a Wayland
compositor (kwin_wayland) on the session bus in $DBUS_SESSION_BUS_ADDRESS and
the Wayland display $WAYLAND_DISPLAY, for the KDE Plasma applet's tests
(xdotool, which drive.py clicks with, needs an X display).

    kwin.py pointer        plug a pointer in: print "ready" once KWin has it, and keep it
                           until ended (or until KWin ends)
    kwin.py click X Y      move the pointer to X, Y and click the left button
    kwin.py windows        print KWin's windows as JSON:
                           [{"app-id", "title", "active", "x", "y", "width", "height"}],
                           the place and size being the window's surface (what its
                           client draws, without the title bar KWin adds)

Input goes through KWin's fake input protocol (org_kde_kwin_fake_input, of
Plasma's Wayland protocols), which KWin handles as a device of its seat: its
events are a person's, with the serials a person's give. KWin offers the
protocol only to the clients its desktop entry lets use it, unless it runs
with KWIN_WAYLAND_NO_PERMISSION_CHECKS=1, as the tests run it. Python has no
Wayland binding on Debian 12, and the few requests needed are short: this
script speaks Wayland's wire format itself on the display's socket.

Each fake input connection is a device of KWin's seat, there as long as the
connection is. KWin's virtual backend has no pointer of its own: with no
device, the seat has none, and a client takes the seat's pointer only when it
hears that one came, a moment after the device did, too late for the events of
a device that comes to click and goes. The tests plug a pointer in first
(`pointer`), as a desktop has, and click with devices beside it.

What KWin knows of its windows comes from a KWin script, which reads the
workspace and calls back a method this script serves on the session bus,
loaded with org.kde.kwin.Scripting and unloaded once it has answered. Exits 1
saying what failed.
"""
import json
import os
import socket
import struct
import sys
import tempfile

import gi

gi.require_version("Gio", "2.0")
gi.require_version("GLib", "2.0")
from gi.repository import Gio, GLib  # noqa: E402

BTN_LEFT = 0x110  # linux/input-event-codes.h


class Wayland:
    """A connection to the compositor on the Wayland wire: messages of 32-bit words,
    the object's id, then the message's size (high half) and opcode (low half),
    then its arguments."""

    DISPLAY = 1  # wl_display, the object every connection starts with

    def __init__(self):
        path = os.path.join(os.environ["XDG_RUNTIME_DIR"], os.environ["WAYLAND_DISPLAY"])
        self.socket = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.socket.connect(path)
        self.received = b""
        self.last_id = self.DISPLAY
        self.globals = {}
        self.registry = self.new_id()
        self.send(self.DISPLAY, 1, struct.pack("<I", self.registry))  # wl_display.get_registry
        self.roundtrip()

    def new_id(self):
        self.last_id += 1
        return self.last_id

    @staticmethod
    def string(text):
        data = text.encode() + b"\0"
        return struct.pack("<I", len(data)) + data + b"\0" * (-len(data) % 4)

    def send(self, target, opcode, arguments=b""):
        self.socket.sendall(struct.pack("<II", target, (8 + len(arguments)) << 16 | opcode) + arguments)

    def events(self):
        while True:
            while len(self.received) >= 8:
                target, word = struct.unpack_from("<II", self.received)
                size = word >> 16
                if len(self.received) < size:
                    break
                yield target, word & 0xFFFF, self.received[8:size]
                self.received = self.received[size:]
            data = self.socket.recv(65536)
            if not data:
                raise SystemExit("KWin closed the Wayland connection")
            self.received += data

    def roundtrip(self):
        """Waits until the compositor has handled every request sent (wl_display.sync), noting
        the globals the registry announces; a protocol error ends the script."""
        callback = self.new_id()
        self.send(self.DISPLAY, 0, struct.pack("<I", callback))
        for target, opcode, arguments in self.events():
            if target == self.registry and opcode == 0:  # wl_registry.global: name, interface, version
                (name, length) = struct.unpack_from("<II", arguments)
                interface = arguments[8:8 + length - 1].decode()
                (version,) = struct.unpack_from("<I", arguments, 8 + length + (-length % 4))
                self.globals[interface] = (name, version)
            elif target == self.DISPLAY and opcode == 0:  # wl_display.error: object, code, message
                (_, code, length) = struct.unpack_from("<III", arguments)
                raise SystemExit(f"KWin answered a protocol error {code}: {arguments[12:12 + length - 1].decode()}")
            elif target == callback:
                return

    def bind(self, interface, version):
        """Binds the global `interface` at `version` at most; returns its object's id."""
        if interface not in self.globals:
            raise SystemExit(f"KWin offers no {interface} (run it with KWIN_WAYLAND_NO_PERMISSION_CHECKS=1)")
        (name, offered) = self.globals[interface]
        bound = self.new_id()
        self.send(self.registry, 0, struct.pack("<I", name) + self.string(interface) + struct.pack("<II", min(version, offered), bound))
        return bound


class FakeInput:
    """org_kde_kwin_fake_input, version 4: pointer_motion_absolute came with 3."""

    def __init__(self):
        self.wayland = Wayland()
        self.device = self.wayland.bind("org_kde_kwin_fake_input", 4)
        if self.wayland.globals["org_kde_kwin_fake_input"][1] < 3:
            raise SystemExit("KWin's fake input is older than version 3: it cannot move the pointer to a place")
        self.wayland.send(self.device, 0, Wayland.string("WidgetHost's tests") + Wayland.string("clicks on the applet"))  # authenticate

    def move(self, x, y):
        self.wayland.send(self.device, 9, struct.pack("<ii", round(x * 256), round(y * 256)))  # pointer_motion_absolute, fixed 24.8
        self.wayland.roundtrip()

    def button(self, pressed):
        self.wayland.send(self.device, 2, struct.pack("<II", BTN_LEFT, 1 if pressed else 0))  # button
        self.wayland.roundtrip()


WINDOWS_SCRIPT = """
callDBus(%(name)s, "/", %(name)s, "Windows", JSON.stringify(workspace.clientList().filter(function (window) {
    return window.normalWindow;
}).map(function (window) {
    var surface = window.bufferGeometry;
    return {"app-id": window.resourceClass, "title": window.caption, "active": window === workspace.activeClient,
            "x": surface.x, "y": surface.y, "width": surface.width, "height": surface.height};
})));
"""
PROBE = "org.widgethost.test.KWinProbe"


def windows():
    bus = Gio.bus_get_sync(Gio.BusType.SESSION, None)
    answer = []
    loop = GLib.MainLoop()

    def answered(_connection, _sender, _path, _interface, _method, parameters, invocation):
        answer.append(parameters.unpack()[0])
        invocation.return_value(None)
        loop.quit()

    node = Gio.DBusNodeInfo.new_for_xml(
        f'<node><interface name="{PROBE}"><method name="Windows"><arg type="s" direction="in"/></method></interface></node>')
    bus.register_object("/", node.interfaces[0], answered, None, None)
    # Owned before the script runs, which calls it at once. 4: DBUS_NAME_FLAG_DO_NOT_QUEUE; 1: the primary owner.
    (owned,) = bus.call_sync("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "RequestName",
                             GLib.Variant("(su)", (PROBE, 4)), GLib.VariantType("(u)"), Gio.DBusCallFlags.NONE, 10000, None).unpack()
    if owned != 1:
        raise SystemExit(f"another kwin.py owns {PROBE}")

    def kwin(path, interface, method, arguments=None, reply=None):
        return bus.call_sync("org.kde.KWin", path, interface, method, arguments,
                             GLib.VariantType(reply) if reply else None, Gio.DBusCallFlags.NONE, 10000, None)

    with tempfile.NamedTemporaryFile("w", suffix=".js") as script:
        script.write(WINDOWS_SCRIPT % {"name": json.dumps(PROBE)})
        script.flush()
        plugin = f"widgethost-windows-{os.getpid()}"
        (number,) = kwin("/Scripting", "org.kde.kwin.Scripting", "loadScript", GLib.Variant("(ss)", (script.name, plugin)), "(i)").unpack()
        try:
            kwin(f"/{number}", "org.kde.kwin.Script", "run")
            GLib.timeout_add_seconds(10, loop.quit)
            loop.run()
        finally:
            kwin("/Scripting", "org.kde.kwin.Scripting", "unloadScript", GLib.Variant("(s)", (plugin,)))
    if not answer:
        raise SystemExit("KWin's script did not answer in 10 s")
    return answer[0]


def main(arguments):
    command = arguments[0] if arguments else ""
    if command == "click" and len(arguments) == 3:
        device = FakeInput()
        device.move(float(arguments[1]), float(arguments[2]))
        device.button(True)
        device.button(False)
    elif command == "pointer" and len(arguments) == 1:
        device = FakeInput()
        device.wayland.roundtrip()
        print("ready", flush=True)
        for _ in device.wayland.events():
            pass
    elif command == "windows" and len(arguments) == 1:
        print(windows())
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except GLib.Error as error:
        raise SystemExit(f"kwin.py: {error.message}")
