// The entry point for GNOME Shell 45 and later, whose extensions are ES
// modules exporting an Extension. The logic is in lib/, shared with the entry
// point for GNOME Shell 43 and 44.
import {Extension} from 'resource:///org/gnome/shell/extensions/extension.js';
import * as Main from 'resource:///org/gnome/shell/ui/main.js';
import * as PanelMenu from 'resource:///org/gnome/shell/ui/panelMenu.js';
import * as PopupMenu from 'resource:///org/gnome/shell/ui/popupMenu.js';

import {start} from './lib/main.js';
import {facade} from './lib/shell.js';

export default class WidgetHostExtension extends Extension {
    enable() {
        this._surfaces = start(facade({
            Main, PanelMenu, PopupMenu, global, uuid: this.uuid,
            settings: this.getSettings(), openPreferences: () => this.openPreferences(),
        }));
    }

    disable() {
        this._surfaces?.destroy();
        this._surfaces = null;
    }
}
