"""The board's window: the host's widgets as tiles in the order the board
keeps, its Live Activities, the gallery and edit mode. It follows the host
through the mirror. See docs/board.md. The UI is window.ui.
"""
import os
from gettext import gettext as _

import gi

gi.require_version("Gtk", "4.0")
gi.require_version("Gio", "2.0")
from gi.repository import Gio, GLib, Gtk  # noqa: E402

from . import gallery, mirror  # noqa: E402
from .activity import LiveActivities  # noqa: E402,F401 - the template's WbLiveActivities
from .layout import Layout, Wrap  # noqa: E402,F401 - the template's WbWrap
from .tile import Tile  # noqa: E402

# The keys of edit mode, acting on the focused widget (docs/board.md#the-gallery).
ACCELERATORS = {
    "win.remove-widget": ["Delete", "BackSpace"],
    "win.move-widget-left": ["<Control>Left"],
    "win.move-widget-right": ["<Control>Right"],
}


@Gtk.Template(filename=os.path.join(os.path.dirname(__file__), "window.ui"))
class BoardWindow(Gtk.ApplicationWindow):
    """The board's window. The tiles and views on it read its `editing`, `surface`,
    `stylesheet` and `dark`, and ask it to move, remove and edit widgets."""
    __gtype_name__ = "WbWindow"
    lock_button = Gtk.Template.Child()
    edit_button = Gtk.Template.Child()
    live_activities = Gtk.Template.Child()
    status = Gtk.Template.Child()
    flow = Gtk.Template.Child()

    def __init__(self, application, settings):
        super().__init__(application=application)
        self.set_default_size(*application.options.size)
        self.surface = application.options.surface
        self.stylesheet = application.stylesheet
        self.tiles = {}
        self.editing = False
        self.gallery = None
        self.catalogue = gallery.Catalogue()
        self.layout = Layout(settings, self.arrange)
        self.live_activities.board = self
        self.add_action(self.stateful("edit", self.set_editing))
        self.add_action(self.stateful("lock-screen", self.live_activities.show_lock_screen))
        self.add_action(self.action("add-widget", self.open_gallery))
        self.tile_actions = [
            self.action("remove-widget", lambda: self.remove_tile(self.get_focus())),
            self.action("move-widget-left", lambda: self.step_tile(self.get_focus(), -1)),
            self.action("move-widget-right", lambda: self.step_tile(self.get_focus(), 1)),
        ]
        for action in self.tile_actions:
            self.add_action(action)
        self.connect("notify::focus-widget", lambda *_: self.update_tile_actions())
        self.update_tile_actions()
        bus = application.get_dbus_connection() or Gio.bus_get_sync(Gio.BusType.SESSION, None)
        self.mirror = mirror.Mirror(bus, self.on_added, self.on_changed, self.on_removed, self.on_host)

    @staticmethod
    def action(name, activate):
        action = Gio.SimpleAction.new(name, None)
        action.connect("activate", lambda *_: activate())
        return action

    @staticmethod
    def stateful(name, changed):
        """A boolean action a toggle button shows: `changed(state)` follows its state."""
        action = Gio.SimpleAction.new_stateful(name, None, GLib.Variant.new_boolean(False))

        def change(action, value):
            action.set_state(value)
            changed(value.get_boolean())
        action.connect("change-state", change)
        return action

    def update_tile_actions(self):
        """Edit mode's keys act on the focused widget; elsewhere they are the focused control's."""
        enabled = self.editing and isinstance(self.get_focus(), Tile)
        for action in self.tile_actions:
            action.set_enabled(enabled)

    @property
    def dark(self):
        return self.get_application().dark

    def redraw(self):
        """Draws everything again, in the appearance the board has now."""
        for tile in self.tiles.values():
            tile.refresh()
        self.live_activities.rebuild()

    # -- the mirror ----------------------------------------------------------

    def on_host(self, owner):
        if owner is None:
            self.status.set_label(_("WidgetHost is not running; the board fills as soon as it starts."))
            self.status.set_visible(True)
        else:
            self.update_status()
            gallery.refresh_catalogue(self.mirror, self.catalogue, lambda _error: self.on_catalogue())

    def on_catalogue(self):
        """The bundles were read again: widgets are named after their kinds' display names."""
        for tile in self.tiles.values():
            tile.refresh()

    def update_status(self):
        self.status.set_label(_("No widgets yet: add one from the gallery (+), or run widget-host add APP KIND FAMILY"))
        self.status.set_visible(not self.tiles and not self.live_activities.activities)
        self.lock_button.set_visible(bool(self.live_activities.activities))

    def on_added(self, kind, path, proxy):
        if kind == "widget":
            self.tiles[path] = tile = Tile(self, path, proxy)
            self.layout.add(tile.widget_id)
            self.arrange()
        else:
            self.live_activities.put(path, proxy)
        self.update_status()

    def on_changed(self, kind, path, _proxy, names):
        if kind == "widget" and path in self.tiles and names & {"Content", "Configuration"}:
            self.tiles[path].refresh()
        elif kind == "activity":
            self.live_activities.put(path, None)

    def on_removed(self, kind, path):
        if kind == "widget":
            tile = self.tiles.pop(path, None)
            if tile is not None:
                tile.release()
                self.flow.remove(tile)
                # When the host's name loses its owner, GLib clears the owner first and then removes
                # every object: those widgets went with the host and come back with it, so they keep their place.
                if self.mirror.manager is not None and self.mirror.manager.get_name_owner() is not None:
                    self.layout.forget(tile.widget_id)
        else:
            self.live_activities.drop(path)
        self.update_status()

    def arrange(self):
        """Puts the tiles in the order the layout keeps."""
        self.flow.arrange(sorted(self.tiles.values(), key=lambda tile: self.layout.rank(tile.widget_id)))

    def ordered_tiles(self):
        return [child for child in self.flow.children() if isinstance(child, Tile)]

    def kind_name(self, app_id, kind):
        """What a widget whose tree names nothing is called: its kind's display name."""
        known = self.catalogue.kind(app_id, kind)
        return known.name if known is not None else kind

    # -- the gallery and edit mode ----------------------------------------------

    def open_gallery(self):
        if self.gallery is None:
            self.gallery = gallery.Gallery(self)
            self.gallery.connect("close-request", lambda *_: setattr(self, "gallery", None) or False)
        self.gallery.present()

    def add_widget(self, kind, family, configuration, done):
        args = GLib.Variant("(sssa{sv})", (kind.app_id, kind.kind, family, configuration))
        self.mirror.call_root(gallery.WIDGETS, "AddWidget", args, lambda _result, error: done(error))

    def set_editing(self, editing):
        self.editing = editing
        self.edit_button.set_label(_("Done") if editing else _("Edit"))
        for tile in self.tiles.values():
            tile.set_editing(editing)
        self.update_tile_actions()

    def remove_tile(self, tile):
        def done(source, result):
            try:
                source.call_finish(result)
            except GLib.Error as error:
                tile.show_feedback(mirror.error_text(error))
        tile.proxy.call("Remove", None, Gio.DBusCallFlags.NONE, mirror.CALL_TIMEOUT_MS, None, done)

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
        tile.proxy.call("Configure", GLib.Variant("(a{sv})", (configuration,)), Gio.DBusCallFlags.NONE,
                        mirror.CALL_TIMEOUT_MS, None, finished)

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
        self.arrange()
        return True

    def step_tile(self, tile, step):
        """Moves a widget one place back (-1) or on (1)."""
        order = [t.widget_id for t in self.ordered_tiles()]
        index = order.index(tile.widget_id) + step
        if not 0 <= index < len(order):
            return
        if step < 0:
            self.layout.move(tile.widget_id, order[index])
        else:
            self.layout.move(tile.widget_id, order[index + 1] if index + 1 < len(order) else None)
        self.arrange()
        tile.grab_focus()
