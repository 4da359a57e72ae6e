// The extension's preferences window (libadwaita): whether widgets show on
// the desktop and Live Activities in the top bar, resetting the layout of
// dragged widgets, and the keyboard shortcut that focuses the widgets. Every
// row is bound to the extension's GSettings (org.gnome.shell.extensions.widgethost),
// which the extension follows live.
//
// It runs in the preferences' own process, never in the shell; each entry
// point's prefs.js hands it an Adw.PreferencesPage and the settings.
import Adw from 'gi://Adw?version=1';
import Gio from 'gi://Gio';
import Gtk from 'gi://Gtk?version=4.0';

/** A row with a switch bound to the boolean `key`; the row names the switch for assistive technologies. */
function switchRow(settings, key, title, subtitle) {
    const row = new Adw.ActionRow({title, subtitle});
    const toggle = new Gtk.Switch({valign: Gtk.Align.CENTER});
    settings.bind(key, toggle, 'active', Gio.SettingsBindFlags.DEFAULT);
    row.add_suffix(toggle);
    row.activatable_widget = toggle;
    return row;
}

/** Fills `page` (an Adw.PreferencesPage already in the window) with the rows bound to `settings`. */
export function fillPage(page, settings) {
    page.title = 'WidgetHost';
    page.icon_name = 'view-grid-symbolic';

    const desktop = new Adw.PreferencesGroup({title: 'Desktop'});
    desktop.add(switchRow(settings, 'show-widgets', 'Show Widgets on the Desktop',
        'The widgets apps serve, below the windows'));
    const reset = new Adw.ActionRow({title: 'Reset Layout', subtitle: 'Dragged widgets flow back into place'});
    const button = new Gtk.Button({label: 'Reset', valign: Gtk.Align.CENTER});
    button.update_property([Gtk.AccessibleProperty.LABEL], ['Reset Layout']);
    button.connect('clicked', () => settings.reset('widget-positions'));
    // Nothing to reset while no widget has a place of its own.
    const sync = () => {
        button.sensitive = settings.get_value('widget-positions').n_children() > 0;
    };
    const changed = settings.connect('changed::widget-positions', sync);
    button.connect('destroy', () => settings.disconnect(changed));
    sync();
    reset.add_suffix(button);
    desktop.add(reset);
    page.add(desktop);

    const bar = new Adw.PreferencesGroup({title: 'Top Bar'});
    bar.add(switchRow(settings, 'show-live-activities', 'Show Live Activities in the Top Bar',
        'The most relevant ones, right of the clock'));
    page.add(bar);

    const keyboard = new Adw.PreferencesGroup({
        title: 'Keyboard',
        description: 'Tab and the arrow keys move among the widgets and their links and buttons, Enter or Space taps, '
            + 'Menu opens a widget\'s menu, Ctrl and an arrow key move it, Escape goes back to the windows.',
    });
    const shortcut = new Adw.ActionRow({title: 'Focus Widgets'});
    const label = new Gtk.ShortcutLabel({accelerator: settings.get_strv('focus-widgets')[0] ?? '', valign: Gtk.Align.CENTER});
    settings.connect('changed::focus-widgets', () => {
        label.accelerator = settings.get_strv('focus-widgets')[0] ?? '';
    });
    shortcut.add_suffix(label);
    keyboard.add(shortcut);
    page.add(keyboard);
}
