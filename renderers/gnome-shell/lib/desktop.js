// Placed widgets on the desktop: one actor per widget the host serves, at its
// family's size, drawn from its Content, in the layer of the wallpaper (below
// every window); a click reports a tap to the host with a token the shell
// mints for the widget's app. A widget dragged with the mouse stays where it
// is dropped (kept in the extension's GSettings, see layout.js); a secondary
// click opens its menu (see menus.js); the keyboard reaches every widget.
//
// This module imports nothing from GNOME Shell: the entry point hands it what
// it needs of the shell (see `Desktop`'s constructor).
import Clutter from 'gi://Clutter';
import GLib from 'gi://GLib';
import Gio from 'gi://Gio';
import St from 'gi://St';

import {arrange, readingOrder, savedPositions, toSaved} from './layout.js';
import {AddWidgetMenu, WidgetMenu} from './menus.js';
import {Mirror, byPlacement, property} from './mirror.js';
import {PointerTracker} from './pointer.js';
import {Feedback, reportTap} from './taps.js';
import {FAMILY_SIZES, MONOCHROME, ROLES, Renderer, accessibleName} from './vocabulary.js';

const INTERFACE_SCHEMA = 'org.gnome.desktop.interface';
/** The extension's GSettings keys the desktop follows (schemas/org.gnome.shell.extensions.widgethost.gschema.xml). */
export const POSITIONS = 'widget-positions';
export const SHOW_WIDGETS = 'show-widgets';
export const FOCUS_WIDGETS = 'focus-widgets';
/** How far Ctrl and an arrow key move the focused widget (logical pixels). */
export const KEYBOARD_STEP = 16;

const ARROWS = {
    [Clutter.KEY_Left]: [-1, 0], [Clutter.KEY_Right]: [1, 0], [Clutter.KEY_Up]: [0, -1], [Clutter.KEY_Down]: [0, 1],
};

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
        this.gone = false;
        this.frame = new St.Button({
            style_class: 'widgethost-widget', reactive: true, can_focus: true, track_hover: true,
            accessible_role: ROLES.widget, width: this.size[0], height: this.size[1],
        });
        if (MONOCHROME.has(this.family))
            this.frame.add_style_class_name('widgethost-mono');
        this.body = new St.Widget({layout_manager: new Clutter.BinLayout(), clip_to_allocation: true,
            x_expand: true, y_expand: true});
        this.frame.set_child(this.body);
        this.pointer = new PointerTracker(this.frame, {
            tap: (id, time) => this.desktop.tap(this, id, time),
            menu: (x, y) => this.desktop.menu.open(this, x, y),
            dragBegin: () => this.desktop.dragBegin(this),
            dragMotion: (x, y) => this.frame.set_position(Math.round(x), Math.round(y)),
            dragEnd: (x, y) => this.desktop.dragEnd(this, x, y),
        });
        // The pointer never clicks the buttons (the tracker takes its presses):
        // a click comes from the keyboard (Enter, Space) or an assistive technology.
        this.frame.connect('clicked', () => this.activated(''));
        this.frame.connect('key-press-event', (_actor, event) => this.onKey(event));
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
            onActivate: id => this.activated(id),
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

    /** The widget's Configuration as GLib.Variants by key. */
    configuration() {
        return this.proxy.get_cached_property('Configuration')?.deepUnpack() ?? {};
    }

    /** A link, button or toggle (`id`), or the widget itself (''), was activated by the keyboard or an assistive technology. */
    activated(id) {
        const event = Clutter.get_current_event();
        this.desktop.tap(this, id, event ? event.get_time() : Clutter.CURRENT_TIME);
    }

    /**
     * The keys of a focused widget (or of a link, button or toggle in it):
     * Tab and Shift+Tab go through the widget's links, buttons and toggles
     * too, Menu or Shift+F10 open its menu, Ctrl and an arrow move it, Escape
     * gives the keyboard back to the windows.
     */
    onKey(event) {
        const symbol = event.get_key_symbol();
        const state = event.get_state();
        if (symbol === Clutter.KEY_Tab || symbol === Clutter.KEY_ISO_Left_Tab) {
            const backward = symbol === Clutter.KEY_ISO_Left_Tab || (state & Clutter.ModifierType.SHIFT_MASK) !== 0;
            return this.desktop.tab(this, backward) ? Clutter.EVENT_STOP : Clutter.EVENT_PROPAGATE;
        }
        if (symbol === Clutter.KEY_Menu || (symbol === Clutter.KEY_F10 && state & Clutter.ModifierType.SHIFT_MASK)) {
            const [x, y] = this.frame.get_transformed_position();
            this.desktop.menu.open(this, x + this.size[0] / 2, y + this.size[1] / 2);
            return Clutter.EVENT_STOP;
        }
        if (symbol in ARROWS && state & Clutter.ModifierType.CONTROL_MASK) {
            const [dx, dy] = ARROWS[symbol];
            const [x, y] = this.frame.get_position();
            this.desktop.keep(this.id, this.size, [x + dx * KEYBOARD_STEP, y + dy * KEYBOARD_STEP]);
            return Clutter.EVENT_STOP;
        }
        if (symbol === Clutter.KEY_Escape) {
            this.desktop.shell.unfocus();
            return Clutter.EVENT_STOP;
        }
        return Clutter.EVENT_PROPAGATE;
    }

    /** Shows `text` over the widget for a few seconds (unless it is gone meanwhile). */
    feedback(text) {
        if (!this.gone)
            this.notice.show(text);
    }

    destroy() {
        this.gone = true;
        this.frame.destroy();
    }
}

/**
 * The desktop: `shell` is what the entry point gives of GNOME Shell (see shell.js):
 *   layer            a Clutter.Actor below every window (the wallpaper's layer)
 *   settings         the extension's Gio.Settings, or null (nothing is kept then)
 *   workAreas()      {areas, primary}: each monitor's work area {x, y, width, height}, the primary's index
 *   onLayoutChanged(callback) → a function that stops calling it: monitors or work areas changed
 *   launchToken(appId, time) → {token, withdraw()}: an activation token the shell mints for
 *                    the app ('' when none), and what ends the startup the shell then
 *                    waits for when the app is not to show a window
 *   contextMenu(), backgroundMenus(decorate), menuPoint(), PopupMenu, notify(title, body):
 *                    the menus (see menus.js)
 *   addFocusGroup(actor, name, icon, focus), addKeybinding(key, handler), keepKeyboard(actor) → a
 *                    function that stops it, unfocus(): the keyboard
 *   log(message)
 * `mirror` is the Mirror it follows (made for it when null: on `bus`, a
 * Gio.DBusConnection, or the session bus when null too).
 */
export class Desktop {
    constructor(shell, {bus = null, mirror = null} = {}) {
        this.shell = shell;
        this.widgets = new Map();
        this.dragging = null;
        this.destroyed = false;
        this.container = new St.Widget({name: 'widgethost-desktop', x_expand: true, y_expand: true});
        shell.layer.add_child(this.container);
        this.stopLayout = shell.onLayoutChanged(() => this.layout());
        this.interface = null;
        this.dark = false;
        const schema = Gio.SettingsSchemaSource.get_default()?.lookup(INTERFACE_SCHEMA, true);
        if (schema?.has_key('color-scheme')) {
            this.interface = new Gio.Settings({schema_id: INTERFACE_SCHEMA});
            this.dark = this.interface.get_string('color-scheme') === 'prefer-dark';
            this.interfaceSignal = this.interface.connect('changed::color-scheme', () => {
                this.dark = this.interface.get_string('color-scheme') === 'prefer-dark';
                this.widgets.forEach(w => w.refresh());
            });
        }
        // A mirror given is shared (with the top bar) and stays the giver's to destroy.
        this.ownMirror = mirror === null;
        this.mirror = mirror ?? new Mirror({bus, log: message => shell.log(message)});
        this.menu = new WidgetMenu(shell, this.mirror);
        // The extension's own settings: where dragged widgets sit, whether widgets show.
        this.settings = shell.settings;
        this.positions = {};
        this.settingsSignals = [];
        if (this.settings !== null) {
            const follow = (key, handler) => this.settingsSignals.push(this.settings.connect(`changed::${key}`, handler));
            follow(POSITIONS, () => this.readPositions());
            follow(SHOW_WIDGETS, () => this.syncShown());
            this.readPositions();
            this.syncShown();
        }
        const listener = {
            added: (kind, path, proxy) => kind === 'widget' && this.add(path, proxy),
            changed: (kind, path, _proxy, names) => {
                if (kind === 'widget' && this.widgets.has(path) && (names.has('Content') || names.has('Configuration')))
                    this.widgets.get(path).refresh();
            },
            removed: (kind, path) => kind === 'widget' && this.remove(path),
        };
        // "Add Widget" in the desktop's own menu places the widget where that menu opened.
        this.stopBackgroundMenus = shell.backgroundMenus(menu => {
            const add = new AddWidgetMenu(shell, this.mirror, menu, {
                anchor: () => shell.menuPoint(),
                placed: (path, family, point) => this.keep(path.slice(path.lastIndexOf('/') + 1),
                    FAMILY_SIZES[family] ?? FAMILY_SIZES.systemSmall, point),
            });
            const separator = new shell.PopupMenu.PopupSeparatorMenuItem();
            menu.addMenuItem(add.item, 0);
            menu.addMenuItem(separator, 1);
            return () => {
                add.destroy();
                separator.destroy();
            };
        });
        // The keyboard's ways here: Ctrl+Alt+Tab lists the widgets, and the shortcut focuses them.
        this.stopFocusGroup = shell.addFocusGroup(this.container, 'Desktop Widgets', 'view-grid-symbolic', () => this.focus());
        this.stopKeybinding = shell.addKeybinding(FOCUS_WIDGETS, () => this.focus());
        // A tap starts the app: the keyboard stays on the widget meanwhile, so the next key (Tab) is not lost.
        this.stopKeepingKeyboard = shell.keepKeyboard(this.container);
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
        this.menu.forget(widget);
        if (this.dragging === widget)
            this.dragging = null;
        // Removed by the host (not gone with it, when it stops): its place is forgotten too.
        if (this.mirror.hostRunning && Object.hasOwn(this.positions, widget.id)) {
            const {[widget.id]: _gone, ...others} = this.positions;
            this.writePositions(others);
        }
        widget.destroy();
        this.layout();
    }

    /** The widgets in the order the host placed them. */
    ordered() {
        return [...this.widgets.values()].sort((a, b) => byPlacement(a.id, b.id));
    }

    layout() {
        const {areas, primary} = this.shell.workAreas();
        const widgets = this.ordered();
        const places = arrange(widgets.map(w => ({id: w.id, size: w.size})), this.positions, areas, primary);
        for (const widget of widgets) {
            if (widget !== this.dragging && places.has(widget.id))
                widget.frame.set_position(...places.get(widget.id));
        }
        // Tab goes from widget to widget as they are read: top to bottom, left to right.
        const byId = new Map(widgets.map(w => [w.id, w]));
        readingOrder(places).forEach((id, index) => this.container.set_child_at_index(byId.get(id).frame, index));
    }

    readPositions() {
        this.positions = savedPositions(this.settings.get_value(POSITIONS).recursiveUnpack());
        this.layout();
    }

    writePositions(positions) {
        this.positions = positions;
        this.settings?.set_value(POSITIONS, new GLib.Variant('a{s(iii)}', positions));
    }

    syncShown() {
        this.container.visible = this.settings.get_boolean(SHOW_WIDGETS);
        if (!this.container.visible)
            this.menu.forget(this.menu.widget);
    }

    dragBegin(widget) {
        this.dragging = widget;
        widget.frame.add_style_class_name('widgethost-dragging');
        this.container.set_child_above_sibling(widget.frame, null);
    }

    /** `widget` was dropped with its top left at x, y: it stays there. */
    dragEnd(widget, x, y) {
        if (this.dragging === widget)
            this.dragging = null;
        widget.frame.remove_style_class_name('widgethost-dragging');
        if (this.widgets.get(widget.path) === widget)
            this.keep(widget.id, widget.size, [x, y]);
    }

    /**
     * Keeps the widget `id` (of `size`) with its top left at the stage point
     * `place`, clamped into the work area of the monitor it is on: dropped
     * there, moved there with the keyboard, or added there from the desktop's menu.
     */
    keep(id, size, place) {
        const {areas, primary} = this.shell.workAreas();
        const saved = toSaved(place, size, areas, primary);
        if (saved !== null)
            this.writePositions({...this.positions, [id]: saved});
        this.layout();
    }

    /** Gives the keyboard focus to the first widget in reading order; Tab and the arrows go on from there. */
    focus() {
        if (this.destroyed || !this.container.visible)
            return;
        const first = this.container.get_children().find(frame => frame.visible && frame.can_focus);
        first?.grab_key_focus();
    }

    /**
     * Tab (or Shift+Tab when `backward`) from `widget` or from inside it. St
     * moves the focus from a focusable actor to its siblings, never into it:
     * here it goes from a widget into its own links, buttons and toggles, and
     * from the last of them to the next widget (backwards, from a widget to
     * the previous widget's last one). Returns whether the focus moved.
     */
    tab(widget, backward) {
        const focused = this.container.get_stage()?.get_key_focus() ?? null;
        const inside = focused !== widget.frame && widget.body.contains(focused);
        if (!backward) {
            return widget.body.navigate_focus(inside ? focused : null, St.DirectionType.TAB_FORWARD, false)
                || this.container.navigate_focus(widget.frame, St.DirectionType.TAB_FORWARD, true);
        }
        if (inside) {
            if (!widget.body.navigate_focus(focused, St.DirectionType.TAB_BACKWARD, false))
                widget.frame.grab_key_focus();
            return true;
        }
        if (!this.container.navigate_focus(widget.frame, St.DirectionType.TAB_BACKWARD, true))
            return false;
        const previous = [...this.widgets.values()].find(w => w.frame.has_key_focus());
        previous?.body.navigate_focus(null, St.DirectionType.TAB_BACKWARD, false);
        return true;
    }

    /** Reports a tap on `widget`'s element `elementId` with a token minted for its app at `time`. */
    tap(widget, elementId, time) {
        reportTap(this.shell, widget.proxy, 's', [elementId], widget.appId, time, text => widget.feedback(text));
    }

    destroy() {
        this.destroyed = true;
        this.stopListening();
        this.stopKeybinding();
        this.stopKeepingKeyboard();
        this.stopFocusGroup();
        this.stopBackgroundMenus();
        this.menu.destroy();
        if (this.ownMirror)
            this.mirror.destroy();
        this.stopLayout();
        if (this.interface !== null)
            this.interface.disconnect(this.interfaceSignal);
        this.settingsSignals.forEach(id => this.settings.disconnect(id));
        this.widgets.forEach(w => w.destroy());
        this.widgets.clear();
        this.container.destroy();
    }
}
