// Live Activities in the top bar: the most relevant one as a pill right of the
// clock, showing its compactLeading and compactTrailing presentations (its
// minimal presentation when the top bar has no room for them, as a phone's
// island does). A click on the pill taps what it shows; its expanded
// presentation opens from the pill as a popup menu of the shell (a secondary
// click, or Menu or Down on the keyboard), where its links, buttons and
// toggles work as they do on a widget.
//
// This module imports nothing from GNOME Shell: the entry point hands it what
// it needs of the shell (see `Bar`'s constructor).
import Atk from 'gi://Atk';
import Clutter from 'gi://Clutter';
import GLib from 'gi://GLib';
import St from 'gi://St';

import {byPlacement, property} from './mirror.js';
import {Feedback, PressTracker, reportTap} from './taps.js';
import {Renderer, accessibleName, elementIdAt} from './vocabulary.js';

/** The extension's GSettings key that shows or hides them. */
export const SHOW_ACTIVITIES = 'show-live-activities';
const DIMMED = 150;

/**
 * Most relevant first, as the host's LiveActivities.Order lists them: by
 * relevance (highest first), then the earlier start, then the lower id.
 * Each of `a` and `b` is {relevance, start, id}.
 */
export function byRelevance(a, b) {
    return b.relevance - a.relevance || a.start - b.start || byPlacement(a.id, b.id);
}

/** What a LiveActivity proxy holds, as the bar draws it. */
export function activityOf(path, proxy) {
    let content = {};
    try {
        content = JSON.parse(property(proxy, 'Content', '') || '{}');
    } catch (_error) {
        content = {};
    }
    return {
        path, proxy,
        id: property(proxy, 'Id', path.slice(path.lastIndexOf('/') + 1)),
        appId: property(proxy, 'AppId', ''),
        relevance: property(proxy, 'Relevance', 0),
        start: property(proxy, 'StartDate', 0),
        state: property(proxy, 'State', 'active'),
        content: content !== null && typeof content === 'object' ? content : {},
        bindings: {state: property(proxy, 'ContentState', {}), attributes: property(proxy, 'Attributes', {})},
    };
}

/** The presentations a pill shows in each of its forms. */
export const FORMS = {compact: ['compactLeading', 'compactTrailing'], minimal: ['minimal']};

/** The name of a pill: its presentations' accessible names, leading then trailing. */
export function pillName(activity, mode) {
    const names = FORMS[mode].map(p => accessibleName(activity.content[p], activity.bindings)).filter(n => n);
    return names.join(' ') || activity.appId || activity.id;
}

/**
 * Whether the top bar has room for a pill's compact form. `bar` is what the
 * shell's `barWidths()` gives: the shell centres the centre box at its natural
 * width and gives each side what is left beside it, so the compact form fits
 * when the centre box with it in place of the form shown now (`shown` and
 * `compact` wide) leaves the wider side its whole width on both sides. A top
 * bar not laid out yet (no width) has room.
 */
export function compactFits(bar, shown, compact) {
    return bar.width <= 0 || bar.centre - shown + compact + 2 * Math.max(bar.left, bar.right) <= bar.width;
}

/**
 * Nothing in a pill takes the pointer but the pill itself: the pointer is on
 * the pill, never on an actor that a redraw destroys under it.
 */
function unreactive(actor) {
    actor.reactive = false;
    actor.get_children().forEach(unreactive);
}

/** The innermost actor under `root` that holds the stage point x, y, or null. */
export function actorAt(root, x, y) {
    const [left, top] = root.get_transformed_position();
    const [width, height] = root.get_transformed_size();
    if (!root.visible || x < left || y < top || x >= left + width || y >= top + height)
        return null;
    for (const child of root.get_children().reverse()) {
        const inner = actorAt(child, x, y);
        if (inner !== null)
            return inner;
    }
    return root;
}

/** The pill in the top bar and the popup menu with its expanded presentation. */
class Pill {
    constructor(bar) {
        this.bar = bar;
        this.activity = null;
        this.mode = 'compact';
        this.press = null;
        this.button = bar.shell.panelButton('Live Activity');
        this.button.accessible_role = Atk.Role.PUSH_BUTTON;
        this.button.add_style_class_name('widgethost-pill-button');
        this.box = new St.BoxLayout({style_class: 'widgethost-pill', y_align: Clutter.ActorAlign.CENTER});
        this.button.add_child(this.box);
        // Both forms are drawn and one is hidden, so that the compact one's width is known while the minimal one shows.
        this.forms = Object.fromEntries(Object.keys(FORMS).map(mode => {
            const form = new St.BoxLayout({style_class: 'widgethost-pill-form', y_align: Clutter.ActorAlign.CENTER});
            this.box.add_child(form);
            return [mode, {box: form, sides: []}];
        }));
        // A primary click taps the pill; a secondary click opens the expanded presentation.
        this.button.connect('captured-event', (_actor, event) => this.onEvent(event));
        this.button.connect('key-press-event', (_actor, event) => this.onKey(event));
        this.notice = new Feedback(this.box, {style_class: 'widgethost-pill-feedback', y_align: Clutter.ActorAlign.CENTER});

        this.expanded = new St.Button({
            style_class: 'widgethost-expanded', reactive: true, can_focus: true, track_hover: true,
            accessible_role: Atk.Role.PUSH_BUTTON, x_expand: true,
        });
        this.expandedBody = new St.Widget({layout_manager: new Clutter.BinLayout(), x_expand: true, y_expand: true});
        this.expanded.set_child(this.expandedBody);
        this.presses = new PressTracker(this.expanded);
        this.expanded.connect('clicked', () => this.expandedActivated('', this.expanded));
        this.button.menu.box.add_child(this.expanded);
        bar.shell.addToPanel('widgethost-activity', this.button, 0);
    }

    /** Shows `activity` in its compact or minimal form, whichever `mode` is now. */
    show(activity) {
        this.activity = activity;
        const renderer = () => new Renderer({
            family: 'systemSmall', dark: true, bindings: activity.bindings,
            onActivate: () => {},  // links and controls are not honoured here: the pill's tap is
        });
        for (const [mode, form] of Object.entries(this.forms)) {
            form.box.destroy_all_children();
            form.sides = FORMS[mode].map(presentation => {
                const actor = renderer().render(activity.content[presentation] ?? null);
                actor.y_align = Clutter.ActorAlign.CENTER;
                unreactive(actor);
                form.box.add_child(actor);
                return {presentation, actor};
            });
        }
        this.setMode(this.mode);
        // A stale or ended activity is drawn dimmed: its content is out of date, or final.
        this.box.opacity = activity.state === 'stale' || activity.state === 'ended' ? DIMMED : 255;

        const tree = activity.content.expanded ?? null;
        const expanded = new Renderer({
            family: 'systemMedium', dark: true, bindings: activity.bindings,
            onActivate: (id, button) => this.expandedActivated(id, button),
        });
        this.expandedBody.destroy_all_children();
        const root = expanded.render(tree);
        root.x_expand = true;
        this.expandedBody.add_child(root);
        this.expanded.accessible_name = accessibleName(tree, activity.bindings) || pillName(activity, 'compact');
    }

    /** Shows the compact form ('compact') or the minimal one ('minimal'). */
    setMode(mode) {
        this.mode = mode;
        for (const [each, form] of Object.entries(this.forms))
            form.box.visible = each === mode;
        this.button.accessible_name = pillName(this.activity, mode);
    }

    /** The natural widths of the form shown now and of the compact form. */
    widths() {
        const natural = mode => this.forms[mode].box.get_preferred_width(-1)[1];
        return {shown: natural(this.mode), compact: natural('compact')};
    }

    onEvent(event) {
        const type = event.type();
        if (type === Clutter.EventType.BUTTON_PRESS || type === Clutter.EventType.TOUCH_BEGIN) {
            const button = type === Clutter.EventType.BUTTON_PRESS ? event.get_button() : 1;
            if (button === 1) {
                this.press = {source: actorAt(this.box, ...event.get_coords())};
            } else if (button === 3) {
                this.press = null;
                this.button.menu.toggle();
            }
            return Clutter.EVENT_STOP;
        }
        if (type === Clutter.EventType.BUTTON_RELEASE || type === Clutter.EventType.TOUCH_END) {
            const press = this.press;
            this.press = null;
            if (press !== null && (type === Clutter.EventType.TOUCH_END || event.get_button() === 1))
                this.tapped(press.source, event.get_time());
            return Clutter.EVENT_STOP;
        }
        return Clutter.EVENT_PROPAGATE;
    }

    onKey(event) {
        const symbol = event.get_key_symbol();
        if ([Clutter.KEY_Return, Clutter.KEY_KP_Enter, Clutter.KEY_space].includes(symbol)) {
            this.tapped(null, event.get_time());
            return Clutter.EVENT_STOP;
        }
        if ([Clutter.KEY_Menu, Clutter.KEY_Down].includes(symbol)) {
            this.button.menu.open();
            this.button.menu.actor.navigate_focus(null, St.DirectionType.TAB_FORWARD, false);
            return Clutter.EVENT_STOP;
        }
        return Clutter.EVENT_PROPAGATE;
    }

    /** The pill was clicked where `source` is (null: by the keyboard, or off its content): a tap on the side there. */
    tapped(source, time) {
        if (this.activity === null)
            return;
        const sides = this.forms[this.mode].sides;
        const side = sides.find(s => source !== null && (s.actor === source || s.actor.contains(source))) ?? sides[0];
        const id = source !== null && side ? elementIdAt(source, this.button) : '';
        this.bar.tap(this, side?.presentation ?? 'compactLeading', id, time);
    }

    /** A link, button or toggle of the expanded presentation (or its background) was clicked. */
    expandedActivated(ownId, button) {
        const [id, time] = this.presses.pick(ownId, button);
        this.button.menu.close();
        if (this.activity !== null)
            this.bar.tap(this, 'expanded', id, time);
    }

    /** Shows `text` in the pill for a few seconds. */
    feedback(text) {
        this.notice.show(text);
    }

    destroy() {
        this.button.destroy();
    }
}

/**
 * The top bar's Live Activities. `shell` is what the entry point gives of GNOME Shell:
 *   panelButton(name) → a new PanelMenu.Button with a popup menu
 *   addToPanel(role, button, index) puts it in the top bar, `index` places right of the clock
 *   barWidths()      the top bar's width and its boxes' natural widths
 *   onBarAllocated(callback) calls `callback` when the top bar is laid out anew; returns what stops it
 *   launchToken(appId, time) and log(message), as for the desktop
 *   settings         the extension's Gio.Settings (show-live-activities), or null
 * `mirror` is the Mirror it follows.
 */
export class Bar {
    constructor(shell, {mirror}) {
        this.shell = shell;
        this.activities = new Map();
        this.pill = null;
        // Whether the compact form fits is looked at again each time the top bar is laid out
        // anew, once that is done: a form changed while the shell lays the bar out is not laid out.
        this.refit = 0;
        this.stopAllocated = shell.onBarAllocated(() => {
            this.refit ||= GLib.idle_add(GLib.PRIORITY_DEFAULT, () => {
                this.refit = 0;
                this.fit();
                return GLib.SOURCE_REMOVE;
            });
        });
        // The extension's setting: whether Live Activities show in the top bar at all.
        this.settings = shell.settings ?? null;
        this.enabled = this.settings?.get_boolean(SHOW_ACTIVITIES) ?? true;
        this.settingsSignal = this.settings?.connect(`changed::${SHOW_ACTIVITIES}`, () => {
            this.enabled = this.settings.get_boolean(SHOW_ACTIVITIES);
            this.update();
        });
        this.stopListening = mirror.listen({
            added: (kind, path, proxy) => {
                if (kind === 'activity') {
                    this.activities.set(path, proxy);
                    this.update();
                }
            },
            changed: (kind, path) => kind === 'activity' && this.activities.has(path) && this.update(),
            removed: (kind, path) => kind === 'activity' && this.activities.delete(path) && this.update(),
        });
    }

    /** The activity the bar shows: the most relevant, or null. */
    shown() {
        return [...this.activities].map(([path, proxy]) => activityOf(path, proxy)).sort(byRelevance)[0] ?? null;
    }

    update() {
        const shown = this.enabled ? this.shown() : null;
        if (shown === null) {
            this.pill?.destroy();
            this.pill = null;
            return;
        }
        this.pill ??= new Pill(this);
        this.pill.show(shown);
        this.fit();
    }

    /** Shows the pill's compact form if the top bar has room for it, else its minimal one. */
    fit() {
        if (this.pill === null)
            return;
        const {shown, compact} = this.pill.widths();
        const mode = compactFits(this.shell.barWidths(), shown, compact) ? 'compact' : 'minimal';
        if (mode !== this.pill.mode)
            this.pill.setMode(mode);
    }

    tap(pill, presentation, elementId, time) {
        const activity = pill.activity;
        reportTap(this.shell, activity.proxy, 'ss', [presentation, elementId], activity.appId, time, text => {
            if (this.pill === pill)
                pill.feedback(text);
        });
    }

    destroy() {
        this.stopListening();
        this.stopAllocated();
        if (this.refit)
            GLib.source_remove(this.refit);
        this.refit = 0;
        if (this.settingsSignal)
            this.settings.disconnect(this.settingsSignal);
        this.pill?.destroy();
        this.pill = null;
        this.activities.clear();
    }
}
