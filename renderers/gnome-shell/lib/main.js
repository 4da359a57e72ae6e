// What the extension shows, started and stopped by each entry point: one
// mirror of the host, followed by the desktop's widgets, the top bar's Live
// Activities and the top bar's WidgetHost menu.
//
// This module imports nothing from GNOME Shell.
import {Bar} from './bar.js';
import {Desktop} from './desktop.js';
import {Indicator} from './menus.js';
import {Mirror} from './mirror.js';

/** Starts the extension's surfaces with `shell` (see shell.js); returns what stops them. */
export function start(shell) {
    const mirror = new Mirror({log: message => shell.log(message)});
    const desktop = new Desktop(shell, {mirror});
    const bar = new Bar(shell, {mirror});
    const indicator = new Indicator(shell, {mirror, desktop});
    return {
        destroy() {
            indicator.destroy();
            bar.destroy();
            desktop.destroy();
            mirror.destroy();
        },
    };
}
