"""Taps: what a click on a drawn view tree reports to the host, with the
activation token minted for it. See docs/board.md#taps.
"""
from gettext import gettext as _

import gi

gi.require_version("Gtk", "4.0")
gi.require_version("Gdk", "4.0")
gi.require_version("Gio", "2.0")
from gi.repository import Gdk, Gio, GLib, Gtk  # noqa: E402

from .mirror import CALL_TIMEOUT_MS, error_text  # noqa: E402
from .vocabulary import Renderer  # noqa: E402

FEEDBACK_SECONDS = 3


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


class Tappable:
    """A drawn view tree in an overlay that reports taps: a widget tile or a
    Live Activity's presentation. Subclasses define `report(element_id, time)`."""

    def __init__(self, board, **properties):
        super().__init__(**properties)
        self.board = board
        self.rendered = None
        self.pressed = None
        press = Gtk.GestureClick(propagation_phase=Gtk.PropagationPhase.CAPTURE)
        press.connect("pressed", self.on_pressed)
        self.add_controller(press)
        release = Gtk.GestureClick()
        release.connect("released", self.on_released)
        self.add_controller(release)

    def draw(self, tree, family, scope, bindings=None):
        renderer = Renderer(scope, family, self.board.dark, self.on_clicked, bindings)
        self.rendered = renderer.render(tree)
        self.board.stylesheet.put(self, self.rendered.css)
        return self.rendered.root

    def release(self):
        self.board.stylesheet.put(self, None)

    def element_at(self, x, y):
        picked = self.pick(x, y, Gtk.PickFlags.DEFAULT)
        return picked, (self.rendered.element_id_at(picked, self) if self.rendered else "")

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
        while widget is not None and widget is not self:
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

    def tap(self, proxy, args, app_id, time):
        """Reports a tap with the Tap method of `proxy` (a Widget or a LiveActivity);
        an outcome of 'none' or an error is shown over the view, never dropped silently."""
        token = launch_token(self, app_id, time)
        # The deadline: a host that reads the tap only after this call stopped
        # waiting (stopped, or busy) delivers it to nobody (docs/delivery.md).
        options = {
            "surface": GLib.Variant("s", self.board.surface),
            "deadline": GLib.Variant("x", GLib.get_real_time() // 1000 + CALL_TIMEOUT_MS),
        }
        if token:
            options["activation_token"] = GLib.Variant("s", token)
        signature = "(sa{sv})" if len(args) == 1 else "(ssa{sv})"

        def done(source, result):
            try:
                outcome, details = source.call_finish(result).unpack()
            except GLib.Error as error:
                self.show_feedback(error_text(error))
                return
            if outcome == "none":
                self.show_feedback(_("Not available here ({reason})").format(reason=details.get("reason", "none")))
        proxy.call("Tap", GLib.Variant(signature, args + (options,)), Gio.DBusCallFlags.NONE, CALL_TIMEOUT_MS, None, done)

    def show_feedback(self, text):
        """Shows `text` over the view for a few seconds, and prints it."""
        label = Gtk.Label(label=text, wrap=True, halign=Gtk.Align.CENTER, valign=Gtk.Align.END)
        label.add_css_class("wb-feedback")
        label.update_property([Gtk.AccessibleProperty.LABEL], [text])
        self.add_overlay(label)
        print(f"widget-board: {text}", flush=True)

        def hide():
            if label.get_parent() is self:
                self.remove_overlay(label)
            return GLib.SOURCE_REMOVE
        GLib.timeout_add_seconds(FEEDBACK_SECONDS, hide)
