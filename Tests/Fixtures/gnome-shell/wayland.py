#!/usr/bin/python3
"""wayland.py: real input to, and a look at, a gnome-shell running as a Wayland
compositor on the session bus in $DBUS_SESSION_BUS_ADDRESS, for the
extension's tests (xdotool, which drive.py clicks with, needs an X display).

    wayland.py click X Y [--button N] [--hold S]
                                         move the pointer to X, Y and click (button 1,
                                         or 3 for a secondary click); with --hold, with a
                                         keyboard too (a Shift pressed before), kept S
                                         seconds more with the pointer
    wayland.py park                      move the pointer to the bottom right corner
    wayland.py key NAME...               press and release keys (GDK names: Escape, Return)
    wayland.py windows                   print the shell's windows as JSON:
                                         [{"app-id", "title", "has-focus", ...}]
    wayland.py screenshot FILE [X,Y ...] save the screen as FILE (PNG) and print JSON:
                                         {"colours": distinct colours of a sample of its
                                         pixels, "at": {"X,Y": "#rrggbb"}}
    wayland.py locate FILE #RRGGBB       save the screen as FILE and print where that colour
                                         is as JSON: {"x", "y", "width", "height"} of the
                                         rectangle holding every pixel of it (a client's
                                         window has no place a Wayland client knows of)

Input goes through Mutter's remote desktop API (org.gnome.Mutter.RemoteDesktop):
a session's virtual pointer and keyboard, whose events the shell handles as a
person's. Without a screen cast stream such a session can only move the pointer
relatively; a move far past the bottom right corner (where the pointer stops,
kept on the screen) and back from there puts it where it is asked. The session's
devices come with its first event of each kind and go when it stops: a seat
then has no pointer or keyboard, which a desktop always has. Mutter honours an
xdg-activation token a client asked for with a click's serial only when the
client had the keyboard's focus then, and only while the pointer that clicked
is still on its window: a click whose token an app will use makes a keyboard
first and holds the session (--hold) until the app has used it.

The shell answers org.gnome.Shell.Introspect.GetWindows and
org.gnome.Shell.Screenshot only to the desktop's own components, which it tells
by the bus names they own (or in unsafe mode); on the test's private bus this
script owns the name of one of them, GNOME's portal backend, as it does on a
desktop. Exits 1 saying what failed.
"""
import json
import sys
import time

import gi

gi.require_version("Gdk", "4.0")
gi.require_version("GdkPixbuf", "2.0")
gi.require_version("Gio", "2.0")
gi.require_version("GLib", "2.0")
from gi.repository import Gdk, GdkPixbuf, Gio, GLib  # noqa: E402

REMOTE_DESKTOP = "org.gnome.Mutter.RemoteDesktop"
ALLOWED_NAME = "org.freedesktop.impl.portal.desktop.gnome"
FAR = 100000.0  # further than any screen: the pointer stops at its edge
BUTTONS = {1: 0x110, 2: 0x112, 3: 0x111}  # BTN_LEFT, BTN_MIDDLE, BTN_RIGHT (linux/input-event-codes.h)

bus = Gio.bus_get_sync(Gio.BusType.SESSION, None)


def call(destination, path, interface, method, arguments=None, reply=None, timeout=10000):
    result = bus.call_sync(destination, path, interface, method, arguments,
                           GLib.VariantType(reply) if reply else None, Gio.DBusCallFlags.NONE, timeout, None)
    return result.unpack() if result is not None else None


class RemoteDesktop:
    """A started remote desktop session, stopped on leaving the `with`."""

    def __enter__(self):
        (self.path,) = call(REMOTE_DESKTOP, "/org/gnome/Mutter/RemoteDesktop", REMOTE_DESKTOP, "CreateSession", None, "(o)")
        self.session("Start")
        return self

    def __exit__(self, *_):
        self.session("Stop")

    def session(self, method, signature=None, *arguments):
        call(REMOTE_DESKTOP, self.path, REMOTE_DESKTOP + ".Session", method,
             GLib.Variant(signature, arguments) if signature else None)

    def move_to(self, x, y):
        self.session("NotifyPointerMotionRelative", "(dd)", FAR, FAR)
        width, height = screen_size()
        self.session("NotifyPointerMotionRelative", "(dd)", float(x - (width - 1)), float(y - (height - 1)))

    def button(self, button, pressed):
        self.session("NotifyPointerButton", "(ib)", BUTTONS[button], pressed)

    def key(self, keysym, pressed):
        self.session("NotifyKeyboardKeysym", "(ub)", keysym, pressed)


def screen_size():
    (size,) = call("org.gnome.Shell.Introspect", "/org/gnome/Shell/Introspect", "org.freedesktop.DBus.Properties", "Get",
                   GLib.Variant("(ss)", ("org.gnome.Shell.Introspect", "ScreenSize")), "(v)")
    return size


def as_allowed_caller(method):
    """Calls `method()` once this connection owns ALLOWED_NAME and the shell has seen it do so
    (it learns of owners by watching the name: a call may come before it has)."""
    (reply,) = call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "RequestName",
                    GLib.Variant("(su)", (ALLOWED_NAME, 4)), "(u)")  # DO_NOT_QUEUE
    if reply not in (1, 4):  # the primary owner, now or already
        raise RuntimeError(f"could not own {ALLOWED_NAME} (RequestName answered {reply})")
    for attempt in range(50):
        try:
            return method()
        except GLib.Error as error:
            if "AccessDenied" not in error.message or attempt == 49:
                raise
            time.sleep(0.1)


def windows():
    (found,) = as_allowed_caller(lambda: call(
        "org.gnome.Shell.Introspect", "/org/gnome/Shell/Introspect", "org.gnome.Shell.Introspect", "GetWindows", None,
        "(a{ta{sv}})"))
    return [{"id": wid, **properties} for wid, properties in sorted(found.items())]


def screen(file):
    """The screen saved as `file`: (its path, width, height, colour(x, y) as "#rrggbb")."""
    success, saved = as_allowed_caller(lambda: call(
        "org.gnome.Shell.Screenshot", "/org/gnome/Shell/Screenshot", "org.gnome.Shell.Screenshot", "Screenshot",
        GLib.Variant("(bbs)", (False, False, file)), "(bs)", timeout=30000))
    if not success:
        raise RuntimeError(f"the shell did not save a screenshot as {file}")
    image = GdkPixbuf.Pixbuf.new_from_file(saved)
    pixels, stride, channels = image.get_pixels(), image.get_rowstride(), image.get_n_channels()

    def colour(x, y):
        at = y * stride + x * channels
        return "#%02x%02x%02x" % tuple(pixels[at:at + 3])

    return saved, image.get_width(), image.get_height(), colour


def locate(file, wanted):
    _, width, height, colour = screen(file)
    found = [(x, y) for y in range(height) for x in range(width) if colour(x, y) == wanted.lower()]
    if not found:
        raise RuntimeError(f"no pixel of the screen is {wanted}")
    xs, ys = [x for x, _ in found], [y for _, y in found]
    return {"x": min(xs), "y": min(ys), "width": max(xs) - min(xs) + 1, "height": max(ys) - min(ys) + 1}


def screenshot(file, points):
    saved, width, height, colour = screen(file)
    step = max(1, min(16, height // 8))
    colours = {colour(x, y) for y in range(0, height, step) for x in range(0, width, step)}
    at = {}
    for point in points:
        x, y = (int(v) for v in point.split(","))
        at[point] = colour(x, y) if 0 <= x < width and 0 <= y < height else None
    return {"file": saved, "width": width, "height": height, "colours": len(colours), "at": at}


def main(argv):
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    command, arguments = argv[0], argv[1:]
    try:
        if command == "click":
            button, hold = 1, 0.0
            if "--button" in arguments:
                at = arguments.index("--button")
                button = int(arguments[at + 1])
                del arguments[at:at + 2]
            if "--hold" in arguments:
                at = arguments.index("--hold")
                hold = float(arguments[at + 1])
                del arguments[at:at + 2]
            x, y = (int(v) for v in arguments)
            with RemoteDesktop() as desktop:
                if hold:
                    desktop.key(Gdk.KEY_Shift_L, True)
                    desktop.key(Gdk.KEY_Shift_L, False)
                desktop.move_to(x, y)
                time.sleep(0.05)
                desktop.button(button, True)
                time.sleep(0.05)
                desktop.button(button, False)
                time.sleep(0.05 + hold)
        elif command == "park":
            with RemoteDesktop() as desktop:
                desktop.session("NotifyPointerMotionRelative", "(dd)", FAR, FAR)
        elif command == "key":
            with RemoteDesktop() as desktop:
                for name in arguments:
                    keysym = Gdk.keyval_from_name(name)
                    if keysym == Gdk.KEY_VoidSymbol:
                        raise ValueError(f"{name!r} names no key (GDK's key names: Escape, Return, Tab)")
                    desktop.key(keysym, True)
                    desktop.key(keysym, False)
                time.sleep(0.05)
        elif command == "windows":
            print(json.dumps(windows(), default=str))
        elif command == "screenshot":
            print(json.dumps(screenshot(arguments[0], arguments[1:])))
        elif command == "locate":
            print(json.dumps(locate(arguments[0], arguments[1])))
        else:
            print(f"unknown command {command!r}\n{__doc__}", file=sys.stderr)
            return 2
    except (GLib.Error, RuntimeError, ValueError) as error:
        print(f"wayland.py {' '.join(argv)}: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
