"""widget-board: a GTK 4 desktop for WidgetHost's widgets and Live Activities.

Every placed widget is a tile of its family's size, drawn from its view tree;
a click (or Enter/Space on the focused element) reports the innermost element
with an id under the pointer to the host, with an activation token minted for
that click. Live Activities sit in a strip at the top like the Dynamic
Island. See docs/board.md. This module is the application: its options, its
stylesheet and its window (window.py).
"""
import argparse
import gettext
import os
import sys
from gettext import gettext as _

import gi

gi.require_version("Gtk", "4.0")
gi.require_version("Gdk", "4.0")
gi.require_version("Gio", "2.0")
from gi.repository import Gdk, Gio, GLib, Gtk  # noqa: E402

from .layout import SCHEMA, SchemaMissing, migrate, settings  # noqa: E402
from .window import ACCELERATORS, BoardWindow  # noqa: E402

APP_ID = SCHEMA  # the app's id names its settings, as GNOME apps do
DOMAIN = "widget-board"  # the gettext domain of the board's strings and of its .ui files
SURFACES = ("desktop", "lock-screen", "car", "watch")


class Stylesheet:
    """The board's one style provider: style.css (with style-dark.css over it
    in the dark appearance) and the rules of every drawn view tree, whose
    elements have classes of their own."""

    def __init__(self, display, dark):
        self.provider = Gtk.CssProvider()
        Gtk.StyleContext.add_provider_for_display(display, self.provider, Gtk.STYLE_PROVIDER_PRIORITY_APPLICATION)
        self.views = {}
        self.pending = None
        self.set_dark(dark)

    def set_dark(self, dark):
        self.base = ""
        for name in ("style.css", "style-dark.css") if dark else ("style.css",):
            with open(os.path.join(os.path.dirname(__file__), name), encoding="utf-8") as file:
                self.base += file.read()
        self.load()

    def put(self, view, css):
        """A view's rules (None when it is gone), loaded with the others before the next frame."""
        if css:
            self.views[view] = css
        else:
            self.views.pop(view, None)
        if self.pending is None:
            self.pending = GLib.idle_add(self.reload, priority=GLib.PRIORITY_HIGH_IDLE)

    def reload(self):
        self.pending = None
        self.load()
        return GLib.SOURCE_REMOVE

    def load(self):
        self.provider.load_from_data("\n".join([self.base, *self.views.values()]).encode())


class Board(Gtk.Application):
    """The application: one window, its stylesheet, and the accelerators of its actions."""

    def __init__(self, options, settings):
        super().__init__(application_id=APP_ID, flags=Gio.ApplicationFlags.DEFAULT_FLAGS)
        self.options = options
        self.settings = settings
        self.window = None
        self.dark = False
        self.stylesheet = None

    def do_startup(self):
        Gtk.Application.do_startup(self)
        settings = Gtk.Settings.get_default()
        if self.options.theme != "system":
            settings.set_property("gtk-application-prefer-dark-theme", self.options.theme == "dark")
        self.dark = bool(settings.get_property("gtk-application-prefer-dark-theme"))
        self.stylesheet = Stylesheet(Gdk.Display.get_default(), self.dark)
        settings.connect("notify::gtk-application-prefer-dark-theme", self.on_theme)
        for action, accelerators in ACCELERATORS.items():
            self.set_accels_for_action(action, accelerators)

    def on_theme(self, settings, _pspec):
        self.dark = bool(settings.get_property("gtk-application-prefer-dark-theme"))
        self.stylesheet.set_dark(self.dark)
        if self.window is not None:
            self.window.redraw()

    def do_activate(self):
        if self.window is None:
            self.window = BoardWindow(self, self.settings)
        self.window.present()


def parse(argv):
    parser = argparse.ArgumentParser(
        prog="widget-board",
        description=_("A desktop for WidgetHost's widgets and Live Activities: draws every placed widget at its "
                      "family's size and reports taps on them to org.widgethost.Host1 on the session bus."),
        epilog=_("Where each widget sits is kept in GSettings, schema {schema}.").format(schema=APP_ID))
    parser.add_argument("--surface", choices=SURFACES, default="desktop",
                        help=_("the surface taps are reported from (default: desktop)"))
    parser.add_argument("--theme", choices=("system", "light", "dark"), default="system",
                        help=_("light or dark colours, or the desktop's setting (default: system)"))
    parser.add_argument("--size", type=lambda s: tuple(int(v) for v in s.split("x", 1)), default=(980, 720),
                        metavar="WxH", help=_("the window's size (default: 980x720)"))
    parser.add_argument("--version", action="version", version="widget-board " + VERSION)
    return parser.parse_args(argv)


VERSION = "0.1.0"


def main(argv=None):
    gettext.textdomain(DOMAIN)
    options = parse(sys.argv[1:] if argv is None else argv)
    if not Gtk.init_check() or Gdk.Display.get_default() is None:
        print(_("widget-board: no display to open (set DISPLAY or WAYLAND_DISPLAY)"), file=sys.stderr)
        return 1
    try:
        board_settings = settings()
    except SchemaMissing as error:
        print(f"widget-board: {error}", file=sys.stderr)
        return 1
    migrate(board_settings)
    return Board(options, board_settings).run([sys.argv[0]])
