"""widget-board: a GTK 4 desktop for WidgetHost's widgets and Live Activities.

Every placed widget is a tile of its family's size, drawn from its view tree;
a click (or Enter/Space on the focused element) reports the innermost element
with an id under the pointer to the host, with an activation token minted for
that click. Live Activities sit in a strip at the top like the Dynamic
Island. See docs/board.md.
"""
import argparse
import json
import os
import sys

import gi

gi.require_version("Gtk", "4.0")
gi.require_version("Gdk", "4.0")
gi.require_version("Gio", "2.0")
from gi.repository import Gdk, Gio, GLib, GObject, Gtk  # noqa: E402

from . import gallery  # noqa: E402
from . import mirror as hostmirror  # noqa: E402
from .vocabulary import FAMILY_SIZES, MONOCHROME, Renderer, accessible_name, gtk_role  # noqa: E402

APP_ID = "org.widgethost.Board"
SURFACES = ("desktop", "lock-screen", "car", "watch")
FEEDBACK_SECONDS = 3
EXPANDED_LINGER_MS = 600  # the expanded presentation stays this long after the pointer leaves

BOARD_CSS = """
.wb-board { padding: 18px; }
.wb-tile { border-radius: 22px; background-color: @wb_tile_bg; color: @wb_tile_fg; }
.wb-tile:focus-visible { outline: 2px solid @accent_color; outline-offset: 2px; }
.wb-tile.wb-mono { background-color: @wb_mono_bg; color: @wb_mono_fg; border-radius: 14px; }
.wb-tile > .wb-feedback, .wb-activity .wb-feedback {
  background-color: rgba(0,0,0,0.72); color: white; border-radius: 10px; padding: 4px 8px; margin: 6px; }
.wb-tile button.wb-link, .wb-tile button.wb-button, .wb-tile button.wb-toggle { padding: 2px 6px; min-height: 0; }
.wb-tile button.wb-link { color: @wb_link; }
.wb-tile progressbar.horizontal > trough, .wb-tile levelbar.horizontal > trough { min-width: 100px; }
.wb-tile button.wb-button, .wb-tile button.wb-toggle { background-color: alpha(currentColor, 0.1); border-radius: 8px; }
.wb-tile button.wb-toggle.wb-on { background-color: #0a84ff; color: white; }
.wb-island { background-color: black; color: white; border-radius: 22px; padding: 6px 14px; min-height: 24px; }
.wb-island button { color: white; }
.wb-expanded { background-color: black; color: white; border-radius: 28px; }
.wb-expanded button.wb-link { color: #78b4ff; }
.wb-minimal { background-color: black; color: white; border-radius: 18px; padding: 6px; min-width: 24px; }
.wb-empty { color: alpha(currentColor, 0.6); }
.wb-lockscreen { background-color: alpha(currentColor, 0.06); border-radius: 18px; padding: 12px; }
.wb-tile.wb-editing { opacity: 0.92; }
.wb-tile button.wb-remove, .wb-tile button.wb-edit { background-image: none; border: none; box-shadow: none;
  color: white; margin: 6px; font-weight: bold; }
.wb-tile button.wb-remove { background-color: #e5484d; border-radius: 999px; min-width: 26px; min-height: 26px; padding: 0; }
.wb-tile button.wb-edit { background-color: rgba(0,0,0,0.72); border-radius: 10px; padding: 2px 10px; min-height: 0; }
.wb-gallery-kind { background-color: alpha(currentColor, 0.06); border-radius: 14px; padding: 10px 12px; }
"""

COLOURS = {
    False: {"wb_tile_bg": "#ffffff", "wb_tile_fg": "#1c1c1e", "wb_mono_bg": "#e8e8ed", "wb_mono_fg": "#3a3a3c",
            "wb_link": "#0a60d0", "wb_window": "#ececf0"},
    True: {"wb_tile_bg": "#2c2c2e", "wb_tile_fg": "#f2f2f7", "wb_mono_bg": "#1c1c1e", "wb_mono_fg": "#d1d1d6",
           "wb_link": "#78b4ff", "wb_window": "#151517"},
}


def config_file():
    return os.path.join(GLib.get_user_config_dir(), "widget-board", "board.json")


class Layout:
    """Where each widget sits: the board's order of widget ids, kept in
    $XDG_CONFIG_HOME/widget-board/board.json."""

    def __init__(self, path):
        self.path = path
        try:
            with open(path, encoding="utf-8") as f:
                order = json.load(f).get("order", [])
            self.order = [i for i in order if isinstance(i, str)]
        except (OSError, ValueError, AttributeError):
            self.order = []

    def position(self, widget_id, present):
        """Where a widget goes among the `present` ones (ids in board order)."""
        if widget_id not in self.order:
            self.order.append(widget_id)
            self.save()
        rank = self.order.index(widget_id)
        return sum(1 for other in present if other in self.order and self.order.index(other) < rank)

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
        try:
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            temporary = self.path + ".tmp"
            with open(temporary, "w", encoding="utf-8") as f:
                json.dump({"order": self.order}, f)
            os.replace(temporary, self.path)
        except OSError as error:
            print(f"widget-board: cannot save the layout in {self.path}: {error}", file=sys.stderr)


def launch_token(widget, app_id, time):
    """An activation token for the click at `time`: the display's launch
    context and the app's desktop entry, as a launcher mints one (X11 and Wayland)."""
    try:
        context = widget.get_display().get_app_launch_context()
        context.set_timestamp(time)
        try:
            info = Gio.DesktopAppInfo.new(app_id + ".desktop")
        except TypeError:  # no desktop entry: the token still names the app
            info = Gio.AppInfo.create_from_commandline("true", app_id, Gio.AppInfoCreateFlags.NONE)
        return context.get_startup_notify_id(info, []) or ""
    except GLib.Error:
        return ""


class Clamp(Gtk.Widget):
    """Holds a drawn tree at exactly its family's size: a tree that asks for
    more room is cut at the tile's edge rather than growing the tile."""

    def __init__(self, width, height):
        super().__init__(overflow=Gtk.Overflow.HIDDEN)
        self.width, self.height = width, height
        self.child = None

    def set_child(self, child):
        if self.child is not None:
            self.child.unparent()
        self.child = child
        if child is not None:
            child.set_parent(self)

    def get_child(self):
        return self.child

    def do_measure(self, orientation, _for_size):
        size = self.width if orientation == Gtk.Orientation.HORIZONTAL else self.height
        return size, size, -1, -1

    def do_size_allocate(self, width, height, baseline):
        if self.child is not None:
            least_width = self.child.measure(Gtk.Orientation.HORIZONTAL, -1)[0]
            least_height = self.child.measure(Gtk.Orientation.VERTICAL, max(width, least_width))[0]
            self.child.allocate(max(width, least_width), max(height, least_height), baseline, None)

    def do_dispose(self):
        self.set_child(None)
        Gtk.Widget.do_dispose(self)


class Wrap(Gtk.Widget):
    """Lays tiles out as text flows: left to right at their own sizes, a new
    row when one is full, each row as tall as its tallest tile. (A FlowBox
    would line tiles up in columns as wide as the widest tile.)"""

    def __init__(self, spacing):
        super().__init__()
        self.spacing = spacing

    def children(self):
        child = self.get_first_child()
        while child is not None:
            yield child
            child = child.get_next_sibling()

    def insert(self, widget, index):
        after = None
        for i, child in enumerate(self.children()):
            if i == index:
                break
            after = child
        widget.insert_after(self, after)
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


class Tappable:
    """A drawn view tree inside a frame that reports taps: on a widget tile or
    on a Live Activity's presentation. `report(element_id, time)` sends one."""

    def __init__(self, frame, board):
        self.frame = frame
        self.board = board
        self.rendered = None
        self.pressed = None
        self.provider = None
        press = Gtk.GestureClick(propagation_phase=Gtk.PropagationPhase.CAPTURE)
        press.connect("pressed", self.on_pressed)
        frame.add_controller(press)
        release = Gtk.GestureClick()
        release.connect("released", self.on_released)
        frame.add_controller(release)

    def draw(self, tree, family, scope, bindings=None):
        renderer = Renderer(scope, family, self.board.dark, self.on_clicked, bindings)
        self.rendered = renderer.render(tree)
        if self.provider is not None:
            Gtk.StyleContext.remove_provider_for_display(self.frame.get_display(), self.provider)
        self.provider = Gtk.CssProvider()
        self.provider.load_from_data(self.rendered.css.encode())
        Gtk.StyleContext.add_provider_for_display(self.frame.get_display(), self.provider, Gtk.STYLE_PROVIDER_PRIORITY_APPLICATION)
        return self.rendered.root

    def release(self):
        if self.provider is not None:
            Gtk.StyleContext.remove_provider_for_display(self.frame.get_display(), self.provider)
            self.provider = None

    def element_at(self, x, y):
        picked = self.frame.pick(x, y, Gtk.PickFlags.DEFAULT)
        return picked, (self.rendered.element_id_at(picked, self.frame) if self.rendered else "")

    def on_pressed(self, gesture, _n, x, y):
        picked, ident = self.element_at(x, y)
        self.pressed = (picked, ident, gesture.get_current_event_time())

    def on_released(self, gesture, _n, x, y):
        """A click that no button took: on text, an image or the background."""
        picked, ident = self.element_at(x, y)
        if self.inside_button(picked):
            return
        self.report(ident, gesture.get_current_event_time())

    def inside_button(self, widget):
        while widget is not None and widget is not self.frame:
            if isinstance(widget, Gtk.Button):
                return True
            widget = widget.get_parent()
        return False

    def on_clicked(self, own_id, button):
        """A link, button or toggle was clicked: by the pointer, the innermost
        element with an id under it; by the keyboard, the control itself."""
        if self.pressed is not None:
            picked, ident, time = self.pressed
            self.pressed = None
            if picked is not None and (picked is button or picked.is_ancestor(button)):
                self.report(ident, time)
                return
        self.report(own_id, Gdk.CURRENT_TIME)

    def report(self, element_id, time):
        raise NotImplementedError

    def show_feedback(self, text):
        self.board.feedback(self.overlay, text)


class Tile(Tappable):
    """One placed widget, drawn at its family's size."""

    def __init__(self, board, path, proxy):
        self.path = path
        self.proxy = proxy
        self.overlay = Gtk.Overlay(accessible_role=gtk_role("widget"), focusable=True)
        self.overlay.add_css_class("wb-tile")
        super().__init__(self.overlay, board)
        self.widget_id = hostmirror.unpack(proxy, "Id", path.rsplit("/", 1)[-1])
        self.app_id = hostmirror.unpack(proxy, "AppId", "")
        self.kind = hostmirror.unpack(proxy, "Kind", "")
        self.family = hostmirror.unpack(proxy, "Family", "systemSmall")
        if self.family in MONOCHROME:
            self.overlay.add_css_class("wb-mono")
        width, height = FAMILY_SIZES.get(self.family, FAMILY_SIZES["systemSmall"])
        self.clamp = Clamp(width, height)
        self.overlay.set_child(self.clamp)
        self.overlay.set_overflow(Gtk.Overflow.HIDDEN)
        self.overlay.set_halign(Gtk.Align.START)
        self.overlay.set_valign(Gtk.Align.START)
        self.overlay.set_cursor_from_name("pointer")
        keys = Gtk.EventControllerKey()
        keys.connect("key-pressed", self.on_key)
        self.overlay.add_controller(keys)
        drag = Gtk.DragSource(actions=Gdk.DragAction.MOVE)
        drag.connect("prepare", self.on_drag_prepare)
        self.overlay.add_controller(drag)
        drop = Gtk.DropTarget.new(GObject.TYPE_STRING, Gdk.DragAction.MOVE)
        drop.connect("drop", lambda _t, value, x, _y: self.board.move_tile(value, self, after=x > self.overlay.get_width() / 2))
        self.overlay.add_controller(drop)
        self.controls = []
        self.editing_shown = None
        self.overlay.widget_board_tile = self
        self.refresh()

    def refresh(self):
        text = hostmirror.unpack(self.proxy, "Content", "")
        try:
            tree = json.loads(text) if text else None
        except ValueError:
            tree = None
        if tree is None:
            label = Gtk.Label(label=self.kind if text == "" else "Cannot draw this content")
            label.add_css_class("wb-empty")
            root = label
            self.release()
            self.rendered = None
        else:
            try:
                root = self.draw(tree, self.family, "w" + self.widget_id)
            except Exception as error:  # noqa: BLE001 - one tree the board cannot draw must not stop the board
                print(f"widget-board: cannot draw widget {self.widget_id}: {error!r}", file=sys.stderr)
                root = Gtk.Label(label="Cannot draw this content")
                self.rendered = None
        self.clamp.set_child(root)
        self.tree = tree
        self.overlay.update_property([Gtk.AccessibleProperty.LABEL], [self.name()])
        self.overlay.set_tooltip_text(f"{self.board.kind_name(self.app_id, self.kind)} — {self.app_id}")
        if self.editing_shown != self.board.editing:
            self.set_editing(self.board.editing)
        else:
            self.name_controls()

    def name(self):
        """The widget's accessible name: its tree's label or text, else its kind's name."""
        name = accessible_name(self.tree) if isinstance(self.tree, dict) else ""
        return name or self.board.kind_name(self.app_id, self.kind)

    def set_editing(self, editing):
        """In edit mode the widget's content takes no taps; a remove button and,
        for a configurable kind, an edit button sit on the tile instead."""
        self.editing_shown = editing
        for control in self.controls:
            self.overlay.remove_overlay(control)
        self.controls = []
        self.clamp.set_can_target(not editing)
        self.clamp.set_can_focus(not editing)
        if editing:
            self.overlay.add_css_class("wb-editing")
            self.overlay.set_cursor_from_name("grab")
        else:
            self.overlay.remove_css_class("wb-editing")
            self.overlay.set_cursor_from_name("pointer")
            return
        remove = Gtk.Button(label="−", halign=Gtk.Align.START, valign=Gtk.Align.START)
        remove.add_css_class("wb-remove")
        remove.set_tooltip_text("Remove this widget")
        remove.widget_board_verb = "Remove"
        remove.connect("clicked", lambda _b: self.board.remove_tile(self))
        self.controls.append(remove)
        kind = self.board.catalogue.kind(self.app_id, self.kind)
        if kind is not None and kind.parameters:
            edit = Gtk.Button(label="Edit Widget", halign=Gtk.Align.CENTER, valign=Gtk.Align.END)
            edit.add_css_class("wb-edit")
            edit.widget_board_verb = "Edit"
            edit.connect("clicked", lambda _b: self.board.edit_tile(self))
            self.controls.append(edit)
        for control in self.controls:
            self.overlay.add_overlay(control)
        self.name_controls()

    def name_controls(self):
        """The edit-mode buttons are named after what they do and the widget's name."""
        name = self.name()
        for control in self.controls:
            control.update_property([Gtk.AccessibleProperty.LABEL], [f"{control.widget_board_verb} {name}"])

    def on_drag_prepare(self, _source, _x, _y):
        if not self.board.editing:
            return None
        return Gdk.ContentProvider.new_for_value(self.widget_id)

    def on_key(self, _controller, keyval, _code, state):
        if self.board.editing and self.overlay.has_focus():
            if keyval in (Gdk.KEY_Delete, Gdk.KEY_BackSpace):
                self.board.remove_tile(self)
                return True
            if state & Gdk.ModifierType.CONTROL_MASK and keyval in (Gdk.KEY_Left, Gdk.KEY_Right):
                self.board.step_tile(self, -1 if keyval == Gdk.KEY_Left else 1)
                return True
            return False
        if keyval in (Gdk.KEY_Return, Gdk.KEY_KP_Enter, Gdk.KEY_space) and self.overlay.has_focus():
            root = self.rendered.root if self.rendered else None
            self.report(self.rendered.element_id_at(root, self.overlay) if root else "", Gdk.CURRENT_TIME)
            return True
        return False

    def report(self, element_id, time):
        if not self.board.editing:
            self.board.tap(self, self.proxy, "Tap", (element_id,), self.app_id, time)


class ActivityView(Tappable):
    """One presentation of a Live Activity, drawn where the strip shows it."""

    def __init__(self, board, activity, presentation):
        self.activity = activity
        self.presentation = presentation
        self.overlay = Gtk.Overlay()
        self.overlay.add_css_class("wb-activity")
        super().__init__(self.overlay, board)
        self.refresh()

    def refresh(self):
        tree = self.activity.content().get(self.presentation)
        family = "systemMedium" if self.presentation in ("expanded", "lockScreen") else "systemSmall"
        scope = f"a{self.activity.activity_id}{self.presentation}"
        root = self.draw(tree, family, scope, self.activity.bindings()) if isinstance(tree, dict) else Gtk.Label(label="")
        self.overlay.set_child(root)

    def report(self, element_id, time):
        self.board.tap(self, self.activity.proxy, "Tap", (self.presentation, element_id), self.activity.app_id, time)


class Activity:
    """A Live Activity as the mirror shows it."""

    def __init__(self, path, proxy):
        self.path = path
        self.proxy = proxy
        self.activity_id = hostmirror.unpack(proxy, "Id", path.rsplit("/", 1)[-1])
        self.app_id = hostmirror.unpack(proxy, "AppId", "")

    def content(self):
        try:
            content = json.loads(hostmirror.unpack(self.proxy, "Content", "") or "{}")
        except ValueError:
            return {}
        return content if isinstance(content, dict) else {}

    def bindings(self):
        return {"state": hostmirror.unpack(self.proxy, "ContentState", {}),
                "attributes": hostmirror.unpack(self.proxy, "Attributes", {})}

    def rank(self):
        """Most relevant first, in the host's own order (LiveActivities.Order,
        docs/live-activities.md): the highest relevance, then the earlier start,
        then the earlier id (ids are numbered as activities start)."""
        return (-hostmirror.unpack(self.proxy, "Relevance", 0.0), hostmirror.unpack(self.proxy, "StartDate", 0),
                len(self.activity_id), self.activity_id)


class Board(Gtk.Application):
    def __init__(self, options):
        super().__init__(application_id=APP_ID, flags=Gio.ApplicationFlags.DEFAULT_FLAGS)
        self.options = options
        self.tiles = {}
        self.activities = {}
        self.activity_views = []
        self.window = None
        self.dark = False
        self.mirror = None
        self.layout = Layout(config_file())
        self.catalogue = gallery.Catalogue()
        self.editing = False
        self.gallery = None
        self.expanded_path = None
        self.expanded_view = None
        self.hide_source = None

    # -- set-up -------------------------------------------------------------

    def do_startup(self):
        Gtk.Application.do_startup(self)
        settings = Gtk.Settings.get_default()
        if self.options.theme != "system":
            settings.set_property("gtk-application-prefer-dark-theme", self.options.theme == "dark")
        self.dark = bool(settings.get_property("gtk-application-prefer-dark-theme"))
        self.theme = Gtk.CssProvider()
        Gtk.StyleContext.add_provider_for_display(Gdk.Display.get_default(), self.theme, Gtk.STYLE_PROVIDER_PRIORITY_APPLICATION)
        self.load_theme()
        settings.connect("notify::gtk-application-prefer-dark-theme", self.on_theme)

    def load_theme(self):
        colours = COLOURS[self.dark]
        defs = "".join(f"@define-color {k} {v};\n" for k, v in colours.items())
        window = ".wb-window { background-color: @wb_window; }\n"
        self.theme.load_from_data((defs + BOARD_CSS + window).encode())

    def on_theme(self, settings, _pspec):
        self.dark = bool(settings.get_property("gtk-application-prefer-dark-theme"))
        self.load_theme()
        for tile in self.tiles.values():
            tile.refresh()
        self.rebuild_strip()

    def do_activate(self):
        if self.window is not None:
            self.window.present()
            return
        self.window = Gtk.ApplicationWindow(application=self, title="Widget Board")
        self.window.add_css_class("wb-window")
        self.window.set_default_size(*self.options.size)
        header = Gtk.HeaderBar()
        self.lock_button = Gtk.ToggleButton(label="Lock Screen", visible=False)
        self.lock_button.set_tooltip_text("Show the Live Activities as the lock screen shows them")
        self.lock_button.connect("toggled", lambda b: self.lock_revealer.set_reveal_child(b.get_active()))
        header.pack_start(self.lock_button)
        add = Gtk.Button(icon_name="list-add-symbolic")
        add.set_tooltip_text("Add a widget from the apps' gallery")
        add.update_property([Gtk.AccessibleProperty.LABEL], ["Add Widget"])
        add.connect("clicked", lambda _b: self.open_gallery())
        header.pack_end(add)
        self.edit_button = Gtk.ToggleButton(label="Edit")
        self.edit_button.set_tooltip_text("Remove, configure and rearrange widgets (drag them, or Ctrl+Left/Right)")
        self.edit_button.update_property([Gtk.AccessibleProperty.LABEL], ["Edit Widgets"])
        self.edit_button.connect("toggled", lambda b: self.set_editing(b.get_active()))
        header.pack_end(self.edit_button)
        self.window.set_titlebar(header)

        outer = Gtk.Box(orientation=Gtk.Orientation.VERTICAL)
        self.strip = Gtk.Box(orientation=Gtk.Orientation.HORIZONTAL, spacing=8, halign=Gtk.Align.CENTER, margin_top=10)
        outer.append(self.strip)
        self.expanded_revealer = Gtk.Revealer(transition_type=Gtk.RevealerTransitionType.SLIDE_DOWN)
        self.expanded_box = Gtk.Box(halign=Gtk.Align.CENTER, margin_top=8)
        self.expanded_revealer.set_child(self.expanded_box)
        stay = Gtk.EventControllerMotion()
        stay.connect("enter", lambda *_: self.cancel_hide())
        stay.connect("leave", lambda *_: self.hide_expanded_soon())
        self.expanded_box.add_controller(stay)
        outer.append(self.expanded_revealer)
        self.lock_revealer = Gtk.Revealer()
        self.lock_panel = Gtk.Box(orientation=Gtk.Orientation.VERTICAL, spacing=8, margin_start=18, margin_end=18, margin_top=10)
        self.lock_revealer.set_child(self.lock_panel)
        outer.append(self.lock_revealer)
        self.status = Gtk.Label(label="Waiting for WidgetHost…", margin_top=8)
        self.status.add_css_class("wb-empty")
        outer.append(self.status)
        self.flow = Wrap(18)
        self.flow.set_valign(Gtk.Align.START)
        self.flow.add_css_class("wb-board")
        scrolled = Gtk.ScrolledWindow(vexpand=True)
        scrolled.set_child(self.flow)
        outer.append(scrolled)
        self.window.set_child(outer)
        self.window.present()

        bus = self.get_dbus_connection() or Gio.bus_get_sync(Gio.BusType.SESSION, None)
        self.mirror = hostmirror.Mirror(bus, self.on_added, self.on_changed, self.on_removed, self.on_host)

    # -- the mirror ----------------------------------------------------------

    def on_host(self, owner):
        if owner is None:
            self.status.set_label("WidgetHost is not running; the board fills as soon as it starts.")
            self.status.set_visible(True)
        else:
            self.update_status()
            gallery.refresh_catalogue(self.mirror, self.catalogue, lambda _error: self.on_catalogue())

    def on_catalogue(self):
        """The bundles were read again: widgets are named after their kinds' display names."""
        for tile in self.tiles.values():
            tile.refresh()

    def update_status(self):
        empty = not self.tiles and not self.activities
        self.status.set_label("No widgets yet: add one from the gallery (+), or run widget-host add APP KIND FAMILY")
        self.status.set_visible(empty)

    def on_added(self, kind, path, proxy):
        if kind == "widget":
            tile = Tile(self, path, proxy)
            self.tiles[path] = tile
            present = [t.widget_id for t in self.ordered_tiles() if t is not tile]
            self.flow.insert(tile.overlay, self.layout.position(tile.widget_id, present))
        else:
            self.activities[path] = Activity(path, proxy)
            self.rebuild_strip()
        self.update_status()

    def on_changed(self, kind, path, _proxy, names):
        if kind == "widget" and path in self.tiles and names & {"Content", "Configuration"}:
            self.tiles[path].refresh()
        elif kind == "activity" and path in self.activities:
            self.rebuild_strip()

    def on_removed(self, kind, path):
        if kind == "widget":
            tile = self.tiles.pop(path, None)
            if tile is not None:
                tile.release()
                self.flow.remove(tile.overlay)
                # When the host's name loses its owner, GLib clears the owner first and then removes
                # every object: those widgets went with the host and come back with it, so they keep their place.
                if self.mirror.manager is not None and self.mirror.manager.get_name_owner() is not None:
                    self.layout.forget(tile.widget_id)
        else:
            self.activities.pop(path, None)
            self.rebuild_strip()
        self.update_status()

    def ordered_tiles(self):
        return [child.widget_board_tile for child in self.flow.children() if hasattr(child, "widget_board_tile")]

    def kind_name(self, app_id, kind):
        """What a widget whose tree names nothing is called: its kind's display name."""
        known = self.catalogue.kind(app_id, kind)
        return known.name if known is not None else kind

    # -- the gallery and edit mode ----------------------------------------------

    def open_gallery(self):
        if self.gallery is not None:
            self.gallery.present()
            return
        self.gallery = gallery.Gallery(self)
        self.gallery.connect("close-request", lambda *_: setattr(self, "gallery", None) or False)
        self.gallery.present()

    def add_widget(self, kind, family, configuration, done):
        args = GLib.Variant("(sssa{sv})", (kind.app_id, kind.kind, family, configuration))
        self.mirror.call_root(gallery.WIDGETS, "AddWidget", args, lambda _result, error: done(error))

    def set_editing(self, editing):
        self.editing = editing
        self.edit_button.set_label("Done" if editing else "Edit")
        for tile in self.tiles.values():
            tile.set_editing(editing)

    def remove_tile(self, tile):
        def done(source, result):
            try:
                source.call_finish(result)
            except GLib.Error as error:
                tile.show_feedback(gallery.error_text(error))
        tile.proxy.call("Remove", None, Gio.DBusCallFlags.NONE, 30000, None, done)

    def edit_tile(self, tile):
        kind = self.catalogue.kind(tile.app_id, tile.kind)
        if kind is not None:
            gallery.EditWindow(self, tile, kind).present()

    def configure(self, tile, configuration, done):
        def finished(source, result):
            try:
                source.call_finish(result)
                done(None)
            except GLib.Error as error:
                done(error)
        tile.proxy.call("Configure", GLib.Variant("(a{sv})", (configuration,)), Gio.DBusCallFlags.NONE, 30000, None,
                        finished)

    def move_tile(self, widget_id, target, after=False):
        """Drops the widget `widget_id` on the tile `target`: before it, or
        after it when dropped on its right half; remembers the place. Returns
        whether it moved (a drop outside edit mode is refused)."""
        moved = next((t for t in self.tiles.values() if t.widget_id == widget_id), None)
        if not self.editing or moved is None or moved is target:
            return False
        order = [t.widget_id for t in self.ordered_tiles() if t is not moved]
        index = order.index(target.widget_id) + (1 if after else 0)
        self.layout.move(widget_id, order[index] if index < len(order) else None)
        self.place_in_order(moved)
        return True

    def step_tile(self, tile, step):
        order = [t.widget_id for t in self.ordered_tiles()]
        index = order.index(tile.widget_id) + step
        if not 0 <= index < len(order):
            return
        if step < 0:
            self.layout.move(tile.widget_id, order[index])
        else:
            self.layout.move(tile.widget_id, order[index + 1] if index + 1 < len(order) else None)
        self.place_in_order(tile)
        tile.overlay.grab_focus()

    def place_in_order(self, tile):
        self.flow.remove(tile.overlay)
        present = [t.widget_id for t in self.ordered_tiles()]
        self.flow.insert(tile.overlay, self.layout.position(tile.widget_id, present))

    # -- Live Activities -----------------------------------------------------

    def rebuild_strip(self):
        for view in self.activity_views:
            view.release()
        self.activity_views = []
        for container in (self.strip, self.lock_panel):
            while (child := container.get_first_child()) is not None:
                container.remove(child)
        ranked = sorted(self.activities.values(), key=Activity.rank)
        for index, activity in enumerate(ranked):
            if index == 0:
                island = Gtk.Box(orientation=Gtk.Orientation.HORIZONTAL, spacing=24)
                island.add_css_class("wb-island")
                for presentation in ("compactLeading", "compactTrailing"):
                    view = ActivityView(self, activity, presentation)
                    self.activity_views.append(view)
                    island.append(view.overlay)
                self.attach_expanded(island, activity)
                self.strip.append(island)
            else:
                view = ActivityView(self, activity, "minimal")
                view.overlay.add_css_class("wb-minimal")
                self.activity_views.append(view)
                self.attach_expanded(view.overlay, activity)
                self.strip.append(view.overlay)
            lock = ActivityView(self, activity, "lockScreen")
            lock.overlay.add_css_class("wb-lockscreen")
            self.activity_views.append(lock)
            self.lock_panel.append(lock.overlay)
        self.lock_button.set_visible(bool(ranked))
        if self.expanded_path is not None:
            self.draw_expanded()

    def attach_expanded(self, anchor, activity):
        """The expanded presentation opens under the strip while the pointer is
        over the activity (or after a click-and-hold), as the island grows."""
        hover = Gtk.EventControllerMotion()
        hover.connect("enter", lambda *_: self.show_expanded(activity))
        hover.connect("leave", lambda *_: self.hide_expanded_soon())
        anchor.add_controller(hover)
        hold = Gtk.GestureLongPress()
        hold.connect("pressed", lambda *_: self.show_expanded(activity))
        anchor.add_controller(hold)

    def show_expanded(self, activity):
        self.cancel_hide()
        if self.expanded_path != activity.path or self.expanded_box.get_first_child() is None:
            self.expanded_path = activity.path
            self.draw_expanded()
        self.expanded_revealer.set_reveal_child(True)

    def draw_expanded(self):
        if self.expanded_view is not None:
            self.expanded_view.release()
            if self.expanded_view in self.activity_views:
                self.activity_views.remove(self.expanded_view)
            self.expanded_view = None
        while (child := self.expanded_box.get_first_child()) is not None:
            self.expanded_box.remove(child)
        activity = self.activities.get(self.expanded_path)
        if activity is None:
            self.expanded_revealer.set_reveal_child(False)
            return
        view = ActivityView(self, activity, "expanded")
        view.overlay.set_size_request(*FAMILY_SIZES["systemMedium"])
        view.overlay.add_css_class("wb-expanded")
        self.activity_views.append(view)
        self.expanded_view = view
        self.expanded_box.append(view.overlay)

    def hide_expanded_soon(self):
        self.cancel_hide()

        def hide():
            self.hide_source = None
            self.expanded_revealer.set_reveal_child(False)
            return GLib.SOURCE_REMOVE
        self.hide_source = GLib.timeout_add(EXPANDED_LINGER_MS, hide)

    def cancel_hide(self):
        if self.hide_source is not None:
            GLib.source_remove(self.hide_source)
            self.hide_source = None

    # -- taps -----------------------------------------------------------------

    def tap(self, view, proxy, method, args, app_id, time):
        token = launch_token(view.frame, app_id, time)
        options = {"surface": GLib.Variant("s", self.options.surface)}
        if token:
            options["activation_token"] = GLib.Variant("s", token)
        signature = "(sa{sv})" if len(args) == 1 else "(ssa{sv})"

        def done(source, result):
            try:
                outcome, details = source.call_finish(result).unpack()
            except GLib.Error as error:
                view.show_feedback(gallery.error_text(error))
                return
            if outcome == "none":
                view.show_feedback("Not available here (" + details.get("reason", "none") + ")")
        proxy.call(method, GLib.Variant(signature, args + (options,)), Gio.DBusCallFlags.NONE, 30000, None, done)

    def feedback(self, overlay, text):
        """Shows `text` over a tile for a few seconds: an outcome of 'none' or an error is never dropped silently."""
        label = Gtk.Label(label=text, wrap=True, halign=Gtk.Align.CENTER, valign=Gtk.Align.END)
        label.add_css_class("wb-feedback")
        label.update_property([Gtk.AccessibleProperty.LABEL], [text])
        overlay.add_overlay(label)
        print(f"widget-board: {text}", flush=True)

        def hide():
            if label.get_parent() is overlay:
                overlay.remove_overlay(label)
            return GLib.SOURCE_REMOVE
        GLib.timeout_add_seconds(FEEDBACK_SECONDS, hide)


def parse(argv):
    parser = argparse.ArgumentParser(
        prog="widget-board",
        description="A desktop for WidgetHost's widgets and Live Activities: draws every placed widget at its "
                    "family's size and reports taps on them to org.widgethost.Host1 on the session bus.")
    parser.add_argument("--surface", choices=SURFACES, default="desktop",
                        help="the surface taps are reported from (default: desktop)")
    parser.add_argument("--theme", choices=("system", "light", "dark"), default="system",
                        help="light or dark colours, or the desktop's setting (default: system)")
    parser.add_argument("--size", type=lambda s: tuple(int(v) for v in s.split("x", 1)), default=(980, 720),
                        metavar="WxH", help="the window's size (default: 980x720)")
    parser.add_argument("--version", action="version", version="widget-board " + VERSION)
    return parser.parse_args(argv)


VERSION = "0.1.0"


def main(argv=None):
    options = parse(sys.argv[1:] if argv is None else argv)
    if not Gtk.init_check() or Gdk.Display.get_default() is None:
        print("widget-board: no display to open (set DISPLAY or WAYLAND_DISPLAY)", file=sys.stderr)
        return 1
    board = Board(options)
    return board.run([sys.argv[0]])
