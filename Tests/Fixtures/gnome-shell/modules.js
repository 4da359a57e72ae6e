// modules.js: checks the GNOME Shell extension's modules outside the shell,
// for GnomeShellTests: run with `gjs -m modules.js SOURCE EXTENSION WORKDIR`,
// SOURCE being renderers/gnome-shell, EXTENSION the extension as
// renderers/gnome-shell/install lays it out for GNOME Shell 45, WORKDIR an
// empty folder.
//
// It loads the entry point for GNOME Shell 45 and later as that shell would,
// with the shell's own modules (resource:///org/gnome/shell/…) stood in for
// by stubs in WORKDIR, and checks that it exports an Extension; then it checks
// that lib/vocabulary.js holds the rendering vocabulary's declaration
// (vocabulary/vocabulary.json) and the functions of lib/ that draw nothing.
// Prints one line per check, "ok …" or "FAIL …", and exits 1 when one failed.
import Atk from 'gi://Atk';
import Gio from 'gi://Gio';
import GLib from 'gi://GLib';
import System from 'system';

const [source, extension, work] = ARGV;
let failed = 0;

function check(what, ok, detail = '') {
    print(`${ok ? 'ok' : 'FAIL'} ${what}${ok ? '' : `: ${detail}`}`);
    if (!ok)
        failed++;
}

function write(path, text) {
    GLib.mkdir_with_parents(GLib.path_get_dirname(path), 0o755);
    GLib.file_set_contents(path, text);
}

function read(path) {
    return new TextDecoder().decode(GLib.file_get_contents(path)[1]);
}

// The 45+ extension as install lays it out, its shell imports pointed at stubs.
const entry = read(`${extension}/extension.js`)
    .replace("'resource:///org/gnome/shell/extensions/extension.js'", "'./stubs/extension.js'")
    .replace(/'resource:\/\/\/org\/gnome\/shell\/ui\/(main|panelMenu|popupMenu)\.js'/g, "'./stubs/$1.js'");
check('the 45+ entry imports only the shell modules stubbed here', !entry.includes('resource:///'));
write(`${work}/extension.js`, entry);
for (const info of Gio.File.new_for_path(`${extension}/lib`).enumerate_children('standard::name', 0, null)) {
    const name = info.get_name();
    if (name.endsWith('.js'))
        write(`${work}/lib/${name}`, read(`${extension}/lib/${name}`));
}
write(`${work}/stubs/extension.js`,
    'export class Extension { constructor(metadata) { this.metadata = metadata; this.uuid = metadata.uuid; } }\n');
write(`${work}/stubs/main.js`, 'export const layoutManager = null;\nexport const panel = null;\n');
write(`${work}/stubs/panelMenu.js`, 'export class Button {}\n');
write(`${work}/stubs/popupMenu.js`, 'export class PopupMenu {}\n');

const metadata = JSON.parse(read(`${source}/shell-45/metadata.json`));
check('the 45+ metadata names the uuid', metadata.uuid === 'widgethost@widgethost.org', metadata.uuid);
check('the 45+ metadata is for GNOME Shell 45 and later',
    metadata['shell-version'].length > 0 && metadata['shell-version'].every(v => parseInt(v) >= 45), metadata['shell-version']);
const legacy = JSON.parse(read(`${source}/shell-43/metadata.json`));
check('the 43 metadata is for GNOME Shell 43 and 44', JSON.stringify(legacy['shell-version']) === '["43","44"]',
    legacy['shell-version']);

const loop = new GLib.MainLoop(null, false);
(async () => {
    const {default: WidgetHostExtension} = await import(`file://${work}/extension.js`);
    const {Extension} = await import(`file://${work}/stubs/extension.js`);
    const enabled = new WidgetHostExtension(metadata);
    check('the 45+ entry exports an Extension with enable and disable',
        enabled instanceof Extension && typeof enabled.enable === 'function' && typeof enabled.disable === 'function');

    const {colour, accessibleName, fraction, boundText, ...vocabulary} = await import(`file://${work}/lib/vocabulary.js`);
    const same = (what, got, want) => check(what, JSON.stringify(got) === JSON.stringify(want), `${JSON.stringify(got)}, not ${JSON.stringify(want)}`);
    // What the renderer draws is the declaration's, with nothing of its own.
    const declared = JSON.parse(read(`${source}/../../vocabulary/vocabulary.json`));
    same('lib/declaration.js is vocabulary/vocabulary.json', vocabulary.DECLARATION, declared);
    same('the types drawn are the declared ones', [...vocabulary.TYPES].sort(), Object.keys(declared.types).sort());
    const drawing = read(`${work}/lib/vocabulary.js`);
    same('each declared type has a drawing of its own in Renderer.element',
        Object.keys(declared.types).filter(type => !drawing.includes(`\n            ${type}: () => `)), []);
    same('the tappable types are the declared ones', [...vocabulary.TAPPABLE].sort(),
        Object.keys(declared.types).filter(type => declared.types[type].tappable).sort());
    same('the family sizes are the declared ones', vocabulary.FAMILY_SIZES,
        Object.fromEntries(Object.entries(declared.families).map(([name, family]) => [name, family.size])));
    same('the one-colour families are the declared ones', [...vocabulary.MONOCHROME].sort(),
        Object.keys(declared.families).filter(name => declared.families[name].monochrome).sort());
    const roles = {widget: declared.widget.role,
        ...Object.fromEntries(Object.entries(declared.types).filter(([, t]) => t.role).map(([name, t]) => [name, t.role]))};
    same('each declared role is an accessible role (Atk), and the renderer\'s', Object.fromEntries(Object.entries(vocabulary.ROLES)
        .map(([name, role]) => [name, role === Atk.Role.INVALID ? 'invalid' : Atk.role_get_name(role)])), roles);
    const defaults = [];
    for (const [type, spec] of Object.entries(declared.types)) {
        for (const [key, value] of Object.entries({...declared.keys, ...spec.keys}))
            defaults.push([type, key, value.default ?? null, vocabulary.defaultOf(type, key)]);
    }
    same('the defaults are the declared ones', defaults.filter(([, , want, got]) => want !== got), []);

    const {flow, arrange, toSaved, fromSaved, areaAt, readingOrder, dragged, savedPositions} =
        await import(`file://${work}/lib/layout.js`);
    await import(`file://${work}/lib/desktop.js`);
    const {byPlacement} = await import(`file://${work}/lib/mirror.js`);
    same('colours', [colour('#f80'), colour('#ff880080'), colour('red'), colour({light: '#000', dark: 'white'}, true),
        colour('rgb(1, 2, 3)'), colour('not a colour!'), colour(7)],
    ['rgba(255,136,0,1)', 'rgba(255,136,0,0.502)', '#ff0000', '#ffffff', 'rgb(1, 2, 3)', null, null]);
    same('accessible names: label, else text, else id', [
        accessibleName({type: 'link', label: 'Open', id: 'o', children: [{type: 'text', text: 'Go'}]}),
        accessibleName({type: 'link', id: 'o', children: [{type: 'text', text: 'Go'}, {type: 'text', text: 'on'}]}),
        accessibleName({type: 'button', id: 'refresh'}),
    ], ['Open', 'Go on', 'refresh']);
    same('fractions, the bounds by default those declared', [fraction({type: 'gauge', value: 35, min: 0, max: 100}),
        fraction({type: 'progress', value: 2}), fraction({type: 'gauge', value: 1, min: 1, max: 1})], [0.35, 1, 0]);
    same('bound text', [boundText({text: 'x', bind: 'state.eta', format: '{} min'}, {state: {eta: 7}}), boundText({text: 'x', bind: 'state.eta'}, {state: {}})],
        ['7 min', 'x']);
    same('widgets flow left to right, then row after row',
        flow([[170, 170], [364, 170], [170, 170], [76, 76]], {x: 0, y: 32, width: 800, height: 600}),
        [[24, 56], [212, 56], [594, 56], [24, 244]]);
    // Two monitors side by side, the primary on the left with a top bar of 32.
    const areas = [{x: 0, y: 32, width: 800, height: 568}, {x: 800, y: 0, width: 1024, height: 768}];
    same('a dragged widget stays where it was left; the others flow around it into the free space',
        [...arrange([{id: 'w1', size: [170, 170]}, {id: 'w2', size: [170, 170]}, {id: 'w3', size: [364, 170]}],
            {w1: [0, 400, 0]}, areas, 0)],
        [['w1', [400, 32]], ['w2', [24, 56]], ['w3', [212, 220]]]);
    same('a saved place is clamped into its monitor\'s work area, and a gone monitor\'s widgets go to the primary',
        [fromSaved([1, 1000, 700], [170, 170], areas, 0), fromSaved([3, 10, 10], [170, 170], areas, 0)], [[1654, 598], [10, 42]]);
    same('a dropped widget is saved on the monitor that holds its centre, from its work area\'s top left, clamped',
        [toSaved([700, 100], [170, 170], areas, 0), toSaved([-50, 500], [170, 170], areas, 0), toSaved([900, -20], [76, 76], areas, 0)],
        [[0, 630, 68], [0, 0, 398], [1, 100, 0]]);
    same('the monitor nearest a point off every monitor', [areaAt(400, 10, areas, 0), areaAt(2000, 900, areas, 0), areaAt(5, 5, [], 0)], [0, 1, 0]);
    same('the keyboard reads the widgets top to bottom, then left to right',
        readingOrder(new Map([['a', [300, 40]], ['b', [24, 400]], ['c', [24, 40]]])), ['c', 'a', 'b']);
    same('a press drags once it moves past the threshold', [dragged(3, -8, 8), dragged(0, 9, 8), dragged(-9, 0, 8)], [false, true, true]);
    same('only well-formed saved places are read', savedPositions({w1: [0, 5, 6], w2: [0, 1], w3: 'x', w4: [0, 1.5, 2]}), {w1: [0, 5, 6]});
    const {catalogue, familyName, findKind} = await import(`file://${work}/lib/catalogue.js`);
    const apps = catalogue([
        ['org.example.B', '{"widgets":[{"kind":"K","families":["systemSmall","accessoryInline"],"configuration":{"intent":"I","parameters":[{"name":"hero","title":"Hero","dynamic":true},{"name":"city"}]}}]}'],
        ['org.example.A', '{"widgets":[{"kind":"L","displayName":"Leaders","families":["systemMedium"]},{"families":[]}]}'],
        ['org.example.Broken', 'not json'],
    ], [['org.example.B', {name: 'Bee'}], ['org.example.A', {name: 'Ant'}]]);
    same('the catalogue lists each app\'s kinds by the app\'s name, with their families and parameters',
        apps.map(a => [a.appName, a.kinds.map(k => [k.name, k.families.map(familyName), k.parameters])]),
        [['Ant', [['Leaders', ['Medium'], []]]],
            ['Bee', [['K', ['Small', 'Inline'], [{name: 'hero', title: 'Hero', dynamic: true}, {name: 'city', title: 'city', dynamic: false}]]]]]);
    same('a kind is found by app and kind', [findKind(apps, 'org.example.A', 'L')?.name, findKind(apps, 'org.example.A', 'K')], ['Leaders', null]);
    const {byRelevance, compactFits, pillName} = await import(`file://${work}/lib/bar.js`);
    same('Live Activities in the host\'s order: relevance, then the earlier start, then the id',
        [{relevance: 0, start: 5, id: 'a3'}, {relevance: 2, start: 9, id: 'a10'}, {relevance: 0, start: 5, id: 'a2'},
            {relevance: 0, start: 4, id: 'a11'}].sort(byRelevance).map(a => a.id), ['a10', 'a11', 'a2', 'a3']);
    const delivery = {appId: 'org.example.Delivery', id: 'a1', bindings: {state: {eta: 7}}, content: {
        compactLeading: {type: 'image', icon: 'box', label: 'Delivery'},
        compactTrailing: {type: 'text', bind: 'state.eta', format: '{} min', text: 'soon'},
        minimal: {type: 'image', icon: 'box'}}};
    same('a pill is named by what it shows', [pillName(delivery, 'compact'), pillName(delivery, 'minimal')],
        ['Delivery 7 min', 'org.example.Delivery']);
    // A top bar 1000 wide, its wider side 300: the centre box has room for 400.
    const bar = {width: 1000, left: 100, centre: 250, right: 300};
    same('the compact form fits while the centre box with it leaves the wider side its width on both sides',
        [compactFits(bar, 60, 210), compactFits(bar, 60, 211), compactFits(bar, 210, 360), compactFits(bar, 210, 361),
            compactFits({...bar, width: 0}, 60, 900)],
        [true, false, true, false, true]);
    same('widgets in the order they were placed', ['w10', 'w2', 'w1'].sort(byPlacement), ['w1', 'w2', 'w10']);
})().catch(error => {
    check('the modules load', false, `${error}\n${error.stack}`);
}).finally(() => loop.quit());
loop.run();
System.exit(failed ? 1 : 0);
