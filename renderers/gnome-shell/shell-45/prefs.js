// The preferences for GNOME Shell 45 and later, an ES module exporting the
// shell's ExtensionPreferences; the rows are in lib/preferences.js, shared
// with GNOME Shell 43 and 44.
import Adw from 'gi://Adw';
import {ExtensionPreferences} from 'resource:///org/gnome/Shell/Extensions/js/extensions/prefs.js';

import {fillPage} from './lib/preferences.js';

export default class WidgetHostPreferences extends ExtensionPreferences {
    fillPreferencesWindow(window) {
        const page = new Adw.PreferencesPage();
        window.add(page);
        fillPage(page, this.getSettings());
    }
}
