// The pointer on a placed widget: a click taps, a press that moves drags the
// widget, a secondary click opens its menu.
//
// The widget takes a primary press for itself (in the capture phase, before
// the links, buttons and toggles in it) and holds the pointer until the
// release: released where it began, the press is a tap on the innermost
// element with an id where it began; moved further than the desktop's drag
// threshold first, it is a drag, and no tap. So a link can be dragged by as
// much as the widget's background, and a click without movement taps as it
// always did.
//
// This module imports nothing from GNOME Shell.
import Clutter from 'gi://Clutter';
import St from 'gi://St';

import {dragged} from './layout.js';
import {eventActor} from './taps.js';
import {elementIdAt} from './vocabulary.js';

const DEFAULT_THRESHOLD = 8;

/** How far (logical pixels) a press moves before it drags: the desktop's setting, as the shell's own drags use. */
function dragThreshold() {
    return St.Settings.get().drag_threshold ?? DEFAULT_THRESHOLD;
}

/**
 * Follows the pointer on `frame`, calling `handlers`:
 *   tap(elementId, time)   a primary click (or a touch) that did not move
 *   menu(x, y)             a secondary click, at that point of the stage
 *   dragBegin()            a press moved past the threshold: the widget follows
 *   dragMotion(x, y)       where the widget's top left is now (stage coordinates)
 *   dragEnd(x, y)          where it was dropped
 */
export class PointerTracker {
    constructor(frame, handlers) {
        this.frame = frame;
        this.handlers = handlers;
        this.press = null;
        this.grab = null;
        frame.connect('captured-event', (_actor, event) => this.onEvent(event));
        frame.connect('destroy', () => this.cancel());
    }

    onEvent(event) {
        const type = event.type();
        // Only a button event has a button: Clutter asserts (Clutter-CRITICAL in the
        // shell's log) when asked for the button of a key or motion event. A touch is the primary one.
        const button = type === Clutter.EventType.BUTTON_PRESS || type === Clutter.EventType.BUTTON_RELEASE
            ? event.get_button() : 1;
        if (type === Clutter.EventType.BUTTON_PRESS || type === Clutter.EventType.TOUCH_BEGIN)
            return this.begin(event, button);
        if (type === Clutter.EventType.MOTION || type === Clutter.EventType.TOUCH_UPDATE)
            return this.move(event);
        if (type === Clutter.EventType.BUTTON_RELEASE || type === Clutter.EventType.TOUCH_END)
            return this.end(event, button);
        if (type === Clutter.EventType.TOUCH_CANCEL)
            this.cancel();
        return Clutter.EVENT_PROPAGATE;
    }

    begin(event, button) {
        if (button !== 1 && button !== 3)
            return Clutter.EVENT_PROPAGATE;
        this.cancel();
        const [x, y] = event.get_coords();
        if (button === 3) {
            this.press = {button};
            return Clutter.EVENT_STOP;
        }
        const source = eventActor(event, this.frame);
        const [left, top] = this.frame.get_position();
        this.press = {button, x, y, left, top, id: elementIdAt(source, this.frame), dragging: false};
        // Every motion and the release come here until the release, wherever the pointer goes.
        this.grab = this.frame.get_stage()?.grab(this.frame) ?? null;
        return Clutter.EVENT_STOP;
    }

    move(event) {
        const press = this.press;
        if (press === null || press.button !== 1)
            return Clutter.EVENT_PROPAGATE;
        const [x, y] = event.get_coords();
        if (!press.dragging && dragged(x - press.x, y - press.y, dragThreshold())) {
            press.dragging = true;
            this.handlers.dragBegin();
        }
        if (press.dragging)
            this.handlers.dragMotion(press.left + x - press.x, press.top + y - press.y);
        return Clutter.EVENT_STOP;
    }

    end(event, button) {
        const press = this.press;
        if (press === null || press.button !== button)
            return Clutter.EVENT_PROPAGATE;
        this.press = null;
        this.letGo();
        const [x, y] = event.get_coords();
        if (button === 3)
            this.handlers.menu(x, y);
        else if (press.dragging)
            this.handlers.dragEnd(press.left + x - press.x, press.top + y - press.y);
        else
            this.handlers.tap(press.id, event.get_time());
        return Clutter.EVENT_STOP;
    }

    /** Forgets the press and lets the pointer go; a drag under way ends where the widget is. */
    cancel() {
        const press = this.press;
        this.press = null;
        this.letGo();
        if (press?.dragging)
            this.handlers.dragEnd(...this.frame.get_position());
    }

    letGo() {
        this.grab?.dismiss();
        this.grab = null;
    }
}
