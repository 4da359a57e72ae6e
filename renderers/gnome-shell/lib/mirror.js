// A live mirror of what WidgetHost serves: its placed widgets.
//
// GLib's GDBusObjectManagerClient reads GetManagedObjects of
// org.widgethost.Host1 at /org/widgethost/Host1 and follows InterfacesAdded,
// InterfacesRemoved and PropertiesChanged; it also watches the name's owner,
// so when the host stops every object goes away and when it comes back they
// are read again. Every call is asynchronous and nothing is polled: a host
// that is absent, restarting or slow costs the shell nothing.
//
// This module imports nothing from GNOME Shell.
import Gio from 'gi://Gio';
import GLib from 'gi://GLib';

export const HOST = 'org.widgethost.Host1';
export const ROOT = '/org/widgethost/Host1';
export const WIDGET = 'org.widgethost.Host1.Widget';
export const ACTIVITY = 'org.widgethost.Host1.LiveActivity';

/** The value of a cached property of `proxy`, unpacked, or `fallback`. */
export function property(proxy, name, fallback = null) {
    const value = proxy.get_cached_property(name);
    return value === null ? fallback : value.recursiveUnpack();
}

/** Widget ids grow in length, then in text: w9 comes before w10. */
export function byPlacement(a, b) {
    return a.length - b.length || (a < b ? -1 : a > b ? 1 : 0);
}

export class Mirror {
    /**
     * Calls `added(kind, path, proxy)`, `changed(kind, path, proxy, names)`,
     * `removed(kind, path)` as the host's objects come, change and go (kind is
     * 'widget' or 'activity'), and `host(owner)` when the host's name gets or
     * loses an owner (owner is null while it has none); more listeners can be
     * added with `listen`. `bus` is a
     * Gio.DBusConnection, or null for the session bus.
     */
    constructor({bus = null, added = null, changed = null, removed = null, host = null, log = () => {}}) {
        this._listeners = [];
        if (added || changed || removed || host)
            this._listeners.push({added, changed, removed, host});
        this._log = log;
        this._cancellable = new Gio.Cancellable();
        this._known = new Map();
        this._signals = [];
        this.manager = null;
        this.bus = null;
        if (bus)
            this._connect(bus);
        else
            Gio.bus_get(Gio.BusType.SESSION, this._cancellable, (_source, result) => {
                try {
                    this._connect(Gio.bus_get_finish(result));
                } catch (error) {
                    if (!error.matches?.(Gio.IOErrorEnum, Gio.IOErrorEnum.CANCELLED))
                        this._log(`no session bus: ${error.message}`);
                }
            });
    }

    _connect(bus) {
        this.bus = bus;
        Gio.DBusObjectManagerClient.new(bus, Gio.DBusObjectManagerClientFlags.DO_NOT_AUTO_START, HOST, ROOT,
            null, this._cancellable, (_source, result) => {
                try {
                    this._ready(Gio.DBusObjectManagerClient.new_finish(result));
                } catch (error) {
                    if (!error.matches?.(Gio.IOErrorEnum, Gio.IOErrorEnum.CANCELLED))
                        this._log(`cannot follow ${HOST}: ${error.message}`);
                }
            });
    }

    _ready(manager) {
        if (this._cancellable.is_cancelled())
            return;
        this.manager = manager;
        const on = (signal, handler) => this._signals.push(manager.connect(signal, handler));
        on('interface-added', (_m, _object, proxy) => this._add(proxy));
        on('interface-removed', (_m, _object, proxy) => this._remove(proxy));
        on('object-added', (_m, object) => object.get_interfaces().forEach(p => this._add(p)));
        on('object-removed', (_m, object) => object.get_interfaces().forEach(p => this._remove(p)));
        on('interface-proxy-properties-changed', (_m, _object, proxy, changed, invalidated) => {
            const kind = Mirror.kind(proxy);
            if (kind === null)
                return;
            const names = new Set([...Object.keys(changed.deepUnpack()), ...invalidated]);
            this._emit('changed', kind, proxy.get_object_path(), proxy, names);
        });
        on('notify::name-owner', () => this._emit('host', manager.get_name_owner()));
        this._emit('host', manager.get_name_owner());
        const objects = manager.get_objects()
            .sort((a, b) => byPlacement(a.get_object_path(), b.get_object_path()));
        for (const object of objects)
            object.get_interfaces().forEach(p => this._add(p));
    }

    /**
     * Adds a listener: an object with any of `added`, `changed`, `removed` and
     * `host`, called as the constructor's callbacks are. It is told at once of
     * what the mirror already knows. Returns what removes it.
     */
    listen(listener) {
        this._listeners.push(listener);
        if (this.manager !== null)
            listener.host?.(this.manager.get_name_owner());
        for (const [key, proxy] of this._known)
            listener.added?.(key.slice(0, key.indexOf(' ')), proxy.get_object_path(), proxy);
        return () => {
            this._listeners = this._listeners.filter(l => l !== listener);
        };
    }

    _emit(name, ...args) {
        for (const listener of [...this._listeners])
            listener[name]?.(...args);
    }

    static kind(proxy) {
        const name = proxy.get_interface_name();
        return name === WIDGET ? 'widget' : name === ACTIVITY ? 'activity' : null;
    }

    _add(proxy) {
        const kind = Mirror.kind(proxy);
        const key = `${kind} ${proxy.get_object_path()}`;
        if (kind === null || this._known.has(key))
            return;
        this._known.set(key, proxy);
        this._emit('added', kind, proxy.get_object_path(), proxy);
    }

    _remove(proxy) {
        const kind = Mirror.kind(proxy);
        const key = `${kind} ${proxy.get_object_path()}`;
        if (kind === null || !this._known.delete(key))
            return;
        this._emit('removed', kind, proxy.get_object_path());
    }

    /** Whether the host's name has an owner now. */
    get hostRunning() {
        return this.manager !== null && this.manager.get_name_owner() !== null;
    }

    destroy() {
        this._cancellable.cancel();
        if (this.manager !== null)
            this._signals.forEach(id => this.manager.disconnect(id));
        this._signals = [];
        this._known.clear();
        this._listeners = [];
        this.manager = null;
    }
}

/**
 * How long a call waits for the host (ms): longer than the host waits for an
 * app (`--delivery-timeout`, 25 s by default), so a tap, which the host answers
 * once the app has, is not given up first. A tap's deadline says so.
 */
export const CALL_TIMEOUT_MS = 30000;

/**
 * Calls `method` of `proxy` with `args` (a GLib.Variant tuple) asynchronously;
 * `done(result, error)` gets the unpacked reply or the error.
 */
export function call(proxy, method, args, done, timeout = CALL_TIMEOUT_MS) {
    proxy.call(method, args, Gio.DBusCallFlags.NO_AUTO_START, timeout, null, replied(done));
}

/**
 * Calls `method` of the host's root object (`interface` at /org/widgethost/Host1)
 * on `bus` with `args` asynchronously, as `call` does; no bus yet is an error.
 */
export function callHost(bus, iface, method, args, done, timeout = CALL_TIMEOUT_MS) {
    if (bus === null) {
        done(null, new Error(`${HOST} is not running`));
        return;
    }
    bus.call(HOST, ROOT, iface, method, args, null, Gio.DBusCallFlags.NO_AUTO_START, timeout, null, replied(done));
}

/** The callback of an asynchronous call that gives `done(result, error)` the unpacked reply or the error. */
function replied(done) {
    return (source, result) => {
        let reply = null;
        try {
            reply = source.call_finish(result).recursiveUnpack();
        } catch (error) {
            done(null, error);
            return;
        }
        done(reply, null);
    };
}

/**
 * A D-Bus error's text without GDBus's remote-error prefix; a call the host
 * left unanswered (stopped, or too busy) until its timeout says so in a
 * person's words rather than GIO's "Timeout was reached".
 */
export function errorText(error) {
    if (error instanceof GLib.Error && error.matches(Gio.IOErrorEnum, Gio.IOErrorEnum.TIMED_OUT))
        return 'WidgetHost did not answer';
    if (error instanceof GLib.Error)
        Gio.DBusError.strip_remote_error(error);
    return error.message ?? String(error);
}
