// What a Live Activity row of Host.activities holds, as the applet draws it.
.pragma library
.import "Vocabulary.js" as V

/** Its presentations by name (compactLeading, …, expanded), from its Content. */
function presentations(content) {
    return V.parseTree(content) || {};
}

/** What its bound texts show: its content state and its attributes (docs/vocabulary.md#binding). */
function bindings(contentState, attributes) {
    return {state: contentState || {}, attributes: attributes || {}};
}

/** Its name in a panel: its compact presentations' accessible names, leading then trailing; else its app's id. */
function compactName(presentations, bindings, appId) {
    var names = ["compactLeading", "compactTrailing"].map(function (p) {
        return V.accessibleName(presentations[p] || null, bindings);
    }).filter(function (n) { return n; });
    return names.join(" ") || appId;
}

/** Whether it is drawn dimmed: a stale or ended activity's content is out of date, or final. */
function dimmed(state) {
    return state === "stale" || state === "ended";
}
