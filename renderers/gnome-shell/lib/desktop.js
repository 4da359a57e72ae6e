// Placed widgets on the desktop: one actor per widget the host serves, at its
// family's size, drawn from its Content, in the layer of the wallpaper (below
// every window); a click reports a tap to the host with a token the shell
// mints for the widget's app.
//
// This module imports nothing from GNOME Shell: the entry point hands it what
// it needs of the shell (see `Desktop`'s constructor).
import Clutter from 'gi://Clutter';
import Gio from 'gi://Gio';
import St from 'gi://St';

import {Mirror, byPlacement, property} from './mirror.js';
import {Feedback, PressTracker, reportTap} from './taps.js';
import {FAMILY_SIZES, MONOCHROME, ROLES, Renderer, accessibleName} from './vocabulary.js';

export const MARGIN = 24;
export const SPACING = 18;
const INTERFACE_SCHEMA = 'org.gnome.desktop.interface';

/**
 * Where widgets of the given sizes go, flowing as text does from the top left
 * of `area` ({x, y, width, height}): left to right, a new row when one is full,
 * each row as tall as its tallest widget. Returns one [x, y] per size.
 */
export function flow(sizes, area, margin = MARGIN, spacing = SPACING) {
    const places = [];
    let x = margin, y = margin, rowHeight = 0;
    for (const [width, height] of sizes) {
        if (x > margin && x + width > area.width - margin) {
            x = margin;
            y += rowHeight + spacing;
            rowHeight = 0;
        }
        places.push([area.x + x, area.y + y]);
        x += width + spacing;
        rowHeight = Math.max(rowHeight, height);
    }
    return places;
}

/** One placed widget: a focusable, accessible button of its family's size holding its drawn tree. */
class DesktopWidget {
    constructor(desktop, path, proxy) {
        this.desktop = desktop;
        this.path = path;
        this.proxy = proxy;
        this.id = property(proxy, 'Id', path.slice(path.lastIndexOf('/') + 1));
        this.appId = property(proxy, 'AppId', '');
        this.kind = property(proxy, 'Kind', '');
        this.family = property(proxy, 'Family', 'systemSmall');
        this.size = FAMILY_SIZES[this.family] ?? FAMILY_SIZES.systemSmall;
        this.frame = new St.Button({
            style_class: 'widgethost-widget', reactive: true, can_focus: true, track_hover: true,
            accessible_role: ROLES.widget, width: this.size[0], height: this.size[1],
        });
        if (MONOCHROME.has(this.family))
            this.frame.add_style_class_name('widgethost-mono');
        this.body = new St.Widget({layout_manager: new Clutter.BinLayout(), clip_to_allocation: true,
            x_expand: true, y_expand: true});
        this.frame.set_child(this.body);
        this.presses = new PressTracker(this.frame);
        this.frame.connect('clicked', () => this.activated('', this.frame));
        this.notice = new Feedback(this.body, {
            style_class: 'widgethost-feedback', x_align: Clutter.ActorAlign.CENTER, y_align: Clutter.ActorAlign.END,
        });
        this.refresh();
    }

    refresh() {
        const text = property(this.proxy, 'Content', '');
        let tree = null;
        try {
            tree = text ? JSON.parse(text) : null;
        } catch (_error) {
            tree = null;
        }
        const renderer = new Renderer({
            family: this.family, dark: this.desktop.dark, cornerRadius: MONOCHROME.has(this.family) ? 14 : 22,
            onActivate: (id, button) => this.activated(id, button),
        });
        this.body.destroy_all_children();
        const root = renderer.render(tree);
        root.x_expand = true;
        root.y_expand = true;
        this.body.add_child(root);
        this.frame.accessible_name = accessibleName(tree) || this.kind || this.id;
        if (this.desktop.dark)
            this.frame.add_style_class_name('widgethost-dark');
        else
            this.frame.remove_style_class_name('widgethost-dark');
    }

    /** A link, button or toggle (or the widget itself) was clicked. */
    activated(ownId, button) {
        const [id, time] = this.presses.pick(ownId, button);
        this.desktop.tap(this, id, time);
    }

    /** Shows `text` over the widget for a few seconds. */
    feedback(text) {
        this.notice.show(text);
    }

    destroy() {
        this.frame.destroy();
    }
}

/**
 * The desktop: `shell` is what the entry point gives of GNOME Shell:
 *   layer            a Clutter.Actor below every window (the wallpaper's layer)
 *   workArea()       the primary monitor's work area {x, y, width, height}
 *   onLayoutChanged(callback) → a function that stops calling it: monitors or work areas changed
 *   launchToken(appId, time) → {token, withdraw()}: an activation token the shell mints for
 *                    the app ('' when none), and what ends the startup the shell then
 *                    waits for when the app is not to show a window
 *   log(message)
 * `mirror` is the Mirror it follows (made for it when null: on `bus`, a
 * Gio.DBusConnection, or the session bus when null too).
 */
export class Desktop {
    constructor(shell, {bus = null, mirror = null} = {}) {
        this.shell = shell;
        this.widgets = new Map();
        this.container = new St.Widget({name: 'widgethost-desktop', x_expand: true, y_expand: true});
        shell.layer.add_child(this.container);
        this.stopLayout = shell.onLayoutChanged(() => this.layout());
        this.settings = null;
        this.dark = false;
        const schema = Gio.SettingsSchemaSource.get_default()?.lookup(INTERFACE_SCHEMA, true);
        if (schema?.has_key('color-scheme')) {
            this.settings = new Gio.Settings({schema_id: INTERFACE_SCHEMA});
            this.dark = this.settings.get_string('color-scheme') === 'prefer-dark';
            this.settingsSignal = this.settings.connect('changed::color-scheme', () => {
                this.dark = this.settings.get_string('color-scheme') === 'prefer-dark';
                this.widgets.forEach(w => w.refresh());
            });
        }
        const listener = {
            added: (kind, path, proxy) => kind === 'widget' && this.add(path, proxy),
            changed: (kind, path, _proxy, names) => {
                if (kind === 'widget' && this.widgets.has(path) && (names.has('Content') || names.has('Configuration')))
                    this.widgets.get(path).refresh();
            },
            removed: (kind, path) => kind === 'widget' && this.remove(path),
        };
        // A mirror given is shared (with the top bar) and stays the giver's to destroy.
        this.ownMirror = mirror === null;
        this.mirror = mirror ?? new Mirror({bus, log: message => shell.log(message)});
        this.stopListening = this.mirror.listen(listener);
    }

    add(path, proxy) {
        const widget = new DesktopWidget(this, path, proxy);
        this.widgets.set(path, widget);
        this.container.add_child(widget.frame);
        this.layout();
    }

    remove(path) {
        const widget = this.widgets.get(path);
        if (widget === undefined)
            return;
        this.widgets.delete(path);
        widget.destroy();
        this.layout();
    }

    /** The widgets in the order the host placed them. */
    ordered() {
        return [...this.widgets.values()].sort((a, b) => byPlacement(a.id, b.id));
    }

    layout() {
        const area = this.shell.workArea();
        if (!area)
            return;
        const widgets = this.ordered();
        const places = flow(widgets.map(w => w.size), area);
        widgets.forEach((w, i) => w.frame.set_position(...places[i]));
    }

    /** Reports a tap on `widget`'s element `elementId` with a token minted for its app at `time`. */
    tap(widget, elementId, time) {
        reportTap(this.shell, widget.proxy, 's', [elementId], widget.appId, time, text => {
            if (this.widgets.get(widget.path) === widget)
                widget.feedback(text);
        });
    }

    destroy() {
        this.stopListening();
        if (this.ownMirror)
            this.mirror.destroy();
        this.stopLayout();
        if (this.settings !== null)
            this.settings.disconnect(this.settingsSignal);
        this.widgets.forEach(w => w.destroy());
        this.widgets.clear();
        this.container.destroy();
    }
}
