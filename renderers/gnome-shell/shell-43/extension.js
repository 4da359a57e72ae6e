/* exported init */
// The entry point for GNOME Shell 43 and 44, whose extensions are scripts of
// the legacy `imports` system. It loads the extension's ES modules (lib/,
// shared with the entry point for GNOME Shell 45 and later) with import().
const ExtensionUtils = imports.misc.extensionUtils;
const Main = imports.ui.main;
const PanelMenu = imports.ui.panelMenu;
const PopupMenu = imports.ui.popupMenu;

const Me = ExtensionUtils.getCurrentExtension();

class Extension {
    constructor() {
        this._surfaces = null;
        this._generation = 0;
    }

    enable() {
        const generation = ++this._generation;
        const lib = Me.dir.get_child('lib');
        Promise.all(['shell.js', 'main.js'].map(name => import(lib.get_child(name).get_uri())))
            .then(([shell, main]) => {
                if (generation !== this._generation)
                    return;
                this._surfaces = main.start(shell.facade({
                    Main, PanelMenu, PopupMenu, global, uuid: Me.metadata.uuid,
                    settings: ExtensionUtils.getSettings(), openPreferences: () => ExtensionUtils.openPrefs(),
                }));
            })
            .catch(error => Main.extensionManager.logExtensionError(Me.metadata.uuid, error));
    }

    disable() {
        this._generation++;
        if (this._surfaces !== null)
            this._surfaces.destroy();
        this._surfaces = null;
    }
}

function init() {
    return new Extension();
}
