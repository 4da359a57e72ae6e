/* exported init, fillPreferencesWindow */
// The preferences for GNOME Shell 43 and 44, a legacy `imports` script as
// their extensions' are. The page is made here, at once (the window needs
// one), and filled by lib/preferences.js, shared with GNOME Shell 45 and
// later, once import() has loaded it.
const {Adw} = imports.gi;
const ExtensionUtils = imports.misc.extensionUtils;

const Me = ExtensionUtils.getCurrentExtension();

function init() {
}

function fillPreferencesWindow(window) {
    const settings = ExtensionUtils.getSettings();
    const page = new Adw.PreferencesPage();
    window.add(page);
    import(Me.dir.get_child('lib').get_child('preferences.js').get_uri())
        .then(preferences => preferences.fillPage(page, settings))
        .catch(error => logError(error, `${Me.metadata.uuid}: the preferences did not load`));
}
