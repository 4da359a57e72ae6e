// The rendering vocabulary (docs/vocabulary.md): view-tree elements drawn as
// St and Clutter actors, as renderers/gtk/widgetboard/vocabulary.py draws
// them in GTK. Its types, keys, defaults, roles and family sizes are the
// declaration's (vocabulary/vocabulary.json), which install lays out as the
// module lib/declaration.js: the shell reads no file for it.
//
// Every element becomes one actor. An element with an id is reactive and
// remembers the id (a tap reports the innermost one under the pointer); link,
// button and toggle become St.Buttons with their accessible role and name, so
// the keyboard and assistive technologies reach them.
//
// This module imports nothing from GNOME Shell.
import Atk from 'gi://Atk';
import Clutter from 'gi://Clutter';
import GLib from 'gi://GLib';
import Gio from 'gi://Gio';
import St from 'gi://St';

import {DECLARATION} from './declaration.js';

export {DECLARATION};

/** Each family's size in logical pixels, in the proportions of Apple's widget families. */
export const FAMILY_SIZES = Object.fromEntries(Object.entries(DECLARATION.families).map(([name, family]) => [name, family.size]));

/** Families drawn in one colour, as the accessory families are on a lock screen. */
export const MONOCHROME = new Set(Object.keys(DECLARATION.families).filter(name => DECLARATION.families[name].monochrome));

export const TYPES = new Set(Object.keys(DECLARATION.types));

export const TAPPABLE = new Set(Object.keys(DECLARATION.types).filter(type => DECLARATION.types[type].tappable));

/** The accessible role of each type that has one, and the widget's (`widget`). */
export const ROLES = Object.fromEntries([['widget', DECLARATION.widget.role],
    ...Object.entries(DECLARATION.types).filter(([, spec]) => spec.role).map(([type, spec]) => [type, spec.role])]
    .map(([name, role]) => [name, Atk.role_for_name(role)]));

/** The CSS weight of each font weight's name. */
const FONT_WEIGHTS = Object.fromEntries(DECLARATION.keys.fontWeight.choices);

const PLACES = {
    start: Clutter.ActorAlign.START, center: Clutter.ActorAlign.CENTER,
    end: Clutter.ActorAlign.END, fill: Clutter.ActorAlign.FILL,
};

/** Where each alignment's name puts a child across its stack. */
const ALIGN = Object.fromEntries(DECLARATION.keys.alignment.choices.map(([name, place]) => [name, PLACES[place]]));

/** The declared default of `key` on an element of type `type` (its own key's, else the common key's). */
export function defaultOf(type, key) {
    return (DECLARATION.types[type]?.keys[key] ?? DECLARATION.keys[key])?.default ?? null;
}

// The colours the lint accepts: a CSS name, #rgb, #rgba, #rrggbb, #rrggbbaa, rgb(…) or rgba(…).
const COLOUR = /^(#([0-9a-fA-F]{3,4}|[0-9a-fA-F]{6}|[0-9a-fA-F]{8})|[a-zA-Z]+|rgba?\([0-9., %]+\))$/;

// The CSS colour names St does not know by itself are looked up here (the
// common ones; any other name is left to St, which knows the X11 names).
const NAMES = {
    transparent: 'rgba(0,0,0,0)', orange: '#ffa500', purple: '#800080', pink: '#ffc0cb', teal: '#008080',
    indigo: '#4b0082', gray: '#808080', grey: '#808080', brown: '#a52a2a', cyan: '#00ffff', magenta: '#ff00ff',
    yellow: '#ffff00', red: '#ff0000', green: '#008000', blue: '#0000ff', black: '#000000', white: '#ffffff',
    lime: '#00ff00', navy: '#000080', maroon: '#800000', olive: '#808000', silver: '#c0c0c0', aqua: '#00ffff',
    fuchsia: '#ff00ff', gold: '#ffd700', coral: '#ff7f50', salmon: '#fa8072', crimson: '#dc143c',
    mint: '#3eb489', lightgray: '#d3d3d3', darkgray: '#a9a9a9',
};

/** A CSS colour St reads, from a colour value: a name or #hex, or {light, dark}; null when none. */
export function colour(value, dark) {
    if (value !== null && typeof value === 'object' && !Array.isArray(value))
        value = dark ? value.dark ?? value.light : value.light;
    if (typeof value !== 'string' || !COLOUR.test(value))
        return null;
    if (value.startsWith('#')) {
        let hex = value.slice(1);
        if (hex.length <= 4)
            hex = [...hex].map(c => c + c).join('');
        const [r, g, b] = [0, 2, 4].map(i => parseInt(hex.slice(i, i + 2), 16));
        const a = hex.length === 8 ? parseInt(hex.slice(6, 8), 16) / 255 : 1;
        return `rgba(${r},${g},${b},${+a.toFixed(3)})`;
    }
    return NAMES[value.toLowerCase()] ?? value;
}

/** A finite number, or `fallback`. */
export function number(value, fallback = null) {
    return typeof value === 'number' && Number.isFinite(value) ? value : fallback;
}

/**
 * An element's text: "text", or the value of "bind" ("state.KEY" or
 * "attributes.KEY") put into "format" at "{}" (docs/vocabulary.md#binding).
 */
export function boundText(element, bindings = null) {
    const bind = element.bind;
    if (typeof bind === 'string' && bind.includes('.') && bindings) {
        const dot = bind.indexOf('.');
        const values = bindings[bind.slice(0, dot)] ?? {};
        const key = bind.slice(dot + 1);
        if (key in values) {
            const value = values[key];
            const text = typeof value === 'string' ? value : JSON.stringify(value);
            const format = element.format;
            return typeof format === 'string' && format.includes('{}') ? format.replace('{}', text) : text;
        }
    }
    return typeof element.text === 'string' ? element.text : '';
}

/** The text an element shows, its descendants' joined by spaces. */
export function visibleText(element, bindings = null) {
    if (element === null || typeof element !== 'object')
        return '';
    const parts = [];
    if (element.type === 'text')
        parts.push(boundText(element, bindings));
    for (const child of children(element))
        parts.push(visibleText(child, bindings));
    return parts.filter(p => p).join(' ');
}

/** An element is named by its label, else its visible text, else its id (docs/vocabulary.md#accessible-names). */
export function accessibleName(element, bindings = null) {
    if (typeof element?.label === 'string' && element.label)
        return element.label;
    const text = visibleText(element, bindings);
    if (text)
        return text;
    return typeof element?.id === 'string' ? element.id : '';
}

function children(element) {
    return Array.isArray(element?.children) ? element.children.filter(c => c !== null && typeof c === 'object') : [];
}

/** An icon for an image's "src": a path, a file: URL or a data: URL; null when unreadable. */
export function iconFromSource(src) {
    try {
        if (src.startsWith('data:')) {
            const comma = src.indexOf(',');
            if (comma < 0)
                return null;
            const header = src.slice(5, comma);
            const payload = src.slice(comma + 1);
            const bytes = header.endsWith(';base64')
                ? GLib.base64_decode(payload)
                : new TextEncoder().encode(decodeURIComponent(payload));
            return Gio.BytesIcon.new(new GLib.Bytes(bytes));
        }
        if (src.startsWith('file:') || src.startsWith('/'))
            return Gio.FileIcon.new(src.startsWith('/') ? Gio.File.new_for_path(src) : Gio.File.new_for_uri(src));
    } catch (_error) {
        return null;
    }
    return null;
}

/** The fraction of a progress or gauge element: (value - min) / (max - min), in 0…1. */
export function fraction(element) {
    const value = number(element.value, defaultOf(element.type, 'value'));
    const low = number(element.min, defaultOf(element.type, 'min'));
    const high = number(element.max, defaultOf(element.type, 'max'));
    if (high <= low)
        return 0;
    return Math.min(1, Math.max(0, (value - low) / (high - low)));
}

/**
 * Draws view trees for one widget. `onActivate(elementId, button)` is called
 * when a link, button or toggle is clicked, by the pointer, the keyboard or
 * an assistive technology, with the element's own id. `cornerRadius` is
 * the widget's: a colour filling the widget is rounded as the widget is.
 */
export class Renderer {
    constructor({family = 'systemSmall', dark = false, bindings = null, onActivate = () => {}, cornerRadius = 0} = {}) {
        this.family = family;
        this.cornerRadius = cornerRadius;
        this.depth = 0;
        this.dark = dark;
        this.bindings = bindings;
        this.onActivate = onActivate;
        this.monochrome = MONOCHROME.has(family);
    }

    /** The actor for a view tree (an empty one for no tree). */
    render(tree) {
        if (tree === null || typeof tree !== 'object')
            return new St.Widget();
        return this.element(tree, true);
    }

    element(element, vertical) {
        const kind = element.type;
        const make = {
            vstack: () => this.stack(element, true),
            hstack: () => this.stack(element, false),
            zstack: () => this.zstack(element),
            text: () => this.text(element),
            image: () => this.image(element),
            spacer: () => this.spacer(element, vertical),
            divider: () => this.divider(vertical),
            color: () => this.color(element),
            link: () => this.tappable(element, ROLES.link),
            button: () => this.tappable(element, ROLES.button),
            toggle: () => this.tappable(element, ROLES.toggle),
            progress: () => this.bar(element, 'progress'),
            gauge: () => this.bar(element, 'gauge'),
        }[TYPES.has(kind) ? kind : null] ?? (() => this.stack(element, true));
        this.depth++;
        const actor = make();
        this.depth--;
        this.style(actor, element);
        if (typeof element.id === 'string' && element.id) {
            actor.widgethostElementId = element.id;
            actor.reactive = true;
        }
        return actor;
    }

    /** The element's presentational keys as the actor's inline CSS. */
    style(actor, element) {
        const rules = [];
        const fg = colour(element.foreground ?? (element.type === 'text' ? element.color : null), this.dark);
        if (fg && !this.monochrome)
            rules.push(`color: ${fg};`);
        const bg = colour(element.background, this.dark);
        if (bg && !this.monochrome)
            rules.push(`background-color: ${bg};`);
        const padding = number(element.padding);
        if (padding !== null)
            rules.push(`padding: ${Math.max(0, padding)}px;`);
        const radius = number(element.cornerRadius);
        if (radius !== null)
            rules.push(`border-radius: ${Math.max(0, radius)}px;`);
        const size = number(element.fontSize);
        if (size !== null && size > 0)
            rules.push(`font-size: ${size}px;`);
        if (typeof element.fontWeight === 'string' && element.fontWeight in FONT_WEIGHTS)
            rules.push(`font-weight: ${FONT_WEIGHTS[element.fontWeight]};`);
        if (rules.length)
            actor.style = [actor.style ?? '', ...rules].join(' ').trim();
        const opacity = number(element.opacity);
        if (opacity !== null)
            actor.opacity = Math.round(255 * Math.min(1, Math.max(0, opacity)));
    }

    stack(element, vertical) {
        const box = new St.BoxLayout({vertical, x_align: Clutter.ActorAlign.CENTER, y_align: Clutter.ActorAlign.CENTER});
        box.style = `spacing: ${Math.max(0, number(element.spacing, defaultOf(element.type, 'spacing')))}px;`;
        const cross = ALIGN[element.alignment] ?? Clutter.ActorAlign.CENTER;
        const items = children(element);
        const actors = items.map(child => this.element(child, vertical));
        for (const actor of actors) {
            // A stack a spacer stretches across this one fills it across, as a divider does.
            const stretched = vertical ? actor.widgethostPushesX : actor.widgethostPushesY;
            if (!actor.widgethostFillsAcross && !stretched) {
                if (vertical)
                    actor.x_align = cross;
                else
                    actor.y_align = cross;
            }
            box.add_child(actor);
        }
        // A stack takes the room its content needs, centred as SwiftUI centres
        // it, and the whole length of an axis along which a spacer pushes its
        // content apart: its own spacer, or one in a stack inside it.
        const spacer = items.some(c => c.type === 'spacer');
        if ((spacer && !vertical) || actors.some(a => a.widgethostPushesX)) {
            box.x_expand = true;
            box.x_align = Clutter.ActorAlign.FILL;
            box.widgethostPushesX = true;
        }
        if ((spacer && vertical) || actors.some(a => a.widgethostPushesY)) {
            box.y_expand = true;
            box.y_align = Clutter.ActorAlign.FILL;
            box.widgethostPushesY = true;
        }
        return box;
    }

    zstack(element) {
        const align = ALIGN[element.alignment] ?? Clutter.ActorAlign.CENTER;
        const layer = new St.Widget({
            layout_manager: new Clutter.BinLayout(), x_expand: true, y_expand: true,
            x_align: Clutter.ActorAlign.FILL, y_align: Clutter.ActorAlign.FILL,
        });
        children(element).forEach((child, index) => {
            const actor = this.element(child, true);
            if (index > 0 && !actor.widgethostFills) {
                actor.x_align = align;
                actor.y_align = align;
            }
            layer.add_child(actor);
        });
        return layer;
    }

    text(element) {
        const label = new St.Label({text: boundText(element, this.bindings), style_class: 'widgethost-text'});
        const text = label.clutter_text;
        const lines = number(element.lineLimit);
        text.line_alignment = 1; // Pango.Alignment.CENTER
        text.ellipsize = 3; // Pango.EllipsizeMode.END
        if (lines !== 1) {
            text.line_wrap = true;
            text.line_wrap_mode = 2; // Pango.WrapMode.WORD_CHAR
        }
        return label;
    }

    image(element) {
        const size = Math.max(1, Math.round(number(element.size, defaultOf('image', 'size'))));
        const gicon = typeof element.src === 'string' ? iconFromSource(element.src) : null;
        const icon = new St.Icon({icon_size: size, x_align: Clutter.ActorAlign.CENTER, y_align: Clutter.ActorAlign.CENTER});
        if (gicon !== null)
            icon.gicon = gicon;
        else
            icon.icon_name = typeof element.icon === 'string' && element.icon ? element.icon : 'image-missing';
        const name = accessibleName(element, this.bindings);
        if (name) {
            icon.accessible_name = name;
            icon.accessible_role = ROLES.image;
        }
        return icon;
    }

    spacer(element, vertical) {
        const length = Math.max(0, number(element.minLength, defaultOf('spacer', 'minLength')));
        const spacer = new St.Widget(vertical
            ? {y_expand: true, height: length}
            : {x_expand: true, width: length});
        spacer.widgethostFillsAcross = false;
        return spacer;
    }

    divider(vertical) {
        const line = new St.Widget({style_class: 'widgethost-divider'});
        if (vertical) {
            line.set_height(1);
            line.x_expand = true;
            line.x_align = Clutter.ActorAlign.FILL;
        } else {
            line.set_width(1);
            line.y_expand = true;
            line.y_align = Clutter.ActorAlign.FILL;
        }
        line.widgethostFillsAcross = true;
        return line;
    }

    color(element) {
        // The colour fills its parent; its children sit on it, centred as in a vstack.
        const fill = new St.Widget({
            layout_manager: new Clutter.BinLayout(), x_expand: true, y_expand: true,
            x_align: Clutter.ActorAlign.FILL, y_align: Clutter.ActorAlign.FILL,
        });
        const paint = colour(element.color, this.dark);
        // A colour that fills the whole widget (the root, or a child of it) follows its rounded corners.
        const corners = this.depth <= 2 && this.cornerRadius > 0 ? ` border-radius: ${this.cornerRadius}px;` : '';
        if (paint && !this.monochrome)
            fill.style = `background-color: ${paint};${corners}`;
        if (children(element).length)
            fill.add_child(this.stack(element, true));
        fill.widgethostFills = true;
        fill.widgethostFillsAcross = true;
        return fill;
    }

    bar(element, kind) {
        const value = fraction(element);
        const bar = new St.DrawingArea({
            style_class: `widgethost-${kind}`, x_expand: true, y_align: Clutter.ActorAlign.CENTER,
            style: 'min-width: 100px;',
        });
        bar.set_height(kind === 'gauge' ? 8 : 6);
        bar.widgethostFillsAcross = true;
        bar.connect('repaint', area => {
            const cr = area.get_context();
            const [width, height] = area.get_surface_size();
            const radius = height / 2;
            const rounded = w => {
                cr.newSubPath();
                cr.arc(radius, radius, radius, Math.PI / 2, 3 * Math.PI / 2);
                cr.arc(Math.max(radius, w - radius), radius, radius, -Math.PI / 2, Math.PI / 2);
                cr.closePath();
            };
            const trough = this.dark ? [1, 1, 1, 0.18] : [0, 0, 0, 0.12];
            cr.setSourceRGBA(...trough);
            rounded(width);
            cr.fill();
            if (value > 0) {
                const accent = this.monochrome ? [0.5, 0.5, 0.5, 1] : kind === 'gauge' ? [0.2, 0.78, 0.35, 1] : [0.04, 0.52, 1, 1];
                cr.setSourceRGBA(...accent);
                rounded(Math.max(height, width * value));
                cr.fill();
            }
            cr.$dispose();
        });
        const name = accessibleName(element, this.bindings);
        bar.accessible_role = ROLES[kind];
        bar.accessible_name = name || `${Math.round(value * 100)}%`;
        return bar;
    }

    tappable(element, role) {
        const button = new St.Button({
            style_class: `widgethost-${element.type}`, can_focus: true, reactive: true, track_hover: true,
            x_align: Clutter.ActorAlign.CENTER, y_align: Clutter.ActorAlign.CENTER,
        });
        const items = children(element);
        if (items.length)
            button.set_child(this.stack({spacing: element.spacing, children: items}, true));
        else
            button.set_child(new St.Label({text: accessibleName(element, this.bindings), style_class: 'widgethost-text'}));
        button.accessible_role = role;
        button.accessible_name = accessibleName(element, this.bindings);
        if (element.type === 'toggle') {
            // A toggle shows the state its view tree gives: a click reports the
            // tap, and the new state is drawn once the app's new tree arrives.
            button.toggle_mode = true;
            button.checked = element.isOn === true;
            if (element.isOn === true)
                button.add_style_class_name('widgethost-on');
        }
        const ident = typeof element.id === 'string' ? element.id : '';
        button.connect('clicked', () => {
            if (element.type === 'toggle')
                button.checked = element.isOn === true;
            this.onActivate(ident, button);
        });
        return button;
    }
}

/** The id of the innermost element with an id that contains `actor`, up to `stop`; '' when none. */
export function elementIdAt(actor, stop) {
    while (actor !== null && actor !== stop) {
        if (actor.widgethostElementId)
            return actor.widgethostElementId;
        actor = actor.get_parent();
    }
    return '';
}
