// Reporting taps to the host, for every surface the extension draws on (the
// desktop's widgets, the top bar's Live Activities): the element a press began
// on, and the tap itself with an activation token the shell mints for the app.
//
// This module imports nothing from GNOME Shell.
import Clutter from 'gi://Clutter';
import GLib from 'gi://GLib';
import St from 'gi://St';

import {CALL_TIMEOUT_MS, call, errorText} from './mirror.js';
import {elementIdAt} from './vocabulary.js';

/** The actor an event happened on (its source until Clutter 13, the stage's event actor later). */
export function eventActor(event, actor) {
    if (event.get_source)
        return event.get_source();
    const stage = actor.get_stage();
    if (stage?.get_event_actor)
        return stage.get_event_actor(event);
    const [x, y] = event.get_coords();
    return stage?.get_actor_at_pos(Clutter.PickMode.REACTIVE, x, y) ?? null;
}

/**
 * Remembers where a primary press on `frame` began, so that a click reports
 * the innermost element with an id under the pointer. `pick(ownId, button)`,
 * called when `button` (the frame, or a link, button or toggle in it) is
 * activated, answers the element id the tap reports: by the pointer, the
 * innermost element with an id where the press began; by the keyboard or an
 * assistive technology, the element's own id.
 */
export class PressTracker {
    constructor(frame) {
        this.frame = frame;
        this.press = null;
        frame.connect('captured-event', (_actor, event) => {
            if (event.type() === Clutter.EventType.BUTTON_PRESS && event.get_button() === 1) {
                const source = eventActor(event, frame);
                this.press = {source, id: elementIdAt(source, frame)};
            }
            return Clutter.EVENT_PROPAGATE;
        });
    }

    /** [element id, event time] for the activation of `button`, whose own id is `ownId`. */
    pick(ownId, button) {
        const event = Clutter.get_current_event();
        const type = event?.type();
        const pointer = type === Clutter.EventType.BUTTON_RELEASE || type === Clutter.EventType.TOUCH_END;
        const press = this.press;
        this.press = null;
        const time = event ? event.get_time() : Clutter.CURRENT_TIME;
        if (pointer && press !== null && (press.source === button || button.contains(press.source)))
            return [press.id, time];
        return [ownId, time];
    }
}

const FEEDBACK_SECONDS = 3;

/**
 * A short text shown in `parent` (St.Label properties `properties`) for a few
 * seconds: an outcome of 'none' or an error is never dropped silently.
 */
export class Feedback {
    constructor(parent, properties) {
        this.parent = parent;
        this.properties = properties;
        this.label = null;
        this.source = 0;
        parent.connect('destroy', () => this.clear());
    }

    show(text) {
        this.clear();
        const label = new St.Label({text, ...this.properties});
        label.clutter_text.line_wrap = true;
        label.connect('destroy', () => {
            if (this.label === label)
                this.label = null;
        });
        this.label = label;
        this.parent.add_child(label);
        this.source = GLib.timeout_add_seconds(GLib.PRIORITY_DEFAULT, FEEDBACK_SECONDS, () => {
            this.source = 0;
            this.clear();
            return GLib.SOURCE_REMOVE;
        });
    }

    clear() {
        if (this.source)
            GLib.source_remove(this.source);
        this.source = 0;
        this.label?.destroy();
        this.label = null;
    }
}

/**
 * Calls `Tap` of `proxy` (a Widget or a LiveActivity) with `args` (the
 * arguments before the options) and the options `surface`, `deadline` (when
 * the call stops waiting) and `activation_token`, minted by
 * `shell.launchToken` for `appId` at `time`.
 * `feedback(text)` is told of an outcome of 'none' or of an error.
 */
export function reportTap(shell, proxy, signature, args, appId, time, feedback) {
    let token = '', withdraw = () => {};
    try {
        ({token, withdraw} = shell.launchToken(appId, time));
    } catch (error) {
        shell.log(`no activation token for ${appId}: ${error.message}`);
    }
    // The deadline: a host that reads the tap only after this call stopped
    // waiting (stopped, or busy) delivers it to nobody (docs/delivery.md).
    const options = {
        surface: new GLib.Variant('s', 'desktop'),
        deadline: new GLib.Variant('x', Date.now() + CALL_TIMEOUT_MS),
    };
    if (token)
        options.activation_token = new GLib.Variant('s', token);
    call(proxy, 'Tap', new GLib.Variant(`(${signature}a{sv})`, [...args, options]), (reply, error) => {
        if (error !== null) {
            withdraw();
            feedback(errorText(error));
            return;
        }
        const [outcome, details] = reply;
        // An action is performed without raising the app, and 'none' does nothing.
        if (outcome === 'perform-action' || outcome === 'none')
            withdraw();
        if (outcome === 'none')
            feedback(`Not available here (${details.reason ?? 'none'})`);
    });
}
