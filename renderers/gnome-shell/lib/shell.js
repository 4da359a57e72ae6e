// What the desktop and the top bar need of GNOME Shell, taken from the shell's
// own objects (`Main`, `PanelMenu` and `global`, which each entry point brings
// in its own way) so that the other modules import nothing from the shell.
import Gio from 'gi://Gio';

/** The `shell` a Desktop and a Bar take (see desktop.js, bar.js), from the shell's `Main`, `PanelMenu` and `global`. */
export function facade(Main, PanelMenu, global, uuid) {
    const layout = Main.layoutManager;
    return {
        // The wallpaper's layer: below every window, above the background.
        layer: layout._backgroundGroup,

        workArea() {
            const index = layout.primaryIndex;
            return index < 0 ? null : layout.getWorkAreaForMonitor(index);
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

        log(message) {
            console.log(`${uuid}: ${message}`);
        },
    };
}
