#!/usr/bin/python3
"""Tap Me: a GLib GApplication that puts four colour widgets on WidgetHost.

Written with the repository's widgethost module (docs/python.md), it
registers with the host on its own D-Bus connection (protocol 'freedesktop',
so taps arrive through org.freedesktop.Application, which GApplication
implements), publishes its widget bundle, places one small widget per colour
plus a medium one with a "Show Red View" link, gives each its view tree from
this folder, and then prints every URL it is asked to open.
It places its widgets once: when the host already has them (the app ran
before; the host keeps widgets across restarts), it finds them by their
content (CurrentConfigurations, then each widget's Content) and places only
what is missing.

    /usr/bin/python3 examples/tap-me/tap_me_app.py

Tap a widget with `widget-host tap w1` (or gdbus, see the README) and watch
this program print the URL. It runs until it is stopped (Ctrl-C, SIGTERM), or
until the bus goes away. Installed with its desktop entry and D-Bus service
file (org.example.TapMe.desktop.in and org.example.TapMe.service.in, see
docs/guides/app.md#make-the-app-d-bus-activatable), the bus starts it with
--gapplication-service when a tap is delivered and it is not running.
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))  # the repository's widgethost module (docs/python.md)
import widgethost  # noqa: E402

APP_ID = "org.example.TapMe"
# Each widget: its family and the file with its view tree.
WIDGETS = [("systemSmall", "red"), ("systemSmall", "green"), ("systemSmall", "blue"), ("systemSmall", "yellow"),
           ("systemMedium", "show-red-link")]


def read(name):
    with open(os.path.join(HERE, name), encoding="utf-8") as f:
        return f.read()


class TapMe(widgethost.Application):
    def __init__(self):
        super().__init__(APP_ID, schemes=["tap-me-widget"], bundle=read("bundle.json"))

    async def placed(self):
        """The app's widgets the host already has: {(family, view tree): path}."""
        found = {}
        for widget in await self.current_configurations():
            content = await self.content_of(widget.path)
            if widget.kind == "TapMeWidget" and content:
                found.setdefault((widget.family, canonical(content)), widget.path)
        return found

    async def started(self):
        self.hold()  # stay up: taps may come at any time
        placed = await self.placed()
        for family, name in WIDGETS:
            content = read(name + ".json")
            path = placed.get((family, canonical(content)))
            if path:
                print(f"found {path.rsplit('/', 1)[-1]} ({name}, {family}), placed before", flush=True)
            else:
                path = await self.add_widget("TapMeWidget", family)
                await self.set_content(path, content)
                print(f"placed {path.rsplit('/', 1)[-1]} ({name}, {family})", flush=True)
        print(f"Tap Me is ready; Ctrl-C or kill {os.getpid()} stops it.", flush=True)

    def on_open_url(self, url, context):
        if context.activation_token is not None:
            print(f"  (activation token {context.activation_token})", flush=True)
        print(f"Tap Me opened {url}", flush=True)


def canonical(content):
    """A view tree's JSON, in one spelling: the host may keep it spelled otherwise."""
    return json.dumps(json.loads(content), sort_keys=True)


if __name__ == "__main__":
    app = TapMe()
    if "--gapplication-service" not in sys.argv and app.register(None) and app.get_is_remote():
        print("Tap Me already runs; it keeps the widgets it placed.", flush=True)
        sys.exit(0)
    sys.exit(app.run(sys.argv))  # --gapplication-service when the bus starts it
