#!/usr/bin/python3
"""A widgethost.App with protocol widgethost, for PythonLibraryTests.swift: it
serves a timeline and options, takes taps through org.widgethost.App1, and
prints one JSON line for each thing it receives.

    /usr/bin/python3 clock_app.py [APP_ID]      (PYTHONPATH: the repository's python/)
"""
import json
import sys
import time

import widgethost
from gi.repository import GLib

BUNDLE = {"widgets": [{"kind": "Clock", "families": ["systemSmall", "accessoryInline"], "configuration": {
    "intent": "PickZone", "parameters": [{"name": "zone", "dynamic": True}, {"name": "style"}]}}]}


def record(call, **fields):
    print(json.dumps(dict(call=call, **fields)), flush=True)


class Clock(widgethost.App):
    def timeline(self, request):
        record("timeline", kind=request.kind, family=request.family, widget_id=request.widget_id, reason=request.reason,
               configuration=request.configuration)
        zone = request.configuration.get("zone", "utc")
        now = time.time()
        if request.family == "accessoryInline":  # no URL: a tap continues the user activity
            return widgethost.Timeline([(now, {"type": "text", "id": "t", "text": zone})], "never")
        return widgethost.Timeline([(now + delay, {"type": "vstack", "widgetURL": "clock://face", "children": [
            {"type": "text", "id": "t", "text": f"{text} in {zone}"},
            {"type": "link", "id": "zone", "url": f"clock://zone/{zone}", "children": [{"type": "text", "text": zone}]},
            {"type": "button", "id": "tick", "action": "tick", "parameter": 3, "children": [{"type": "text", "text": "Tick"}]},
            {"type": "toggle", "id": "chime", "action": "tick", "parameter": 3, "isOn": True, "label": "Chime"},
        ]}) for delay, text in ((0, "now"), (1, "later"))], "never")

    async def options(self, kind, parameter, configuration):  # a coroutine: answered when it returns
        if configuration.get("style") == "broken":
            raise widgethost.Error("org.example.Clock.Error.Broken", f"no zones for the style {configuration['style']}")
        return {"utc": "UTC", "cet": "Central European"}

    def on_open_url(self, url, context):
        record("open", url=url, token=context.activation_token, widget_id=context.widget_id, via=context.via)

    def on_continue_user_activity(self, activity, context):
        record("activity", type=activity.activity_type, info=activity.user_info, family=context.family, token=context.activation_token)


app = Clock(sys.argv[1] if len(sys.argv) > 1 else "org.example.Clock", schemes=["clock"], bundle=BUNDLE)


def tick(parameter, context):
    # A toggle gives its parameter as a button does; its new state comes beside it.
    state = {} if context.toggle_is_on is None else {"toggle": "on" if context.toggle_is_on else "off"}
    record("action", parameter=parameter, widget_id=context.widget_id, surface=context.surface, **state)


app.action("tick", tick)


async def main():
    try:
        await app.start()
    except widgethost.Error as error:
        return record("start-failed", name=error.name, message=error.message)
    record("started", registrations=app.registrations)
    try:
        await app.reload_timelines("Nope")
    except widgethost.Error as error:
        record("error", name=error.name, message=error.message)


widgethost.spawn(main())
GLib.MainLoop().run()
