// The widgets a person can add: every app's widget bundle the host knows
// (Widgets.ListBundles), under the app's name (Apps.ListApps), as the board's
// gallery lists them (docs/board.md#the-gallery). Read afresh each time a menu
// that offers them opens, asynchronously.
//
// This module imports nothing from GNOME Shell.
import GLib from 'gi://GLib';

import {callHost} from './mirror.js';

export const WIDGETS = 'org.widgethost.Host1.Widgets';
export const APPS = 'org.widgethost.Host1.Apps';

export const FAMILY_NAMES = {
    systemSmall: 'Small', systemMedium: 'Medium', systemLarge: 'Large', systemExtraLarge: 'Extra Large',
    accessoryCircular: 'Circular', accessoryRectangular: 'Rectangular', accessoryInline: 'Inline',
    accessoryCorner: 'Corner',
};

/** A family as a person reads it: Small, Medium, … */
export function familyName(family) {
    return FAMILY_NAMES[family] ?? family;
}

/**
 * The apps and their kinds, from ListBundles' (app_id, bundle_json) pairs and
 * ListApps' (app_id, details) pairs: [{appId, appName, kinds: [{appId, kind,
 * name, description, families, parameters: [{name, title, dynamic}]}]}],
 * sorted by the apps' names. A bundle that is not valid JSON is left out.
 */
export function catalogue(bundles, apps = []) {
    const names = new Map(apps.map(([appId, details]) => [appId, details?.name]));
    const result = [];
    for (const [appId, text] of bundles) {
        let entries = [];
        try {
            entries = JSON.parse(text)?.widgets;
        } catch (_error) {
            continue;
        }
        const kinds = (Array.isArray(entries) ? entries : [])
            .filter(e => e !== null && typeof e === 'object' && typeof e.kind === 'string' && e.kind)
            .map(e => kindOf(appId, e));
        const appName = typeof names.get(appId) === 'string' && names.get(appId) ? names.get(appId) : appId;
        if (kinds.length)
            result.push({appId, appName, kinds});
    }
    return result.sort((a, b) => a.appName.localeCompare(b.appName) || (a.appId < b.appId ? -1 : 1));
}

function kindOf(appId, entry) {
    const configuration = entry.configuration !== null && typeof entry.configuration === 'object' ? entry.configuration : {};
    const parameters = (Array.isArray(configuration.parameters) ? configuration.parameters : [])
        .filter(p => p !== null && typeof p === 'object' && typeof p.name === 'string' && p.name)
        .map(p => ({name: p.name, title: typeof p.title === 'string' && p.title ? p.title : p.name, dynamic: p.dynamic === true}));
    return {
        appId, kind: entry.kind, parameters,
        name: typeof entry.displayName === 'string' && entry.displayName ? entry.displayName : entry.kind,
        description: typeof entry.description === 'string' ? entry.description : '',
        families: (Array.isArray(entry.families) ? entry.families : []).filter(f => typeof f === 'string'),
    };
}

/** The kind `kind` of `appId` in a catalogue, or null. */
export function findKind(apps, appId, kind) {
    return apps.find(a => a.appId === appId)?.kinds.find(k => k.kind === kind) ?? null;
}

/**
 * Reads the catalogue from the host on `bus`: `done(apps, error)`. The apps'
 * names are a nicety: without ListApps the app ids stand for them.
 */
export function loadCatalogue(bus, done) {
    callHost(bus, WIDGETS, 'ListBundles', null, (bundles, error) => {
        if (error !== null) {
            done(null, error);
            return;
        }
        callHost(bus, APPS, 'ListApps', null, apps => done(catalogue(bundles[0], apps?.[0] ?? []), null));
    });
}

/** AddWidget: places `kind` (from the catalogue) in `family`, unconfigured; `done(path, error)`. */
export function addWidget(bus, kind, family, done) {
    const args = new GLib.Variant('(sssa{sv})', [kind.appId, kind.kind, family, {}]);
    callHost(bus, WIDGETS, 'AddWidget', args, (reply, error) => done(reply?.[0] ?? null, error));
}

/** GetConfigurationOptions of a dynamic parameter: `done([[id, title], …], error)`. */
export function configurationOptions(bus, kind, parameter, configuration, done) {
    const args = new GLib.Variant('(sssa{sv})', [kind.appId, kind.kind, parameter, configuration]);
    callHost(bus, WIDGETS, 'GetConfigurationOptions', args, (reply, error) => done(reply?.[0] ?? null, error));
}
