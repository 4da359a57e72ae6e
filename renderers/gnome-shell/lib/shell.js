// What the desktop and the top bar need of GNOME Shell, taken from the shell's
// own objects (`Main`, `PanelMenu`, `PopupMenu` and `global`, which each
// entry point brings in its own way) so that the other modules import nothing
// from the shell.
import GLib from 'gi://GLib';
import Gio from 'gi://Gio';
import Meta from 'gi://Meta';
import Shell from 'gi://Shell';
import St from 'gi://St';

/**
 * The `shell` a Desktop, a Bar and the menus take (see desktop.js, bar.js,
 * menus.js), from the shell's modules `Main`, `PanelMenu` and `PopupMenu`,
 * `global`, the extension's `uuid`, its GSettings `settings`
 * (org.gnome.shell.extensions.widgethost) and what opens its preferences.
 */
export function facade({Main, PanelMenu, PopupMenu, global, uuid, settings = null, openPreferences = () => {}}) {
    const layout = Main.layoutManager;
    return {
        // The wallpaper's layer: below every window, above the background.
        layer: layout._backgroundGroup,
        settings,
        PopupMenu,
        openPreferences,

        // Each monitor's work area (null for none) and the primary monitor's index.
        workAreas() {
            const areas = layout.monitors.map((_monitor, index) => layout.getWorkAreaForMonitor(index) ?? null);
            return {areas, primary: layout.primaryIndex};
        },

        onLayoutChanged(callback) {
            const monitors = layout.connect('monitors-changed', () => callback());
            const areas = global.display.connect('workareas-changed', () => callback());
            return () => {
                layout.disconnect(monitors);
                global.display.disconnect(areas);
            };
        },

        // The token a launcher in the shell gives an app it starts: the shell's
        // own launch context for the app's desktop entry, at the click's time
        // (a startup id on X11, an xdg-activation token on Wayland). `withdraw`
        // ends the startup the shell then waits for (its busy app in the top
        // bar) when no window of the app is to come.
        launchToken(appId, time) {
            const context = global.create_app_launch_context(time, -1);
            let info = null;
            try {
                info = Gio.DesktopAppInfo.new(`${appId}.desktop`);
            } catch (_error) {
                info = null;
            }
            if (info === null)  // no desktop entry: the token still names the app
                info = Gio.AppInfo.create_from_commandline('true', appId, Gio.AppInfoCreateFlags.NONE);
            const token = context.get_startup_notify_id(info, []) ?? '';
            return {token, withdraw: () => token && context.launch_failed(token)};
        },

        // A button of the top bar with a popup menu, as the shell's own indicators are.
        panelButton(name) {
            return new PanelMenu.Button(0.5, name, false);
        },

        // Into the top bar's centre, right of the clock (the date menu): `index` 0 next to it.
        addToPanel(role, button, index) {
            const panel = Main.panel;
            const clock = panel.statusArea.dateMenu?.container;
            const centre = panel._centerBox;
            const after = clock && centre ? centre.get_children().indexOf(clock) + 1 : 1;
            panel.addToStatusArea(role, button, after + index, 'center');
        },

        // The top bar's width and the natural widths of its left, centre and
        // right boxes. The shell gives the centre box (the clock's) its natural
        // width, centred, and each side only what is left beside it
        // (Panel.vfunc_allocate): the centre box has room as long as twice the
        // wider side fits beside it.
        barWidths() {
            const panel = Main.panel;
            const natural = box => box.get_preferred_width(-1)[1];
            return {width: panel.width, left: natural(panel._leftBox), centre: natural(panel._centerBox), right: natural(panel._rightBox)};
        },

        // Calls `callback` whenever the top bar or one of its boxes is laid out
        // anew (a monitor's new width, an indicator come or gone, a clock or a
        // pill grown). Returns what stops it.
        onBarAllocated(callback) {
            const panel = Main.panel;
            const connected = [panel, panel._leftBox, panel._centerBox, panel._rightBox]
                .map(actor => [actor, actor.connect('notify::allocation', () => callback())]);
            return () => connected.forEach(([actor, id]) => actor.disconnect(id));
        },

        // Into the top bar's right, left of the system menu, as other indicators go.
        addIndicator(role, button) {
            Main.panel.addToStatusArea(role, button);
        },

        // A popup menu that opens at a point of the screen, as the desktop's own menu does.
        contextMenu() {
            const menu = new PopupMenu.PopupMenu(layout.dummyCursor, 0, St.Side.TOP);
            const manager = new PopupMenu.PopupMenuManager(layout.dummyCursor);
            manager.addMenu(menu);
            Main.uiGroup.add_child(menu.actor);
            menu.actor.hide();
            return {
                menu,
                openAt(x, y) {
                    layout.setDummyCursorGeometry(x, y, 0, 0);
                    menu.open(true);
                },
                destroy: () => menu.destroy(),
            };
        },

        // Where the desktop's own menu last opened (the point a right-click on the wallpaper chose).
        menuPoint() {
            return layout.dummyCursor.get_transformed_position();
        },

        // Calls `decorate(menu)` for the menu of the desktop's background on
        // every monitor (the shell's own, which a right-click on the wallpaper
        // opens), now and whenever the shell makes a new one (it does with each
        // new background, at its start, for new monitors, for a new wallpaper);
        // `decorate` returns what takes its items out again. Returns what
        // stops it and takes every decoration out.
        backgroundMenus(decorate) {
            const layer = layout._backgroundGroup;
            const decorated = new Map();
            let pending = 0;
            const sync = () => {
                pending = 0;
                const menus = new Set(layer.get_children().map(actor => actor._backgroundMenu).filter(m => m));
                for (const menu of [...decorated.keys()].filter(m => !menus.has(m)))
                    decorated.delete(menu);  // destroyed with its background, our items with it
                for (const menu of menus) {
                    if (!decorated.has(menu))
                        decorated.set(menu, decorate(menu));
                }
                return GLib.SOURCE_REMOVE;
            };
            // A new background gets its menu right after it joins the layer: look once that is done.
            const later = () => {
                pending ||= GLib.idle_add(GLib.PRIORITY_DEFAULT, sync);
            };
            let added = 0;
            try {
                added = layer.connect('child-added', later);
            } catch (_error) {  // Clutter before GNOME Shell 46
                added = layer.connect('actor-added', later);
            }
            sync();
            return () => {
                layer.disconnect(added);
                if (pending)
                    GLib.source_remove(pending);
                decorated.forEach(undo => undo());
                decorated.clear();
            };
        },

        // A group of the shell's keyboard navigation: listed by Ctrl+Alt+Tab, and
        // Tab and the arrow keys move the focus within it.
        addFocusGroup(actor, name, iconName, focus) {
            Main.ctrlAltTabManager.addGroup(actor, name, iconName, {focusCallback: () => focus()});
            return () => Main.ctrlAltTabManager.removeGroup(actor);
        },

        // A keyboard shortcut from `settings`' key `key` (a list of accelerators), outside the overview.
        addKeybinding(key, handler) {
            if (settings === null)
                return () => {};
            Main.wm.addKeybinding(key, settings, Meta.KeyBindingFlags.NONE, Shell.ActionMode.NORMAL, () => handler());
            return () => Main.wm.removeKeybinding(key);
        },

        // Keeps the keyboard on `actor` (the desktop's widgets) while an app
        // starts. On X11 the shell, when an app begins to start (a startup
        // sequence, as each tap's token is), moves the display's input focus
        // off its stage so that no window has it until the app's comes
        // (_shell_app_handle_startup_sequence), and gives the stage its focus
        // back only once it sees the stage lose it (a round trip to the X
        // server, later still on a busy machine): a key pressed right after
        // Enter tapped a widget went nowhere. Right after the shell moves the
        // focus, in the same dispatch, this asks for the stage's focus again
        // as the shell itself then does (the stage's key focus is notified).
        // An app's window that comes still gets the focus. Returns what stops it.
        keepKeyboard(actor) {
            const tracker = Shell.WindowTracker.get_default();
            const changed = tracker.connect('startup-sequence-changed', () => {
                const focused = global.stage.get_key_focus();
                if (focused !== null && focused !== global.stage && actor.contains(focused))
                    global.stage.notify('key-focus');
            });
            return () => tracker.disconnect(changed);
        },

        // Gives the keyboard back to the windows: the shell then focuses the topmost one.
        unfocus() {
            global.stage.set_key_focus(null);
        },

        notify(title, body) {
            Main.notify(title, body);
        },

        log(message) {
            console.log(`${uuid}: ${message}`);
        },
    };
}
