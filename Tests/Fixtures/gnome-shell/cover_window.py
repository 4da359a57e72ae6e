#!/usr/bin/python3
"""cover_window.py: an ordinary application window over the desktop, for
GnomeShellTests: a GTK 4 window on the X display in $DISPLAY, maximized,
without decorations, filled with one colour, until it is ended with SIGTERM.

    cover_window.py COLOUR   COLOUR as CSS takes it (#00ff00)

It prints "shown" once its window is mapped, and "pressed" for every press
of a pointer button it receives.
"""
import signal
import sys

import gi

gi.require_version("Gdk", "4.0")
gi.require_version("Gtk", "4.0")
from gi.repository import Gdk, GLib, Gtk  # noqa: E402


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: cover_window.py COLOUR")
    Gtk.init()
    css = Gtk.CssProvider()
    css.load_from_data(f"window.cover {{ background: {sys.argv[1]}; }}".encode())
    Gtk.StyleContext.add_provider_for_display(Gdk.Display.get_default(), css, Gtk.STYLE_PROVIDER_PRIORITY_APPLICATION)
    window = Gtk.Window(title="Cover", decorated=False)
    window.add_css_class("cover")
    window.maximize()
    click = Gtk.GestureClick(button=0)
    click.connect("pressed", lambda *_: print("pressed", flush=True))
    window.add_controller(click)
    window.connect("map", lambda _window: print("shown", flush=True))
    loop = GLib.MainLoop()
    window.connect("close-request", lambda _window: loop.quit() or False)
    GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, signal.SIGTERM, lambda: loop.quit() or False)
    window.present()
    loop.run()


if __name__ == "__main__":
    main()
