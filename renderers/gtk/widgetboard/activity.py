"""The board's Live Activities: the most relevant one in a black pill at the
top, like the Dynamic Island, the others by their minimal presentation; the
expanded presentation under the strip, and every lockScreen presentation in
a panel. See docs/board.md#what-it-shows. The UI is activity.ui.
"""
import json
import os

import gi

gi.require_version("Gtk", "4.0")
from gi.repository import GLib, Gtk  # noqa: E402

from . import mirror  # noqa: E402
from .taps import Tappable  # noqa: E402
from .vocabulary import FAMILY_SIZES  # noqa: E402



class Activity:
    """A Live Activity as the mirror shows it."""

    def __init__(self, path, proxy):
        self.path = path
        self.proxy = proxy
        self.activity_id = mirror.unpack(proxy, "Id", path.rsplit("/", 1)[-1])
        self.app_id = mirror.unpack(proxy, "AppId", "")

    def content(self):
        try:
            content = json.loads(mirror.unpack(self.proxy, "Content", "") or "{}")
        except ValueError:
            return {}
        return content if isinstance(content, dict) else {}

    def bindings(self):
        return {"state": mirror.unpack(self.proxy, "ContentState", {}),
                "attributes": mirror.unpack(self.proxy, "Attributes", {})}

    def rank(self):
        """Most relevant first, in the host's own order (LiveActivities.Order,
        docs/live-activities.md): the highest relevance, then the earlier start,
        then the earlier id (ids are numbered as activities start)."""
        return (-mirror.unpack(self.proxy, "Relevance", 0.0), mirror.unpack(self.proxy, "StartDate", 0),
                len(self.activity_id), self.activity_id)


class ActivityView(Tappable, Gtk.Overlay):
    """One presentation of a Live Activity, drawn where the strip shows it."""

    def __init__(self, board, activity, presentation, style):
        super().__init__(board, css_classes=["wb-activity", style] if style else ["wb-activity"])
        self.activity = activity
        self.presentation = presentation
        tree = activity.content().get(presentation)
        family = "systemMedium" if presentation in ("expanded", "lockScreen") else "systemSmall"
        scope = f"a{activity.activity_id}{presentation}"
        self.set_child(self.draw(tree, family, scope, activity.bindings()) if isinstance(tree, dict) else Gtk.Label())

    def report(self, element_id, time):
        self.tap(self.activity.proxy, (self.presentation, element_id), self.activity.app_id, time)


@Gtk.Template(filename=os.path.join(os.path.dirname(__file__), "activity.ui"))
class LiveActivities(Gtk.Box):
    """The strip, the expanded presentation and the lock screen panel, drawn
    again whenever an activity comes, changes or goes. `board` draws the views."""
    __gtype_name__ = "WbLiveActivities"
    strip = Gtk.Template.Child()
    expanded_revealer = Gtk.Template.Child()
    expanded_box = Gtk.Template.Child()
    lock_revealer = Gtk.Template.Child()
    lock_panel = Gtk.Template.Child()

    def __init__(self):
        super().__init__()
        self.board = None
        self.activities = {}
        self.views = []
        self.expanded_path = None
        self.expanded_view = None
        self.hide_source = None

    def put(self, path, proxy):
        """An activity came (`proxy`) or changed (None)."""
        if proxy is not None:
            self.activities[path] = Activity(path, proxy)
        if path in self.activities:
            self.rebuild()

    def drop(self, path):
        if self.activities.pop(path, None) is not None:
            self.rebuild()

    def view(self, activity, presentation, style=None):
        view = ActivityView(self.board, activity, presentation, style)
        self.views.append(view)
        return view

    def rebuild(self):
        for view in self.views:
            view.release()
        self.views = []
        for container in (self.strip, self.lock_panel):
            while (child := container.get_first_child()) is not None:
                container.remove(child)
        for index, activity in enumerate(sorted(self.activities.values(), key=Activity.rank)):
            if index == 0:
                island = Gtk.Box(orientation=Gtk.Orientation.HORIZONTAL, spacing=24, css_classes=["wb-island"])
                for presentation in ("compactLeading", "compactTrailing"):
                    island.append(self.view(activity, presentation))
            else:
                island = self.view(activity, "minimal", "wb-minimal")
            self.attach_expanded(island, activity)
            self.strip.append(island)
            self.lock_panel.append(self.view(activity, "lockScreen", "wb-lockscreen"))
        if self.expanded_path is not None:
            self.draw_expanded()

    def show_lock_screen(self, shown):
        self.lock_revealer.set_reveal_child(shown)

    def attach_expanded(self, anchor, activity):
        """The expanded presentation opens under the strip while the pointer is
        over the activity (or after a click-and-hold), as the island grows."""
        hover = Gtk.EventControllerMotion()
        hover.connect("enter", lambda *_: self.show_expanded(activity))
        hover.connect("leave", self.hide_expanded_soon)
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
            if self.expanded_view in self.views:
                self.views.remove(self.expanded_view)
            self.expanded_box.remove(self.expanded_view)
            self.expanded_view = None
        activity = self.activities.get(self.expanded_path)
        if activity is None:
            self.expanded_revealer.set_reveal_child(False)
            return
        self.expanded_view = self.view(activity, "expanded", "wb-expanded")
        self.expanded_view.set_size_request(*FAMILY_SIZES["systemMedium"])
        self.expanded_box.append(self.expanded_view)

    @Gtk.Template.Callback()
    def hide_expanded_soon(self, *_):
        self.cancel_hide()

        def hide():
            self.hide_source = None
            self.expanded_revealer.set_reveal_child(False)
            return GLib.SOURCE_REMOVE
        self.hide_source = GLib.timeout_add(EXPANDED_LINGER_MS, hide)

    @Gtk.Template.Callback()
    def cancel_hide(self, *_):
        if self.hide_source is not None:
            GLib.source_remove(self.hide_source)
            self.hide_source = None
