#!/usr/bin/python3
"""Delivery tracker: a GLib GApplication that starts a Live Activity on WidgetHost.

Written with the repository's widgethost module (docs/python.md), it
registers with the host on its own D-Bus connection (protocol 'freedesktop',
so taps arrive through org.freedesktop.Application), starts the Live Activity
in activity.json — the same StartActivity call `gdbus call` makes, but on the
connection that holds the app's registration, which is the only one allowed
to start, update or end the app's activities — counts the minutes down with
Update, once a minute, and prints every URL it is asked to open.
It starts its activity once: when the host already has one of the app's
activities that has not ended (the app ran before; the host keeps activities
across restarts), it goes on with that one.

    /usr/bin/python3 examples/delivery/delivery_app.py

Tap it with `widget-host tap-activity a1 expanded map` (or gdbus, see the
README) and watch this program print the URL. It runs until it is stopped
(Ctrl-C, SIGTERM), or until the bus goes away; the activity stays, as a
delivery goes on when its app is closed, and ends by itself after 8 hours.
Installed with its desktop entry and D-Bus service file
(org.example.Delivery.desktop.in and org.example.Delivery.service.in), the bus
starts it with --gapplication-service when a tap is delivered and it is not
running.
"""
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))  # the repository's widgethost module (docs/python.md)
import widgethost  # noqa: E402
from gi.repository import GLib  # noqa: E402

APP_ID = "org.example.Delivery"


class Delivery(widgethost.Application):
    def __init__(self):
        super().__init__(APP_ID, schemes=["delivery-tracker"])
        self.activity = None
        self.eta = 10

    async def started(self):
        self.hold()  # stay up: taps may come at any time
        self.activity = next((path for path, activity in await self.activities() if activity.get("EndDate", 0) == 0), None)
        if self.activity:
            await self.update_activity(self.activity, state=self.state())
            print(f"went on with {self.activity.rsplit('/', 1)[-1]} ({self.activity}), started before", flush=True)
        else:
            with open(os.path.join(HERE, "activity.json"), encoding="utf-8") as f:
                content = f.read()
            self.activity = await self.start_activity(
                "DeliveryAttributes", content, attributes={"order": "1234"}, state=self.state(),
                stale_date=int(time.time()) + 3600, relevance=5.0)
            print(f"started {self.activity.rsplit('/', 1)[-1]} ({self.activity})", flush=True)
        print(f"Delivery is ready; Ctrl-C or kill {os.getpid()} stops it.", flush=True)
        GLib.timeout_add_seconds(60, self.tick)  # the ETA is in minutes

    def state(self):
        return {"eta_minutes": self.eta, "status": "out-for-delivery"}

    def tick(self):
        self.eta = max(0, self.eta - 1)
        self.update_activity(self.activity, state=self.state())
        return self.eta > 0

    def on_open_url(self, url, context):
        print(f"Delivery opened {url}", flush=True)


if __name__ == "__main__":
    app = Delivery()
    if "--gapplication-service" not in sys.argv and app.register(None) and app.get_is_remote():
        print("Delivery already runs; it keeps its activity.", flush=True)
        sys.exit(0)
    sys.exit(app.run(sys.argv))  # --gapplication-service when the bus starts it
