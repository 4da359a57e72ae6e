#!/usr/bin/python3
"""tapme_gtk.py: the Tap Me fixture as a GTK 4 application with a window.

tapme_gapp.py is a plain Gio.Application; this is a Gtk.Application, so that
a test sees what a real GTK app does with the activation token of a call:
GTK takes the call's platform data `activation-token` (its before_emit), and
presenting the window afterwards hands the token to the compositor (on
Wayland through xdg-activation, which the compositor honours or not). Activate
and Open present the app's one window (320×200, titled with the app's id).

It records what tapme_gapp.py records, with its settings and record format
(WIDGETHOST_TEST_RECORD, WIDGETHOST_TEST_LINGER, WIDGETHOST_TEST_ACTIONS and
WIDGETHOST_TEST_ACTION_PARAM, see there), and besides, each time the compositor
says its window has become active or has stopped being active (the toplevel's
state `focused`: xdg-shell's `activated`; a session without a keyboard, as a
headless compositor's, never sends the keyboard focus GtkWindow:is-active follows):

  {"call": "window", "active": true or false, ...the other keys of a record}

Run it as tapme_gapp.py is run (a plain launch records no call of its own
start-up), with a display to show the window on (GDK_BACKEND,
WAYLAND_DISPLAY or DISPLAY):

    /usr/bin/python3 tapme_gtk.py [APP_ID] [--gapplication-service]
"""

import os
import sys

import gi

gi.require_version("Gdk", "4.0")
gi.require_version("Gtk", "4.0")
from gi.repository import Gdk, Gtk  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tapme_gapp  # noqa: E402


class TapMeWindow(Gtk.Application):
    """tapme_gapp.TapMe on a Gtk.Application, with a window. A GObject class has
    one base class: TapMe's methods are taken over, those that chain up to
    GApplication's own written again to chain up to GtkApplication's."""
    keep = tapme_gapp.TapMe.keep
    start_up = tapme_gapp.TapMe.start_up
    on_main_loop_started = tapme_gapp.TapMe.on_main_loop_started
    restart_linger = tapme_gapp.TapMe.restart_linger
    on_linger_expired = tapme_gapp.TapMe.on_linger_expired
    quit_now = tapme_gapp.TapMe.quit_now
    record = tapme_gapp.TapMe.record
    on_action = tapme_gapp.TapMe.on_action

    def __init__(self, app_id, flags, recorder, linger):
        super().__init__(application_id=app_id, flags=flags)
        self.keep(recorder, linger)
        self.window = None
        self.focused = False

    def do_startup(self):
        Gtk.Application.do_startup(self)
        self.start_up()

    # GtkApplication's own before_emit is what takes the activation token.
    def do_before_emit(self, platform_data):
        self.platform_data = platform_data
        Gtk.Application.do_before_emit(self, platform_data)

    def do_after_emit(self, platform_data):
        Gtk.Application.do_after_emit(self, platform_data)
        self.platform_data = None

    def present(self):
        if self.window is None:
            self.window = Gtk.ApplicationWindow(
                application=self, title=self.get_application_id(), default_width=320, default_height=200)
            self.window.set_child(Gtk.Label(label=self.get_application_id()))
            self.window.connect("realize", lambda window: window.get_surface().connect("notify::state", self.on_state))
        self.window.present()

    def on_state(self, surface, _):
        focused = bool(surface.get_state() & Gdk.ToplevelState.FOCUSED)
        if focused != self.focused:
            self.focused = focused
            self.record("window", active=focused)

    def do_activate(self):
        self.record("activate")
        self.present()

    def do_open(self, files, n_files, hint):
        self.record("open", uris=[f.get_uri() for f in files], hint=hint)
        self.present()


if __name__ == "__main__":
    sys.exit(tapme_gapp.main(sys.argv, TapMeWindow))
