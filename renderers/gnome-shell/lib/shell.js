// What the desktop needs of GNOME Shell, taken from the shell's own objects
// (`Main` and `global`, which each entry point brings in its own way) so that
// the other modules import nothing from the shell.
import Gio from 'gi://Gio';

/** The `shell` a Desktop takes (see desktop.js), from the shell's `Main` and `global`. */
export function facade(Main, global, uuid) {
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

        log(message) {
            console.log(`${uuid}: ${message}`);
        },
    };
}
