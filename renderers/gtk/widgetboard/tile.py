"""A placed widget on the board: its view tree drawn at its family's size,
tapped as docs/board.md#taps says; in edit mode, removed, configured and
dragged instead (docs/board.md#the-gallery). The UI is tile.ui.
"""
import json
import os
import sys
from gettext import gettext as _

import gi

gi.require_version("Gtk", "4.0")
gi.require_version("Gdk", "4.0")
from gi.repository import Gdk, Gtk  # noqa: E402

from . import mirror  # noqa: E402
from .taps import Tappable  # noqa: E402
from .vocabulary import FAMILY_SIZES, MONOCHROME, accessible_name, gtk_role  # noqa: E402

ACTIVATE_KEYS = (Gdk.KEY_Return, Gdk.KEY_KP_Enter, Gdk.KEY_space)


class Clamp(Gtk.Widget):
    """Holds a drawn tree at exactly its family's size: a tree that asks for
    more room is cut at the tile's edge rather than growing the tile."""
    __gtype_name__ = "WbClamp"
    width = height = 0
    child = None

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


@Gtk.Template(filename=os.path.join(os.path.dirname(__file__), "tile.ui"))
class Tile(Tappable, Gtk.Overlay):
    """One placed widget, drawn at its family's size."""
    __gtype_name__ = "WbTile"
    clamp = Gtk.Template.Child()
    remove_button = Gtk.Template.Child()
    edit_button = Gtk.Template.Child()

    def __init__(self, board, path, proxy):
        super().__init__(board, accessible_role=gtk_role("widget"))
        self.path = path
        self.proxy = proxy
        self.widget_id = mirror.unpack(proxy, "Id", path.rsplit("/", 1)[-1])
        self.app_id = mirror.unpack(proxy, "AppId", "")
        self.kind = mirror.unpack(proxy, "Kind", "")
        self.family = mirror.unpack(proxy, "Family", "systemSmall")
        if self.family in MONOCHROME:
            self.add_css_class("wb-mono")
        self.clamp.width, self.clamp.height = FAMILY_SIZES.get(self.family, FAMILY_SIZES["systemSmall"])
        self.set_cursor_from_name("pointer")
        self.tree = None
        self.refresh()

    def refresh(self):
        text = mirror.unpack(self.proxy, "Content", "")
        try:
            tree = json.loads(text) if text else None
        except ValueError:
            tree = None
        if tree is None:
            label = Gtk.Label(label=self.kind if text == "" else _("Cannot draw this content"))
            label.add_css_class("wb-empty")
            root = label
            self.release()
            self.rendered = None
        else:
            try:
                root = self.draw(tree, self.family, "w" + self.widget_id)
            except Exception as error:  # noqa: BLE001 - one tree the board cannot draw must not stop the board
                print(f"widget-board: cannot draw widget {self.widget_id}: {error!r}", file=sys.stderr)
                root = Gtk.Label(label=_("Cannot draw this content"))
                self.rendered = None
        self.clamp.set_child(root)
        self.tree = tree
        self.update_property([Gtk.AccessibleProperty.LABEL], [self.name()])
        self.set_tooltip_text(f"{self.board.kind_name(self.app_id, self.kind)} — {self.app_id}")
        self.set_editing(self.board.editing)

    def name(self):
        """The widget's accessible name: its tree's label or text, else its kind's name."""
        name = accessible_name(self.tree) if isinstance(self.tree, dict) else ""
        return name or self.board.kind_name(self.app_id, self.kind)

    def set_editing(self, editing):
        """In edit mode the widget's content takes no taps; a remove button and,
        for a configurable kind, an edit button sit on the tile instead."""
        self.clamp.set_can_target(not editing)
        self.clamp.set_can_focus(not editing)
        if editing:
            self.add_css_class("wb-editing")
        else:
            self.remove_css_class("wb-editing")
        self.set_cursor_from_name("grab" if editing else "pointer")
        kind = self.board.catalogue.kind(self.app_id, self.kind)
        self.remove_button.set_visible(editing)
        self.edit_button.set_visible(editing and kind is not None and bool(kind.parameters))
        # The edit-mode buttons are named after what they do and the widget's name.
        name = self.name()
        self.remove_button.update_property([Gtk.AccessibleProperty.LABEL], [_("Remove {name}").format(name=name)])
        self.edit_button.update_property([Gtk.AccessibleProperty.LABEL], [_("Edit {name}").format(name=name)])

    @Gtk.Template.Callback()
    def on_remove(self, _button):
        self.board.remove_tile(self)

    @Gtk.Template.Callback()
    def on_edit(self, _button):
        self.board.edit_tile(self)

    @Gtk.Template.Callback()
    def on_drag_prepare(self, _source, _x, _y):
        if not self.board.editing:
            return None
        return Gdk.ContentProvider.new_for_value(self.widget_id)

    @Gtk.Template.Callback()
    def on_drop(self, _target, widget_id, x, _y):
        return self.board.move_tile(widget_id, self, after=x > self.get_width() / 2)

    @Gtk.Template.Callback()
    def on_key(self, _controller, keyval, _code, _state):
        """Enter or Space on the focused widget taps it (edit mode's keys are the window's actions)."""
        if self.board.editing or not self.has_focus() or keyval not in ACTIVATE_KEYS:
            return False
        root = self.rendered.root if self.rendered else None
        self.report(self.rendered.element_id_at(root, self) if root else "", Gdk.CURRENT_TIME)
        return True

    def report(self, element_id, time):
        if not self.board.editing:
            self.tap(self.proxy, (element_id,), self.app_id, time)
