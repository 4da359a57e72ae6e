// The entry point for GNOME Shell 45 and later, whose extensions are ES
// modules exporting an Extension. The logic is in lib/, shared with the entry
// point for GNOME Shell 43 and 44.
import {Extension} from 'resource:///org/gnome/shell/extensions/extension.js';
import * as Main from 'resource:///org/gnome/shell/ui/main.js';

import {Desktop} from './lib/desktop.js';
import {facade} from './lib/shell.js';

export default class WidgetHostExtension extends Extension {
    enable() {
        this._desktop = new Desktop(facade(Main, global, this.uuid));
    }

    disable() {
        this._desktop?.destroy();
        this._desktop = null;
    }
}
