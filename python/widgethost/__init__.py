# widgethost: an app's side of WidgetHost, on Gio's GDBus and the GLib main loop (docs/python.md).
import collections
import inspect
import json
import os
import signal
import sys
import time
import traceback

import gi

gi.require_version("Gio", "2.0")
from gi.repository import Gio, GLib  # noqa: E402

HOST, ROOT, FAILED = "org.widgethost.Host1", "/org/widgethost/Host1", "org.freedesktop.DBus.Error.Failed"
PlacedWidget = collections.namedtuple("PlacedWidget", "path kind family id configuration")
TimelineRequest = collections.namedtuple("TimelineRequest", "kind family configuration widget_id reason context")
UserActivity = collections.namedtuple("UserActivity", "activity_type user_info")
Timeline = collections.namedtuple("Timeline", "entries policy", defaults=("at-end",))
# The D-Bus types of the host's options; other values take theirs from their Python type.
TYPES = {"schemes": "as", "surfaces": "as", "live_activity_launch_types": "as", "object_path": "o", "provider_path": "o",
         "stale_date": "x", "dismissal_date": "x", "relevance": "d"}


class Error(Exception):
    def __init__(self, name, message):
        super().__init__(f"{name}: {message}")
        self.name, self.message = name, message

    @classmethod
    def of(cls, error):
        if isinstance(error, cls):
            return error
        if not isinstance(error, GLib.Error):
            traceback.print_exception(error)  # the app's bug: show where
            return cls(FAILED, f"{type(error).__name__}: {error}")
        name = Gio.DBusError.get_remote_error(error) or FAILED
        return cls(name, error.message.removeprefix(f"GDBus.Error:{name}: "))


class Future:
    # A value to come, which coroutines await. An error nothing awaits is printed.
    def __init__(self):
        self.done, self.value, self.error, self._callbacks = False, None, None, None

    def settle(self, value=None, error=None):
        if not self.done:
            self.done, self.value, self.error = True, value, error
            for callback in self._callbacks or ():
                callback(self)
            if error is not None and self._callbacks is None:
                GLib.idle_add(lambda: self._callbacks is None and print(f"widgethost: {Error.of(error)}", file=sys.stderr, flush=True))
        return self

    def then(self, callback):
        self._callbacks = self._callbacks or []
        callback(self) if self.done else self._callbacks.append(callback)
        return self

    def __await__(self):
        if not self.done:
            yield self
        if self.error is not None:
            raise self.error
        return self.value


def spawn(coroutine):
    # Runs a coroutine on the main loop, from its next iteration: a Future of what it returns.
    future = Future()

    def step(awaited=None):
        try:
            sent = coroutine.throw(awaited.error) if awaited and awaited.error else coroutine.send(awaited and awaited.value)
        except StopIteration as stop:
            return future.settle(stop.value)
        except Exception as error:
            return future.settle(error=error)
        (sent if isinstance(sent, Future) else Future().settle(error=TypeError(f"{sent!r} is no widgethost Future"))).then(step)
    GLib.idle_add(lambda: step() and False)
    return future


def later(function, *args):
    # function(*args) as a Future: what it returns, what the coroutine it returns returns, or what it raises.
    try:
        value = function(*args)
    except Exception as error:
        return Future().settle(error=error)
    return spawn(value) if inspect.iscoroutine(value) else value if isinstance(value, Future) else Future().settle(value)


def run(coroutine):
    # Runs a coroutine in a main loop of its own until it returns.
    loop = GLib.MainLoop()
    future = spawn(coroutine).then(lambda _: loop.quit())
    loop.run()
    if future.error is not None:
        raise future.error
    return future.value


def interface(name):
    # The interface file the package installs (a checkout's dbus/ first), never XML of our own.
    checkout = os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "..", "dbus")
    for folder in (os.environ.get("WIDGETHOST_INTERFACES_DIR"), checkout, "/usr/share/dbus-1/interfaces"):
        if folder and os.path.exists(f"{folder}/org.widgethost.{name}.xml"):
            with open(f"{folder}/org.widgethost.{name}.xml", encoding="utf-8") as f:
                return Gio.DBusNodeInfo.new_for_xml(f.read()).interfaces[0]
    raise Error("org.widgethost.Error.NoInterface", f"no org.widgethost.{name}.xml: install widgethost, or set WIDGETHOST_INTERFACES_DIR")


def variant(value, signature=None):
    if isinstance(value, GLib.Variant):
        return value
    if isinstance(value, dict):
        return GLib.Variant("a{sv}", vardict(value, {}))
    if isinstance(value, (list, tuple)) and not signature:
        return GLib.Variant("av", [variant(item) for item in value])
    signature = signature or {bool: "b", int: "x", float: "d", str: "s"}.get(type(value))
    if not signature:
        raise Error("org.freedesktop.DBus.Error.InvalidArgs", f"{value!r} has no D-Bus type; give a str, bool, int, float, list or dict")
    return GLib.Variant(signature, float(value) if signature == "d" else value)


def vardict(values, types=TYPES):
    return {key: variant(value, types.get(key)) for key, value in values.items()}


def view(tree):
    return "" if tree is None else tree if isinstance(tree, str) else json.dumps(tree, ensure_ascii=False)


def milliseconds(date):
    return int((date.timestamp() if hasattr(date, "timestamp") else date) * 1000)


def object_path(kind, id_or_path):
    return id_or_path if id_or_path.startswith("/") else f"{ROOT}/{kind}/{id_or_path}"


class Context:
    # Where a delivery came from, and the click's activation token (docs/delivery.md#platform-data-and-context).
    def __init__(self, data):
        self.data, self.activation_token = data, data.get("activation-token")
        self.source = data.get("org.widgethost.source", {})
        for key in ("kind", "family", "widget_id", "activity_id", "attributes_type", "presentation", "surface", "via"):
            setattr(self, key, self.source.get(key))
        # For a toggle's action, the state the tap turns it to; None for a button and other deliveries.
        self.toggle_is_on = data.get("org.widgethost.toggle-is-on")
        # Past its deadline the host no longer waits for the delivery (the app was stopped or busy): drop it.
        self.late = time.time() * 1000 > data.get("org.widgethost.deadline", float("inf"))


class App:
    # An app's registration, made again whenever the host restarts; its handlers: docs/python.md#handlers.
    def __init__(self, app_id, schemes=(), bundle=None, protocol="widgethost", **options):
        self.app_id, self.protocol, self.bus, self.registrations = app_id, protocol, None, 0
        self.bundle = bundle if bundle is None or isinstance(bundle, str) else json.dumps(bundle)
        self.object_path = options.get("object_path") or "/" + app_id.replace(".", "/").replace("-", "_")
        self.provider_path = options.get("provider_path") or self.object_path + "/Provider"
        self.registration = dict(options, protocol=protocol, schemes=list(schemes))
        self._actions, self._exports, self._placed = {}, [], {}
        self._ready = Future().settle()  # what the host's calls wait for

    def _provides(self):
        return hasattr(self, "timeline") or hasattr(self, "options")

    def export(self, connection):
        # Before the app takes its bus name, so that no call finds nothing there.
        if self._exports:
            return
        if self._provides():
            self._serve(connection, "Provider1", self.provider_path, {"GetTimeline": self._timeline, "ProvideOptions": self._options})
        if self.protocol == "widgethost":
            self._serve(connection, "App1", self.object_path, {
                "OpenURL": lambda url, data: self._deliver(self.on_open_url, url, data),
                "ContinueUserActivity": lambda kind, info, data: self._deliver(self.on_continue_user_activity, UserActivity(kind, info), data),
                "PerformAction": lambda name, value, data: self._deliver(self._action(name), None if value == [] else value, data)})

    def _serve(self, connection, name, path, methods):
        info = interface(name)

        def call(connection, sender, path, interface_name, method, parameters, invocation):
            out = "(" + "".join(arg.signature for arg in info.lookup_method(method).out_args) + ")"

            def reply(done):
                if done.error is None:
                    return invocation.return_value(None if out == "()" else GLib.Variant(out, done.value))
                error = Error.of(done.error)
                invocation.return_dbus_error(error.name, error.message)
            self._ready.then(lambda _: later(methods[method], *parameters.unpack()).then(reply))
        self._exports.append(connection.register_object(path, info, call))

    async def _timeline(self, kind, family, configuration, context):
        if not hasattr(self, "timeline"):  # options only: the widgets keep the content the app sets
            return [], "never", 0
        request = TimelineRequest(kind, family, configuration, context.get("widget_id", ""), context.get("reason", ""), context)
        entries, policy = await later(self.timeline, request)
        after = not isinstance(policy, str)  # a date: ask again then
        return [(milliseconds(date), view(tree)) for date, tree in entries], "after" if after else policy, milliseconds(policy) if after else 0

    async def _options(self, kind, parameter, configuration):
        if not hasattr(self, "options"):
            raise Error("org.widgethost.Error.NoOptions", f"{kind} offers no options for {parameter}")
        options = await later(self.options, kind, parameter, configuration)
        return (list(options.items() if isinstance(options, dict) else options),)

    def action(self, name, handler, parameter_type=None):
        self._actions[name] = handler

    def _action(self, name):
        if name not in self._actions:
            raise Error("org.widgethost.Error.UnknownAction", f"{self.app_id} has no action '{name}', only {sorted(self._actions)}")
        return self._actions[name]

    def _deliver(self, handler, value, data):
        if Context(data).late:
            raise Error(FAILED, "the delivery came after its deadline, when the host no longer waited for it; dropped")
        return later(handler, value, Context(data))

    def on_open_url(self, url, context):
        pass

    def on_continue_user_activity(self, activity, context):
        pass

    def call(self, path, interface_name, method, signature=None, *args, destination=HOST):
        if self.bus is None:
            raise Error("org.widgethost.Error.NotStarted", f"{self.app_id} has not started; await its start() first")
        future = Future()

        def done(bus, result):
            try:
                future.settle(bus.call_finish(result).unpack())
            except GLib.Error as error:
                future.settle(error=Error.of(error))
        self.bus.call(destination, path, interface_name, method, GLib.Variant(signature, args) if signature else None,
                      None, Gio.DBusCallFlags.NONE, -1, None, done)
        return future

    def _host(self, interface_name, method, signature, *args, path=ROOT):
        return self.call(path, "org.widgethost.Host1." + interface_name, method, signature, *args)

    async def start(self, connection=None):
        if connection is None:
            future = Future()
            Gio.bus_get(Gio.BusType.SESSION, None, lambda _, result: future.settle(Gio.bus_get_finish(result)))
            connection = await future
        self.bus = connection
        self.export(connection)
        if self.protocol == "widgethost":  # taps go to this connection: it must own the app's bus name
            (owned,) = await self.call("/org/freedesktop/DBus", "org.freedesktop.DBus", "RequestName", "(su)", self.app_id, 4,
                                       destination="org.freedesktop.DBus")
            if owned not in (1, 4):
                raise Error("org.widgethost.Error.NameTaken", f"another connection owns the bus name {self.app_id}; is the app running already?")
        watches = [("org.freedesktop.DBus", "org.freedesktop.DBus", "NameOwnerChanged", None, HOST)]
        if hasattr(self, "content"):
            watches += [(HOST, "org.freedesktop.DBus.ObjectManager", None, ROOT, None),
                        (HOST, "org.freedesktop.DBus.Properties", "PropertiesChanged", None, "org.widgethost.Host1.Widget")]
        for watch in watches:
            connection.signal_subscribe(*watch, Gio.DBusSignalFlags.NONE, lambda *signal: self._signal(signal[2], signal[4], *signal[5].unpack()))
        await self._register()

    async def _register(self):
        options = dict(self.registration, provider_path=self.provider_path) if self._provides() else self.registration
        await self._host("Apps", "RegisterApp", "(sa{sv})", self.app_id, vardict(options))
        if self.bundle is not None:
            await self._host("Widgets", "RegisterWidgets", "(ss)", self.app_id, self.bundle)
        self.registrations += 1
        if hasattr(self, "content"):
            self._placed = {widget.path: widget for widget in await self.current_configurations()}
            self.reload_content()

    def _signal(self, path, member, name, *args):
        if member == "NameOwnerChanged":
            if args[1] and self.registrations:  # the host restarted, and keeps no registration
                spawn(self._register())
        elif member == "InterfacesRemoved":
            self._placed.pop(name, None)
        elif member == "InterfacesAdded" and args[0].get("org.widgethost.Host1.Widget", {}).get("AppId") == self.app_id:
            widget = args[0]["org.widgethost.Host1.Widget"]
            self._placed[name] = PlacedWidget(name, *(widget.get(k) for k in ("Kind", "Family", "Id", "Configuration")))
            self.reload_content(path=name)
        elif member == "PropertiesChanged" and path in self._placed and "Configuration" in args[0]:
            self._placed[path] = self._placed[path]._replace(configuration=args[0]["Configuration"])
            self.reload_content(path=path)

    def reload_content(self, kind=None, path=None):
        async def keep(widget):
            tree = await later(self.content, widget)
            if tree is not None:
                await self.set_content(widget.path, tree)
        for widget in list(self._placed.values()):
            if kind in (None, widget.kind) and path in (None, widget.path):
                spawn(keep(widget))

    async def current_configurations(self):
        (widgets,) = await self._host("Widgets", "CurrentConfigurations", "(s)", self.app_id)
        return [PlacedWidget(*widget) for widget in widgets]

    async def add_widget(self, kind, family, configuration=None):
        (path,) = await self._host("Widgets", "AddWidget", "(sssa{sv})", self.app_id, kind, family, vardict(configuration or {}, {}))
        return path

    def set_content(self, widget, tree):
        return self._host("Widget", "SetContent", "(s)", view(tree), path=object_path("widgets", widget))

    async def content_of(self, widget):
        (content,) = await self.call(object_path("widgets", widget), "org.freedesktop.DBus.Properties", "Get", "(ss)",
                                     "org.widgethost.Host1.Widget", "Content")
        return content

    def reload_timelines(self, kind):
        return self._host("Widgets", "ReloadTimelines", "(ss)", self.app_id, kind)

    def reload_all_timelines(self):
        return self._host("Widgets", "ReloadAllTimelines", "(s)", self.app_id)

    async def start_activity(self, attributes_type, content, **options):
        (path,) = await self._host("LiveActivities", "StartActivity", "(sssa{sv})", self.app_id, attributes_type, view(content), vardict(options))
        return path

    def update_activity(self, activity, content=None, **options):
        return self._host("LiveActivity", "Update", "(sa{sv})", view(content), vardict(options), path=object_path("activities", activity))

    def end_activity(self, activity, **options):
        return self._host("LiveActivity", "End", "(a{sv})", vardict(options), path=object_path("activities", activity))

    async def activities(self):
        (objects,) = await self.call(ROOT, "org.freedesktop.DBus.ObjectManager", "GetManagedObjects")
        return sorted((path, interfaces["org.widgethost.Host1.LiveActivity"]) for path, interfaces in objects.items()
                      if interfaces.get("org.widgethost.Host1.LiveActivity", {}).get("AppId") == self.app_id)


class Application(Gio.Application, App):
    # Protocol freedesktop: GApplication's Open, Activate and ActivateAction reach on_open_url,
    # on_continue_user_activity and the actions, with the platform data as their context.
    def __init__(self, app_id, schemes=(), bundle=None, protocol="freedesktop", flags=Gio.ApplicationFlags.HANDLES_OPEN, **options):
        Gio.Application.__init__(self, application_id=app_id, flags=flags)
        App.__init__(self, app_id, schemes, bundle, protocol, **options)
        self.platform_data, self._ready = {}, Future()  # the host's calls wait until the app has started

    def do_dbus_register(self, connection, path):
        self.export(connection)
        return True

    def do_startup(self):
        Gio.Application.do_startup(self)
        # Ctrl-C and SIGTERM end the app as quit() does (a parent may have blocked them); so does losing the bus.
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
        for signum in (signal.SIGINT, signal.SIGTERM):
            GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, signum, lambda: self.quit() or GLib.SOURCE_REMOVE)
        if self.get_dbus_connection():
            self.get_dbus_connection().connect("closed", lambda *_: self.quit())
        self.hold()  # while it registers
        spawn(self._started())

    async def _started(self):
        try:
            await self.start(self.get_dbus_connection())
        except Error as error:
            print(f"could not register with WidgetHost: {error.message}", file=sys.stderr, flush=True)
        else:
            if hasattr(self, "started"):
                await later(self.started)
        finally:
            self._ready.settle()
            self.release()

    def do_before_emit(self, platform_data):
        Gio.Application.do_before_emit(self, platform_data)
        self.platform_data = platform_data.unpack()

    def _emitted(self, handler, value):
        context = Context(self.platform_data)
        if not context.late:
            self._ready.then(lambda _: later(handler, value, context))

    def do_open(self, files, n_files, hint):
        for file in files:
            self._emitted(self.on_open_url, file.get_uri())

    def do_activate(self):
        activity = self.platform_data.get("org.widgethost.user-activity")
        if activity:
            self._emitted(self.on_continue_user_activity, UserActivity(activity["activity_type"], activity["user_info"]))

    def action(self, name, handler, parameter_type=None):
        App.action(self, name, handler)
        action = Gio.SimpleAction.new(name, GLib.VariantType.new(parameter_type) if parameter_type else None)
        action.connect("activate", lambda _, parameter: self._emitted(handler, None if parameter is None else parameter.unpack()))
        self.add_action(action)
