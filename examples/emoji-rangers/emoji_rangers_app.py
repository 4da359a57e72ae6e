#!/usr/bin/python3
"""Emoji Rangers: a GLib GApplication that provides its widgets' timelines to WidgetHost.

The app of WidgetKit's Emoji Rangers example. Written with the repository's
widgethost module (docs/python.md): at start it registers with the host on
its own D-Bus connection (protocol 'freedesktop', so taps arrive through
org.freedesktop.Application) and publishes its widget bundle (bundle.json).
It serves org.widgethost.Provider1 at /org/example/EmojiRangers/Provider, the
interface of the repository's dbus/org.widgethost.Provider1.xml:

- GetTimeline: for EmojiRangerWidget, the configured hero's health recovering
  entry by entry (20 points every STEP seconds, up to 100, from START_HEALTH
  when the app is first asked about the hero), policy at-end; for
  LeaderboardWidget, one entry with every hero as a link, policy never.
- ProvideOptions: the heroes, for the dynamic 'hero' parameter.

Its widget has a ⚡ button whose action 'superCharge' (a GAction taking the
hero id) heals the hero at once; the host then reloads the widget, and the new
timeline shows full health. The action 'reloadAll' asks the host to reload
every widget of the app (ReloadAllTimelines, outside the daily budget).

    /usr/bin/python3 examples/emoji-rangers/emoji_rangers_app.py [APP_ID] [--gapplication-service] [URL…]

It prints a line for each thing it is asked (a timeline, the hero options, an
action, a URL) and runs until it is stopped (Ctrl-C, SIGTERM), or until the bus
goes away. Installed with its desktop entry and D-Bus service file
(org.example.EmojiRangers.desktop.in and org.example.EmojiRangers.service.in,
see docs/guides/app.md#make-the-app-d-bus-activatable), the bus starts it with
--gapplication-service when the host calls its provider or delivers a tap and
it is not running.

Environment (all optional):
  EMOJI_RANGERS_STEP          seconds between timeline entries (default 10)
  EMOJI_RANGERS_START_HEALTH  a hero's health when the app is first asked about it, 0-100 (default 40)
  EMOJI_RANGERS_LINGER        seconds to stay up after the last call; unset: forever
  EMOJI_RANGERS_RECORD        a file to append one JSON line per call to (for tests)
  EMOJI_RANGERS_CRASH         "timeline": die (exit 70) on GetTimeline without answering
  EMOJI_RANGERS_CRASH_ONCE    a file: crash like that only when the file does not exist yet
  EMOJI_RANGERS_HANG          "timeline": never answer GetTimeline
  WIDGETHOST_INTERFACES_DIR   where org.widgethost.Provider1.xml is (default: the
                              repository's dbus/, else /usr/share/dbus-1/interfaces)
"""
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))  # the repository's widgethost module (docs/python.md)
import widgethost  # noqa: E402
from gi.repository import Gio, GLib  # noqa: E402

APP_ID = "org.example.EmojiRangers"
PROVIDER_PATH = "/org/example/EmojiRangers/Provider"
ERROR = "org.example.EmojiRangers.Error."
HEROES = [("spouty", "🐳", "Spouty"), ("egghead", "🦄", "Egghead"), ("spook", "👻", "Spook")]
HEAL_PER_STEP = 20
HERO_COLOURS = {  # each hero's card, in both appearances
    "spouty": {"light": "#d6ebff", "dark": "#173049"},
    "egghead": {"light": "#ffe1f1", "dark": "#45203a"},
    "spook": {"light": "#ebe4ff", "dark": "#2c2545"},
}


def env(name, default=None):
    value = os.environ.get(name, "")
    return value if value else default


def compact(tree):
    return json.dumps(tree, separators=(",", ":"), ensure_ascii=False)


class EmojiRangers(widgethost.Application):
    def __init__(self, app_id, flags):
        with open(os.path.join(HERE, "bundle.json"), encoding="utf-8") as f:
            bundle = f.read()
        super().__init__(app_id, schemes=["emoji-rangers"], bundle=bundle, provider_path=PROVIDER_PATH, flags=flags)
        self.step = float(env("EMOJI_RANGERS_STEP", "10"))
        self.start_health = max(0, min(100, int(env("EMOJI_RANGERS_START_HEALTH", "40"))))
        self.health = {}  # hero: (health, since when), from the first time the app is asked about the hero
        linger = env("EMOJI_RANGERS_LINGER")
        self.linger = float(linger) if linger else None
        self.linger_timer = 0
        self.pending = []  # timelines left unanswered on purpose (EMOJI_RANGERS_HANG)
        self.action("superCharge", self.super_charge, "s")
        self.action("reloadAll", self.reload_all)

    # -- bookkeeping -------------------------------------------------------

    def record(self, call, **fields):
        """Notes a call: a JSON line in EMOJI_RANGERS_RECORD, when set."""
        path = env("EMOJI_RANGERS_RECORD")
        if path:
            line = json.dumps(dict(call=call, app_id=self.get_application_id(), pid=os.getpid(), time=time.time(), **fields))
            with open(path, "a", encoding="utf-8") as f:
                f.write(line + "\n")
        self.touch()

    @staticmethod
    def say(text):
        print(text, flush=True)

    def touch(self):
        """Stay up LINGER seconds after the latest call (forever without LINGER)."""
        if self.linger is None:
            return
        if self.linger_timer:
            GLib.source_remove(self.linger_timer)
        else:
            self.hold()
        self.linger_timer = GLib.timeout_add(int(self.linger * 1000), self.linger_over)

    def linger_over(self):
        self.linger_timer = 0
        self.release()
        self.quit()
        return GLib.SOURCE_REMOVE

    def health_at(self, hero, when):
        health, since = self.health.setdefault(hero, (self.start_health, when))
        steps = int((when - since) / self.step) if self.step > 0 else 0
        return min(100, health + steps * HEAL_PER_STEP)

    # -- the host ----------------------------------------------------------

    def do_startup(self):
        widgethost.Application.do_startup(self)
        if self.linger is None:
            self.hold()  # stay up: taps and timeline requests may come at any time
        self.touch()

    def started(self):
        self.record("registered")
        self.say(f"registered {self.get_application_id()}; Ctrl-C or kill {os.getpid()} stops it.")

    # -- org.widgethost.Provider1 -------------------------------------------

    def timeline(self, request):
        kind, configuration = request.kind, request.configuration
        self.record("timeline", kind=kind, family=request.family, configuration=configuration, context=request.context)
        if env("EMOJI_RANGERS_HANG") == "timeline":
            self.pending.append(widgethost.Future())
            return self.pending[-1]
        self.maybe_crash()
        entries, policy = self.timeline_of(kind, configuration)
        count = f"{len(entries)} entries" if len(entries) != 1 else "1 entry"
        self.say(f"timeline of {kind} {dict(configuration)}: {count}, {policy}")
        return widgethost.Timeline(entries, policy)

    def options(self, kind, parameter, configuration):
        self.record("options", kind=kind, parameter=parameter, configuration=configuration)
        if (kind, parameter) != ("EmojiRangerWidget", "hero"):
            raise widgethost.Error(ERROR + "UnknownParameter", f"{kind} has no dynamic parameter '{parameter}'; only EmojiRangerWidget's hero")
        self.say(f"options of {parameter}: {', '.join(hero for hero, _, _ in HEROES)}")
        return [(hero, f"{emoji} {name}") for hero, emoji, name in HEROES]

    def maybe_crash(self):
        once = env("EMOJI_RANGERS_CRASH_ONCE")
        if once and not os.path.exists(once):
            open(once, "w").close()
            os._exit(70)
        if env("EMOJI_RANGERS_CRASH") == "timeline":
            os._exit(70)

    def timeline_of(self, kind, configuration):
        now = time.time()
        if kind == "LeaderboardWidget":
            rows = [{"type": "link", "id": hero, "url": f"emoji-rangers://hero/{hero}",
                     "label": f"{name}, {self.health_at(hero, now)}% health", "children": [
                         {"type": "hstack", "spacing": 8, "children": [
                             {"type": "text", "text": emoji, "fontSize": 22},
                             {"type": "text", "text": name, "fontWeight": "semibold"},
                             {"type": "spacer"},
                             {"type": "text", "text": f"{self.health_at(hero, now)}%"}]}]}
                    for hero, emoji, name in HEROES]
            board = {"type": "vstack", "spacing": 6, "padding": 14, "label": "Ranger Leaderboard", "children": [
                {"type": "text", "text": "Leaderboard", "fontSize": 15, "fontWeight": "bold"}, {"type": "divider"}] + rows}
            return [(now, compact(board))], "never"
        if kind != "EmojiRangerWidget":
            raise widgethost.Error(ERROR + "UnknownKind", f"Emoji Rangers has no widget kind '{kind}'")
        hero = configuration.get("hero", "spouty")
        found = [(emoji, name) for h, emoji, name in HEROES if h == hero]
        if not found:
            raise widgethost.Error(ERROR + "UnknownHero", f"no hero '{hero}'; the heroes are {', '.join(h for h, _, _ in HEROES)}")
        emoji, name = found[0]
        entries, when = [], now
        while True:
            health = self.health_at(hero, when)
            entries.append((when, compact(self.hero_tree(hero, emoji, name, health))))
            if health >= 100 or self.step <= 0:
                return entries, "at-end"
            when += self.step

    @staticmethod
    def hero_tree(hero, emoji, name, health):
        """The hero's widget in the rendering vocabulary (docs/vocabulary.md):
        the avatar on the hero's colour, its name, a health bar and a button."""
        return {"type": "color", "color": HERO_COLOURS[hero], "widgetURL": f"emoji-rangers://hero/{hero}",
                "label": f"{name}, {health}% health", "children": [
                    {"type": "vstack", "spacing": 4, "padding": 10, "children": [
                        {"type": "text", "id": "avatar", "text": emoji, "fontSize": 40},
                        {"type": "text", "id": "name", "text": name, "fontSize": 16, "fontWeight": "bold"},
                        {"type": "progress", "id": "health", "value": health / 100},
                        {"type": "text", "id": "health-label", "text": f"{health}%", "fontSize": 12, "opacity": 0.8},
                        {"type": "button", "id": "supercharge", "action": "superCharge", "parameter": hero,
                         "label": f"Super charge {name}", "children": [{"type": "text", "text": "⚡ Super Charge"}]},
                    ]}]}

    # -- org.freedesktop.Application ----------------------------------------

    def super_charge(self, hero, context):
        self.record("action", action="superCharge", parameter=hero)
        if hero in (h for h, _, _ in HEROES):
            self.health[hero] = (100, time.time())
            self.say(f"super charged {hero}")

    def reload_all(self, parameter, context):
        self.record("action", action="reloadAll", parameter=None)
        self.say("reloading every widget")
        self.reload_all_timelines()

    def do_activate(self):
        self.record("activate")

    def on_open_url(self, url, context):
        self.record("open", uris=[url])
        self.say(f"showing {url.rsplit('/', 1)[-1]}")


def main(argv):
    args = argv[1:]
    service = "--gapplication-service" in args
    args = [a for a in args if a != "--gapplication-service"]
    # An app id first (tests run the app under other ids); URLs to open after it.
    app_id = args.pop(0) if args and not args[0].startswith("-") and ":" not in args[0] else APP_ID
    flags = Gio.ApplicationFlags.HANDLES_OPEN | (Gio.ApplicationFlags.IS_SERVICE if service else 0)
    app = EmojiRangers(app_id, flags)
    if not service and app.register(None) and app.get_is_remote():
        print(f"{app_id} already runs.", flush=True)
        return 0
    return app.run([argv[0]] + args)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
