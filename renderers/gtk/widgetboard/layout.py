"""Where each widget sits: the board's order, kept in GSettings, and the
container that lays the tiles out in that order. See docs/board.md#settings.
"""
import json
import os
import subprocess
from gettext import gettext as _

import gi

gi.require_version("Gtk", "4.0")
gi.require_version("Gdk", "4.0")
gi.require_version("Gio", "2.0")
from gi.repository import Gdk, Gio, GLib, GObject, Gtk  # noqa: E402

SCHEMA = "org.widgethost.Board"
# In a checkout the schema is beside the board, and compiled there as it
# changes (as Python keeps its bytecode beside the modules); the package
# installs it in /usr/share/glib-2.0/schemas, which GLib's trigger compiles.
CHECKOUT_SCHEMAS = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "schemas")


class SchemaMissing(Exception):
    """The board's GSettings schema is neither installed nor compiled in the checkout."""


def settings():
    """The board's settings, from the checkout's schema when the board runs from one."""
    source = Gio.SettingsSchemaSource.get_default()
    if os.path.exists(os.path.join(CHECKOUT_SCHEMAS, SCHEMA + ".gschema.xml")):
        compile_schemas(CHECKOUT_SCHEMAS)
        source = Gio.SettingsSchemaSource.new_from_directory(CHECKOUT_SCHEMAS, source, False)
    schema = source.lookup(SCHEMA, True) if source is not None else None
    if schema is None:
        raise SchemaMissing(_("the GSettings schema {schema} is not installed: install {file} in "
                              "/usr/share/glib-2.0/schemas and run glib-compile-schemas there")
                            .format(schema=SCHEMA, file=SCHEMA + ".gschema.xml"))
    return Gio.Settings.new_full(schema, None, None)


def compile_schemas(folder):
    """Compiles the checkout's schema unless gschemas.compiled is newer."""
    source = os.path.join(folder, SCHEMA + ".gschema.xml")
    compiled = os.path.join(folder, "gschemas.compiled")
    if os.path.exists(compiled) and os.path.getmtime(compiled) >= os.path.getmtime(source):
        return
    try:
        result = subprocess.run(["glib-compile-schemas", "--strict", folder], capture_output=True, text=True)
    except FileNotFoundError:
        raise SchemaMissing(_("glib-compile-schemas is needed to compile {file}: install libglib2.0-bin")
                            .format(file=os.path.normpath(source))) from None
    if result.returncode != 0:
        raise SchemaMissing(_("glib-compile-schemas could not compile {file}: {error}")
                            .format(file=os.path.normpath(source), error=result.stderr.strip()))


def migrate(settings):
    """Moves the order an older board kept in $XDG_CONFIG_HOME/widget-board/board.json
    into the settings, once: the file goes. An order the settings already hold stays."""
    path = os.path.join(GLib.get_user_config_dir(), "widget-board", "board.json")
    try:
        with open(path, encoding="utf-8") as f:
            order = json.load(f).get("order", [])
    except FileNotFoundError:
        return
    except (OSError, ValueError, AttributeError):
        order = []
    if settings.get_user_value("order") is None and isinstance(order, list):
        settings.set_strv("order", [i for i in order if isinstance(i, str)])
    try:
        os.remove(path)
        os.rmdir(os.path.dirname(path))
    except OSError:
        pass


class Layout:
    """The board's order of widget ids (the key `order`). `changed()` is
    called when something else changes it, as `gsettings set` does."""

    def __init__(self, settings, changed):
        self.settings = settings
        self.order = list(settings.get_strv("order"))
        settings.connect("changed::order", lambda *_: self.reread(changed))

    def reread(self, changed):
        order = list(self.settings.get_strv("order"))
        if order != self.order:
            self.order = order
            changed()

    def add(self, widget_id):
        """A new widget's place: last, unless the order has one for it."""
        if widget_id not in self.order:
            self.order.append(widget_id)
            self.save()

    def rank(self, widget_id):
        """Where a widget goes: its place in the order, else last. Ranking
        writes nothing: the board ranks its widgets again whenever the key
        changes, and a backend that cannot store the key changes it back."""
        if widget_id not in self.order:
            self.order.append(widget_id)
        return self.order.index(widget_id)

    def move(self, widget_id, before_id):
        """Puts a widget just before another one (or last when `before_id` is None)."""
        if widget_id not in self.order or widget_id == before_id:
            return
        self.order.remove(widget_id)
        index = self.order.index(before_id) if before_id in self.order else len(self.order)
        self.order.insert(index, widget_id)
        self.save()

    def forget(self, widget_id):
        if widget_id in self.order:
            self.order.remove(widget_id)
            self.save()

    def save(self):
        self.settings.set_strv("order", self.order)


class Wrap(Gtk.Widget):
    """Lays tiles out as text flows: left to right at their own sizes, a new
    row when one is full, each row as tall as its tallest tile. (A FlowBox
    would line tiles up in columns as wide as the widest tile.)"""
    __gtype_name__ = "WbWrap"

    spacing = GObject.Property(type=int, default=0)

    def children(self):
        child = self.get_first_child()
        while child is not None:
            yield child
            child = child.get_next_sibling()

    def arrange(self, widgets):
        """Holds `widgets` in this order: new ones are added, the others moved (keeping the focus)."""
        after = None
        for widget in widgets:
            widget.insert_after(self, after)
            after = widget
        self.queue_resize()

    def remove(self, widget):
        widget.unparent()
        self.queue_resize()

    def rows(self, width):
        """The children in rows that fit `width`: [(height, [(child, w, h)])]."""
        rows, row, used = [], [], 0
        for child in self.children():
            if not child.get_visible():
                continue
            w = child.measure(Gtk.Orientation.HORIZONTAL, -1)[1]
            h = child.measure(Gtk.Orientation.VERTICAL, w)[1]
            if row and used + self.spacing + w > width:
                rows.append(row)
                row, used = [], 0
            used += (self.spacing if row else 0) + w
            row.append((child, w, h))
        if row:
            rows.append(row)
        return [(max(h for _, _, h in r), r) for r in rows]

    def do_get_request_mode(self):
        return Gtk.SizeRequestMode.HEIGHT_FOR_WIDTH

    def do_measure(self, orientation, for_size):
        sizes = [(c.measure(Gtk.Orientation.HORIZONTAL, -1)[1], c) for c in self.children() if c.get_visible()]
        if orientation == Gtk.Orientation.HORIZONTAL:
            widest = max((w for w, _ in sizes), default=0)
            return widest, sum(w for w, _ in sizes) + self.spacing * max(0, len(sizes) - 1), -1, -1
        rows = self.rows(for_size if for_size > 0 else 1 << 30)
        height = sum(h for h, _ in rows) + self.spacing * max(0, len(rows) - 1)
        return height, height, -1, -1

    def do_size_allocate(self, width, _height, _baseline):
        y = 0
        for row_height, row in self.rows(width):
            x = 0
            for child, w, h in row:
                child.size_allocate(self.rectangle(x, y, w, h), -1)
                x += w + self.spacing
            y += row_height + self.spacing

    @staticmethod
    def rectangle(x, y, width, height):
        allocation = Gdk.Rectangle()
        allocation.x, allocation.y, allocation.width, allocation.height = x, y, width, height
        return allocation

    def do_dispose(self):
        while (child := self.get_first_child()) is not None:
            child.unparent()
        Gtk.Widget.do_dispose(self)
