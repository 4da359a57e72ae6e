#!/usr/bin/python3
"""The widgethost module's pieces on their own, without a bus, for PythonLibraryTests.swift:
value conversion, timelines, contexts, errors, coroutines and the interface files.
Prints "ok" and how many checks passed; an AssertionError says which failed.

    /usr/bin/python3 units.py      (PYTHONPATH: the repository's python/)
"""
import datetime
import os
import tempfile
import time

import widgethost
from gi.repository import Gio, GLib

checks = 0


def check(condition, what):
    global checks
    assert condition, what
    checks += 1


# Python values become the D-Bus types the host takes.
check(widgethost.variant("a").get_type_string() == "s", "str is s")
check(widgethost.variant(True).get_type_string() == "b", "bool is b, not x")
check(widgethost.variant(3).get_type_string() == "x", "int is x")
check(widgethost.variant(1.5).get_type_string() == "d", "float is d")
check(widgethost.variant([1, "a"]).get_type_string() == "av", "a list is av")
check(widgethost.variant({"a": {"b": 1}}).unpack() == {"a": {"b": 1}}, "a dict is a{sv}, nested")
options = widgethost.vardict({"schemes": ["x"], "provider_path": "/p", "relevance": 5, "stale_date": 7, "other": 2})
check({k: v.get_type_string() for k, v in options.items()} == {"schemes": "as", "provider_path": "o", "relevance": "d",
                                                              "stale_date": "x", "other": "x"}, f"typed options: {options}")
check(widgethost.vardict({"relevance": "x"}, {})["relevance"].get_type_string() == "s", "nested values keep their own type")
try:
    widgethost.variant(object())
    check(False, "an object has no D-Bus type")
except widgethost.Error as error:
    check(error.name == "org.freedesktop.DBus.Error.InvalidArgs" and "no D-Bus type" in error.message, str(error))

# View trees and dates.
check(widgethost.view(None) == "" and widgethost.view('{"type":"text"}') == '{"type":"text"}', "text passes as it is")
check(widgethost.view({"type": "text", "text": "✓"}) == '{"type": "text", "text": "✓"}', "a dict is written as JSON")
check(widgethost.milliseconds(1.5) == 1500, "seconds to milliseconds")
check(widgethost.milliseconds(datetime.datetime(2030, 1, 1, tzinfo=datetime.timezone.utc)) == 1893456000000, "a datetime")
check(widgethost.object_path("widgets", "w3") == "/org/widgethost/Host1/widgets/w3", "an id becomes a path")
check(widgethost.object_path("widgets", "/a/b") == "/a/b", "a path stays")


# What a provider answers the host, from what the app's handlers return.
class Provider(widgethost.App):
    def timeline(self, request):
        return widgethost.Timeline([(10, {"type": "text"}), (11.5, "{}")], 20 if request.kind == "After" else "never")

    async def options(self, kind, parameter, configuration):
        return {"a": "A", "b": "B"} if parameter == "dict" else [("c", "C")]


provider = Provider("org.example.Units")
check(provider.object_path == "/org/example/Units" and provider.provider_path == "/org/example/Units/Provider", "default paths")
check(widgethost.App("org.example.my-app").object_path == "/org/example/my_app", "'-' becomes '_' in the object path")
answer = widgethost.run(provider._timeline("Clock", "systemSmall", {}, {"widget_id": "w1", "reason": "added"}))
check(answer == ([(10000, '{"type": "text"}'), (11500, "{}")], "never", 0), f"a timeline: {answer}")
check(widgethost.run(provider._timeline("After", "systemSmall", {}, {}))[1:] == ("after", 20000), "a date as the policy is 'after'")
check(widgethost.run(provider._options("Clock", "dict", {})) == ([("a", "A"), ("b", "B")],), "options from a dict, in order")
check(widgethost.run(provider._options("Clock", "list", {})) == ([("c", "C")],), "options from pairs")
bare = widgethost.App("org.example.Bare")
check(not bare._provides() and widgethost.run(bare._timeline("K", "f", {}, {})) == ([], "never", 0), "no timeline: empty, never")
for coroutine, name in ((bare._options("K", "p", {}), "org.widgethost.Error.NoOptions"),):
    try:
        widgethost.run(coroutine)
        check(False, name)
    except widgethost.Error as error:
        check(error.name == name, str(error))
try:
    bare._action("nope")
    check(False, "an unknown action")
except widgethost.Error as error:
    check(error.name == "org.widgethost.Error.UnknownAction" and "nope" in error.message, str(error))
try:
    bare.call("/", "i", "m")
    check(False, "a call before start()")
except widgethost.Error as error:
    check(error.name == "org.widgethost.Error.NotStarted", str(error))

# A delivery's context, and one that came too late.
data = {"activation-token": "T", "org.widgethost.source": {"widget_id": "w1", "family": "systemSmall", "via": "link"},
        "org.widgethost.deadline": int(time.time() * 1000) + 60000}
context = widgethost.Context(data)
check((context.activation_token, context.widget_id, context.family, context.via, context.activity_id, context.late)
      == ("T", "w1", "systemSmall", "link", None, False), vars(context))
check(widgethost.Context(dict(data, **{"org.widgethost.deadline": 1})).late, "a passed deadline is late")
check(not widgethost.Context({}).late, "no deadline is never late")
try:
    widgethost.run(bare._deliver(lambda *_: None, "u", {"org.widgethost.deadline": 1}))
    check(False, "a late delivery is refused")
except widgethost.Error as error:
    check("deadline" in error.message, str(error))

# D-Bus errors keep their name and message; others become Failed.
remote = Gio.DBusError.new_for_dbus_error("org.widgethost.Host1.Error.UnknownKind", "no kind 'Nope'")
try:
    raise remote
except GLib.Error as error:
    named = widgethost.Error.of(error)
check((named.name, named.message) == ("org.widgethost.Host1.Error.UnknownKind", "no kind 'Nope'"), str(named))


# Coroutines on the main loop: values, exceptions and what may be awaited.
async def add(a, b):
    return await widgethost.later(lambda: a + b)


async def fails():
    await widgethost.later(lambda: 1)
    raise ValueError("no")


async def awaits_other():
    class Other:
        def __await__(self):
            yield "something"
    await Other()


check(widgethost.run(add(1, 2)) == 3, "a coroutine's value")
for coroutine, kind in ((fails(), ValueError), (awaits_other(), TypeError)):
    try:
        widgethost.run(coroutine)
        check(False, kind)
    except kind:
        check(True, kind)
pending = widgethost.Future()
GLib.timeout_add(10, lambda: pending.settle("later") and False)


async def waits():
    return await pending


check(widgethost.run(waits()) == "later", "a Future settled later resumes its coroutine")

# The interfaces come from the interface files (WIDGETHOST_INTERFACES_DIR first), never from XML of the library's own.
check([m.name for m in widgethost.interface("Provider1").methods] == ["GetTimeline", "ProvideOptions"], "Provider1 from dbus/")
with tempfile.TemporaryDirectory() as folder:
    with open(f"{folder}/org.widgethost.App1.xml", "w", encoding="utf-8") as f:
        f.write('<node><interface name="org.widgethost.App1"><method name="Elsewhere"/></interface></node>')
    os.environ["WIDGETHOST_INTERFACES_DIR"] = folder
    check([m.name for m in widgethost.interface("App1").methods] == ["Elsewhere"], "WIDGETHOST_INTERFACES_DIR first")
    check([m.name for m in widgethost.interface("Provider1").methods] == ["GetTimeline", "ProvideOptions"], "then dbus/")
print("ok", checks, "checks", flush=True)
