// What the keyboard does to a widget, a link, button or toggle, and the panel's
// pill and button: Enter, Return and Space activate them, as a button's keys do.
.pragma library

/** Whether a key press activates what has the focus. */
function activates(event) {
    return [Qt.Key_Return, Qt.Key_Enter, Qt.Key_Space].indexOf(event.key) >= 0;
}
