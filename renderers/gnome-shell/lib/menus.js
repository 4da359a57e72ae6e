// The extension's menus, in the shell's own popup menus: "Add Widget" (in the
// desktop's menu and the top bar's), a widget's own menu (Configure, Remove
// Widget) and the top bar's WidgetHost menu. Every host call is asynchronous;
// an error is shown on the widget, or as a notification when there is no
// widget to show it on, and never thrown into the shell.
//
// This module imports nothing from GNOME Shell: the shell's PopupMenu module
// comes with `shell` (see shell.js).
import GLib from 'gi://GLib';
import St from 'gi://St';

import {addWidget, configurationOptions, familyName, findKind, loadCatalogue} from './catalogue.js';
import {call, errorText} from './mirror.js';

/**
 * A menu item of `kind` (PopupMenuItem, PopupSubMenuMenuItem, …) showing
 * `text`, and named by it for assistive technologies as well (the shell's
 * items are only labelled by their label).
 */
function named(kind, text, ...args) {
    const item = new kind(text, ...args);
    item.accessible_name = text;
    return item;
}

/** An item that only says something: while loading, on an error, when empty. */
function note(PopupMenu, text) {
    const item = named(PopupMenu.PopupMenuItem, text, {reactive: false, can_focus: false});
    item.add_style_class_name('widgethost-menu-note');
    return item;
}

/** Why the host cannot answer, in a person's words. */
function hostError(mirror, error) {
    return mirror.hostRunning ? errorText(error) : 'WidgetHost is not running';
}

/**
 * "Add Widget": a submenu listing every app's widget kinds, one item per kind
 * and family ("Ranger Detail, Small") under the app's name, read afresh from
 * the host each time `parent` (the menu it is in) opens. Picking one places
 * it with AddWidget; `placed(path, family, point)` is told of the new widget,
 * with what `anchor()` said when it was picked (where the menu opened).
 */
export class AddWidgetMenu {
    constructor(shell, mirror, parent, {anchor = () => null, placed = () => {}} = {}) {
        this.shell = shell;
        this.mirror = mirror;
        this.anchor = anchor;
        this.placed = placed;
        this.generation = 0;
        this.item = named(shell.PopupMenu.PopupSubMenuMenuItem, 'Add Widget', true);
        this.item.icon.icon_name = 'list-add-symbolic';
        this.parent = parent;
        this.opened = parent.connect('open-state-changed', (_menu, open) => open && this.refresh());
        this.item.connect('destroy', () => this.disconnect());
    }

    disconnect() {
        if (this.opened)
            this.parent.disconnect(this.opened);
        this.opened = 0;
        this.generation++;
    }

    refresh() {
        const generation = ++this.generation;
        const {PopupMenu} = this.shell;
        const submenu = this.item.menu;
        submenu.removeAll();
        submenu.addMenuItem(note(PopupMenu, 'Loading…'));
        loadCatalogue(this.mirror.bus, (apps, error) => {
            if (generation !== this.generation)
                return;  // closed and opened again, or gone
            submenu.removeAll();
            if (error !== null) {
                submenu.addMenuItem(note(PopupMenu, hostError(this.mirror, error)));
                return;
            }
            if (!apps.length)
                submenu.addMenuItem(note(PopupMenu, 'No app offers widgets'));
            for (const app of apps) {
                submenu.addMenuItem(named(PopupMenu.PopupSeparatorMenuItem, app.appName));
                for (const kind of app.kinds) {
                    for (const family of kind.families) {
                        const item = named(PopupMenu.PopupMenuItem, `${kind.name}, ${familyName(family)}`);
                        item.connect('activate', () => this.add(kind, family));
                        submenu.addMenuItem(item);
                    }
                }
            }
        });
    }

    add(kind, family) {
        const point = this.anchor();
        addWidget(this.mirror.bus, kind, family, (path, error) => {
            if (error !== null)
                this.shell.notify(`Cannot add ${kind.name}`, hostError(this.mirror, error));
            else
                this.placed(path, family, point);
        });
    }

    destroy() {
        this.disconnect();
        this.item.destroy();
    }
}

/**
 * A placed widget's own menu, opened by a secondary click on it (or Menu or
 * Shift+F10 when it has the focus): "Configure" with each parameter of its
 * kind (a dynamic one's choices asked of the app with
 * GetConfigurationOptions, a plain one as a text field), and "Remove Widget".
 * One menu serves every widget of the desktop.
 */
export class WidgetMenu {
    constructor(shell, mirror) {
        this.shell = shell;
        this.mirror = mirror;
        this.popup = shell.contextMenu();
        this.popup.menu.actor.add_style_class_name('widgethost-widget-menu');
        this.widget = null;
        this.generation = 0;
    }

    /** Opens the menu of `widget` (a DesktopWidget: proxy, appId, kind, feedback()) at the stage point x, y. */
    open(widget, x, y) {
        const {PopupMenu} = this.shell;
        const menu = this.popup.menu;
        const generation = ++this.generation;
        this.widget = widget;
        menu.close();
        menu.removeAll();
        const configure = named(PopupMenu.PopupSubMenuMenuItem, 'Configure', false);
        configure.visible = false;
        menu.addMenuItem(configure);
        const remove = named(PopupMenu.PopupMenuItem, 'Remove Widget');
        remove.connect('activate', () => call(widget.proxy, 'Remove', null, (_reply, error) => {
            if (error !== null)
                widget.feedback(hostError(this.mirror, error));
        }));
        menu.addMenuItem(remove);
        loadCatalogue(this.mirror.bus, apps => {
            const kind = generation === this.generation ? findKind(apps ?? [], widget.appId, widget.kind) : null;
            if (kind === null || !kind.parameters.length)
                return;
            configure.visible = true;
            for (const parameter of kind.parameters)
                this.addParameter(configure.menu, widget, kind, parameter);
        });
        this.popup.openAt(x, y);
    }

    /** The heading of one parameter of the widget's kind and how to set it. */
    addParameter(submenu, widget, kind, parameter) {
        const {PopupMenu} = this.shell;
        submenu.addMenuItem(named(PopupMenu.PopupSeparatorMenuItem, parameter.title));
        const current = widget.configuration();
        const value = current[parameter.name]?.recursiveUnpack();
        if (!parameter.dynamic) {
            submenu.addMenuItem(this.textField(widget, parameter, typeof value === 'string' ? value : ''));
            return;
        }
        // The choices arrive later, in their own section where "Loading…" stood.
        const section = new PopupMenu.PopupMenuSection();
        section.addMenuItem(note(PopupMenu, 'Loading…'));
        submenu.addMenuItem(section);
        const generation = this.generation;
        configurationOptions(this.mirror.bus, kind, parameter.name, current, (choices, error) => {
            if (generation !== this.generation)
                return;  // the menu was built again meanwhile
            section.removeAll();
            if (error !== null)
                section.addMenuItem(note(PopupMenu, hostError(this.mirror, error)));
            for (const [id, title] of choices ?? []) {
                const item = named(PopupMenu.PopupMenuItem, title);
                item.setOrnament(id === value ? PopupMenu.Ornament.DOT : PopupMenu.Ornament.NONE);
                item.connect('activate', () => this.configure(widget, parameter.name, new GLib.Variant('s', id)));
                section.addMenuItem(item);
            }
        });
    }

    /** A text field for a plain parameter: Enter sets it. */
    textField(widget, parameter, text) {
        const item = new this.shell.PopupMenu.PopupBaseMenuItem({reactive: false, can_focus: false});
        const entry = new St.Entry({
            text, hint_text: parameter.title, can_focus: true, x_expand: true, style_class: 'widgethost-menu-entry',
            accessible_name: parameter.title,
        });
        entry.clutter_text.connect('activate', () => {
            this.configure(widget, parameter.name, new GLib.Variant('s', entry.text));
            this.popup.menu.close();
        });
        item.add_child(entry);
        return item;
    }

    /** Widget.Configure with the widget's configuration, `name` set to `value` (the other keys kept). */
    configure(widget, name, value) {
        const configuration = {...widget.configuration(), [name]: value};
        call(widget.proxy, 'Configure', new GLib.Variant('(a{sv})', [configuration]), (_reply, error) => {
            if (error !== null)
                widget.feedback(hostError(this.mirror, error));
        });
    }

    /** Closes the menu when it is `widget`'s (which went away). */
    forget(widget) {
        if (this.widget === widget) {
            this.generation++;
            this.widget = null;
            this.popup.menu.close();
        }
    }

    destroy() {
        this.generation++;
        this.popup.destroy();
    }
}

/**
 * The top bar's WidgetHost menu, an indicator left of the system menu: "Add
 * Widget", "Focus Widgets" (the keyboard's way to the desktop) and "Widget
 * Settings" (the preferences).
 */
export class Indicator {
    constructor(shell, {mirror, desktop}) {
        const {PopupMenu} = shell;
        this.button = shell.panelButton('WidgetHost');
        this.button.add_child(new St.Icon({icon_name: 'view-grid-symbolic', style_class: 'system-status-icon'}));
        const menu = this.button.menu;
        this.add = new AddWidgetMenu(shell, mirror, menu);
        menu.addMenuItem(this.add.item);
        const focus = named(PopupMenu.PopupMenuItem, 'Focus Widgets');
        // Once the menu has closed and given the keyboard back.
        focus.connect('activate', () => GLib.idle_add(GLib.PRIORITY_DEFAULT, () => {
            desktop.focus();
            return GLib.SOURCE_REMOVE;
        }));
        menu.addMenuItem(focus);
        menu.addMenuItem(new PopupMenu.PopupSeparatorMenuItem());
        const settings = named(PopupMenu.PopupMenuItem, 'Widget Settings');
        settings.connect('activate', () => shell.openPreferences());
        menu.addMenuItem(settings);
        shell.addIndicator('widgethost-menu', this.button);
    }

    destroy() {
        this.add.disconnect();
        this.button.destroy();
    }
}
