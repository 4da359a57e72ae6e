#!/usr/bin/python3
"""tapme_gapp.py: a real GLib GApplication "host app" for WidgetHost's integration tests.

WidgetHost delivers taps to apps with protocol `freedesktop` through
org.freedesktop.Application (Open, Activate, ActivateAction), starting them by
D-Bus activation when they are not running. This script is such an app: a
plain Gio.Application, so the tests exercise GLib's own implementation of that
interface rather than a mock. It records every call it receives, one JSON
object per line, and stays up for a while so that tests can send more.

Run with the system interpreter (it needs PyGObject):

    /usr/bin/python3 tapme_gapp.py [APP_ID] [--gapplication-service]

D-Bus activation (a service file whose Exec ends in --gapplication-service)
starts it as a service: it registers its bus name and waits for calls. Without
that flag it is an ordinary launch; GLib's own start-up self-activation is not
recorded, since nobody sent it. If the name is already owned, GApplication
forwards the launch to the running instance and this process exits.

Environment (all optional):
  WIDGETHOST_TEST_APP_ID       app id when none is given as argv[1] (default org.example.TapMe)
  WIDGETHOST_TEST_RECORD       file to append records to (default: standard output)
  WIDGETHOST_TEST_ACTIONS      comma-separated action names
                               (default show-hero,refresh,toggle-light,user-activity);
                               NAME:TYPE gives one action its own parameter type,
                               e.g. refresh,toggle-light:b,user-activity:(sa{sv})
  WIDGETHOST_TEST_ACTION_PARAM GVariant type string the other actions take as their
                               parameter (e.g. s or (sa{sv})); unset or empty = none
  WIDGETHOST_TEST_LINGER       seconds to stay alive after start-up and after the last
                               call (default 30), then quit
  WIDGETHOST_TEST_CRASH        "open", "activate" or "action": after recording such a
                               call, the process dies at once (os._exit(70)) without
                               answering it, as an app that crashes mid-delivery

GLib checks an action's parameter type itself: ActivateAction with a parameter
of another type, or with none for an action that takes one (or the reverse),
or naming an action that does not exist, gets the error reply
org.freedesktop.DBus.Error.InvalidArgs and records nothing. Tests can use that
to make the app answer a delivery with an error.

Each record has the keys:
  call           "open", "activate" or "action"
  app_id         the application id
  uris           the URIs given to Open (null for other calls)
  hint           the hint given to Open (null for other calls)
  action         the action name (null unless call is "action")
  parameter      the action's parameter, GLib.Variant.print_(True), or null
  platform_data  {key: GLib.Variant.print_(True) of the value} of the call's platform data
  pid            this process's id
  time           Unix time of the call, in seconds
"""

import json
import os
import signal
import sys
import time

import gi

gi.require_version("Gio", "2.0")
gi.require_version("GLib", "2.0")
from gi.repository import Gio, GLib  # noqa: E402

DEFAULT_APP_ID = "org.example.TapMe"
DEFAULT_ACTIONS = "show-hero,refresh,toggle-light,user-activity"
DEFAULT_LINGER = 30.0
SERVICE_FLAG = "--gapplication-service"


def log(message):
    sys.stderr.write("tapme_gapp[%d]: %s\n" % (os.getpid(), message))
    sys.stderr.flush()


def env(name, default=""):
    value = os.environ.get(name)
    return default if value is None else value


def linger_seconds():
    raw = env("WIDGETHOST_TEST_LINGER").strip()
    if not raw:
        return DEFAULT_LINGER
    try:
        value = float(raw)
    except ValueError:
        log("WIDGETHOST_TEST_LINGER=%r is not a number; using %g" % (raw, DEFAULT_LINGER))
        return DEFAULT_LINGER
    return max(value, 0.0)


def parameter_type(raw, what):
    """A GLib.VariantType from a type string; None (no parameter) when empty or invalid."""
    raw = raw.strip()
    if not raw:
        return None
    if not GLib.VariantType.string_is_valid(raw):
        log("%s: %r is not a GVariant type string; the action takes no parameter" % (what, raw))
        return None
    return GLib.VariantType.new(raw)


def action_specs():
    """[(name, GLib.VariantType or None)] from WIDGETHOST_TEST_ACTIONS / _ACTION_PARAM."""
    default_type = env("WIDGETHOST_TEST_ACTION_PARAM")
    specs = []
    for item in env("WIDGETHOST_TEST_ACTIONS", DEFAULT_ACTIONS).split(","):
        name, colon, type_string = item.strip().partition(":")
        name = name.strip()
        if not name or name in (n for n, _ in specs):
            continue
        if not Gio.action_name_is_valid(name):
            log("skipping invalid action name %r" % name)
            continue
        specs.append((name, parameter_type(type_string if colon else default_type, "action " + name)))
    return specs


def printed(variant):
    return None if variant is None else variant.print_(True)


def platform_dict(platform_data):
    """{key: value.print_(True)} of an a{sv} GLib.Variant (None -> {})."""
    out = {}
    if platform_data is None:
        return out
    try:
        for i in range(platform_data.n_children()):
            entry = platform_data.get_child_value(i)
            key = entry.get_child_value(0).get_string()
            value = entry.get_child_value(1)
            if value.get_type_string() == "v":
                value = value.get_variant()
            out[key] = value.print_(True)
    except Exception as error:  # never let a strange platform_data kill the app
        out["<error>"] = repr(error)
    return out


class Recorder:
    def __init__(self, path):
        self.path = path

    def write(self, record):
        line = json.dumps(record, sort_keys=True) + "\n"
        try:
            if self.path:
                with open(self.path, "a", encoding="utf-8") as f:
                    f.write(line)
                    f.flush()
                    os.fsync(f.fileno())
            else:
                sys.stdout.write(line)
                sys.stdout.flush()
        except OSError as error:
            log("cannot record to %r: %s" % (self.path, error))


class TapMe(Gio.Application):
    def __init__(self, app_id, flags, recorder, linger):
        super().__init__(application_id=app_id, flags=flags)
        self.keep(recorder, linger)

    def keep(self, recorder, linger):
        """The state of the app's calls and lifetime, before it starts up."""
        self.recorder = recorder
        self.linger = linger
        self.platform_data = None   # of the call being emitted (set by before_emit)
        self.main_loop_running = False
        self.linger_source = 0
        self.holding = False

    # -- lifetime ---------------------------------------------------------

    def do_startup(self):
        Gio.Application.do_startup(self)
        self.start_up()

    def start_up(self):
        """What the app does at start-up after GApplication's own (tapme_gtk.py's after GtkApplication's)."""
        specs = action_specs()
        for name, param_type in specs:
            action = Gio.SimpleAction.new(name, param_type)
            action.connect("activate", self.on_action)
            self.add_action(action)
        self.hold()
        self.holding = True
        self.restart_linger()
        # Emissions before the main loop runs are GLib's own start-up
        # self-activation of a plain launch, not calls someone sent. (Queued
        # D-Bus calls are dispatched at default priority, after this.)
        if self.get_flags() & Gio.ApplicationFlags.IS_SERVICE:
            self.main_loop_running = True
        else:
            GLib.idle_add(self.on_main_loop_started, priority=GLib.PRIORITY_HIGH)
        log("%s up as %s (record %s, linger %gs, actions %s)" % (
            self.get_application_id(),
            "a service" if self.get_flags() & Gio.ApplicationFlags.IS_SERVICE else "a plain launch",
            self.recorder.path or "<stdout>", self.linger,
            ", ".join(n + (":" + t.dup_string() if t else "") for n, t in specs) or "none"))

    def on_main_loop_started(self):
        self.main_loop_running = True
        return GLib.SOURCE_REMOVE

    def restart_linger(self):
        if self.linger_source:
            GLib.source_remove(self.linger_source)
        self.linger_source = GLib.timeout_add(int(self.linger * 1000), self.on_linger_expired)

    def on_linger_expired(self):
        self.linger_source = 0
        log("no calls for %gs; quitting" % self.linger)
        if self.holding:
            self.holding = False
            self.release()
        return GLib.SOURCE_REMOVE

    def quit_now(self, *_):
        log("signal received; quitting")
        self.quit()
        return GLib.SOURCE_REMOVE

    # -- calls ------------------------------------------------------------

    def do_before_emit(self, platform_data):
        self.platform_data = platform_data
        try:
            Gio.Application.do_before_emit(self, platform_data)
        except Exception:
            pass

    def do_after_emit(self, platform_data):
        try:
            Gio.Application.do_after_emit(self, platform_data)
        except Exception:
            pass
        self.platform_data = None

    def record(self, call, uris=None, hint=None, action=None, parameter=None, **more):
        if not self.main_loop_running:
            log("not recording the start-up %s of a plain launch" % call)
            return
        self.recorder.write({
            "call": call,
            "app_id": self.get_application_id(),
            "uris": uris,
            "hint": hint,
            "action": action,
            "parameter": printed(parameter),
            "platform_data": platform_dict(self.platform_data),
            "pid": os.getpid(),
            "time": time.time(),
            **more,
        })
        if env("WIDGETHOST_TEST_CRASH") == call:
            log("crashing on %s, as asked" % call)
            os._exit(70)
        self.restart_linger()

    def do_activate(self):
        self.record("activate")

    def do_open(self, files, n_files, hint):
        self.record("open", uris=[f.get_uri() for f in files], hint=hint)

    def on_action(self, action, parameter):
        self.record("action", action=action.get_name(), parameter=parameter)


def main(argv, application=TapMe):
    args = list(argv[1:])
    service = SERVICE_FLAG in args
    args = [a for a in args if a != SERVICE_FLAG]
    app_id = env("WIDGETHOST_TEST_APP_ID", DEFAULT_APP_ID).strip() or DEFAULT_APP_ID
    if args and not args[0].startswith("-"):
        app_id = args.pop(0)
    if not Gio.Application.id_is_valid(app_id):
        log("%r is not a valid application id" % app_id)
        return 2

    flags = Gio.ApplicationFlags.HANDLES_OPEN
    if service:
        flags |= Gio.ApplicationFlags.IS_SERVICE
    app = application(app_id, flags, Recorder(env("WIDGETHOST_TEST_RECORD").strip() or None), linger_seconds())
    for signum in (signal.SIGINT, signal.SIGTERM):
        GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, signum, app.quit_now)
    # The app id and --gapplication-service are ours; pass GLib only the rest
    # (anything left is treated as files to open by a HANDLES_OPEN app).
    return app.run([argv[0]] + args)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
