// The rendering vocabulary (docs/vocabulary.md) as the applet reads it: the
// declaration's tables (vocabulary/vocabulary.json, which the build lays out
// as declaration.js: the applet reads no file for it) and what every element
// needs of them — colours, numbers, bound texts, accessible names. As
// renderers/gnome-shell/lib/vocabulary.js and renderers/gtk/widgetboard/
// vocabulary.py do for their toolkits. Plain JavaScript: Plasma 5 and 6 share it.
.pragma library
.import "declaration.js" as Declaration

var DECLARATION = Declaration.DECLARATION;

/** Each family's [width, height] in logical pixels. */
var FAMILY_SIZES = (function () {
    var sizes = {};
    for (var name in DECLARATION.families)
        sizes[name] = DECLARATION.families[name].size;
    return sizes;
})();

/** Whether a family is drawn in one colour, as the accessory families are on a lock screen. */
function monochrome(family) {
    var spec = DECLARATION.families[family];
    return spec !== undefined && spec.monochrome === true;
}

/** A family's [width, height]; systemSmall's for a family the declaration does not know. */
function familySize(family) {
    return FAMILY_SIZES[family] || FAMILY_SIZES.systemSmall;
}

/** The type an element draws as: its own when declared, else `unknownTypesDrawAs`. */
function drawnType(element) {
    var type = element !== null && typeof element === "object" ? element.type : undefined;
    return typeof type === "string" && DECLARATION.types.hasOwnProperty(type) ? type : DECLARATION.unknownTypesDrawAs;
}

/** The accessible role's name (AT-SPI's) of an element type, or of "widget"; "" when it has none. */
function roleName(type) {
    if (type === "widget")
        return DECLARATION.widget.role;
    var spec = DECLARATION.types[type];
    return spec !== undefined && typeof spec.role === "string" ? spec.role : "";
}

/** Whether a person can tap an element of this type (link, button, toggle). */
function tappable(type) {
    var spec = DECLARATION.types[type];
    return spec !== undefined && spec.tappable === true;
}

/** The declared default of `key` on an element of type `type` (its own key's, else the common key's), or null. */
function defaultOf(type, key) {
    var own = DECLARATION.types[type] !== undefined ? DECLARATION.types[type].keys[key] : undefined;
    var spec = own !== undefined ? own : DECLARATION.keys[key];
    return spec !== undefined && spec.hasOwnProperty("default") ? spec["default"] : null;
}

/** A finite number, or `fallback`. */
function number(value, fallback) {
    return typeof value === "number" && isFinite(value) ? value : (fallback === undefined ? null : fallback);
}

/** What a one-of key's name means (`choices` in the declaration): null for a name it does not list. */
function meaning(key, name) {
    var choices = DECLARATION.keys[key].choices;
    for (var i = 0; i < choices.length; i++) {
        if (choices[i][0] === name)
            return choices[i][1];
    }
    return null;
}

/** The CSS weight (100…900) of a fontWeight's name, or null. */
function fontWeight(name) {
    return meaning("fontWeight", name);
}

/** Where an alignment's name puts a child across its stack: "start", "center", "end" or "fill"; null when none. */
function place(alignment) {
    return meaning("alignment", alignment);
}

// The colours the lint accepts: a CSS name, #rgb, #rgba, #rrggbb, #rrggbbaa, rgb(…) or rgba(…).
var COLOUR = /^(#([0-9a-fA-F]{3,4}|[0-9a-fA-F]{6}|[0-9a-fA-F]{8})|[a-zA-Z]+|rgba?\([0-9., %]+\))$/;

/**
 * A colour Qt reads ("#aarrggbb", or a name: Qt knows the CSS names), from a
 * colour value: a CSS colour, or {light, dark}; null when there is none. CSS
 * puts alpha last (#rrggbbaa), Qt first (#aarrggbb).
 */
function colour(value, dark) {
    if (value !== null && typeof value === "object" && !Array.isArray(value))
        value = dark ? (value.dark !== undefined ? value.dark : value.light) : value.light;
    if (typeof value !== "string" || !COLOUR.test(value))
        return null;
    var hex = null;
    if (value.charAt(0) === "#") {
        hex = value.slice(1);
        if (hex.length <= 4)
            hex = hex.split("").map(function (c) { return c + c; }).join("");
    } else if (value.indexOf("(") >= 0) {
        var parts = value.slice(value.indexOf("(") + 1, value.lastIndexOf(")")).split(",").map(function (p) { return p.trim(); });
        if (parts.length < 3)
            return null;
        var channel = function (p) {
            var n = parseFloat(p);
            return Math.round(Math.max(0, Math.min(255, p.indexOf("%") >= 0 ? n * 2.55 : n)));
        };
        var alpha = parts.length > 3 ? Math.max(0, Math.min(1, parseFloat(parts[3]))) : 1;
        return "#" + [Math.round(alpha * 255), channel(parts[0]), channel(parts[1]), channel(parts[2])]
            .map(function (n) { return ("0" + (isNaN(n) ? 0 : n).toString(16)).slice(-2); }).join("");
    } else {
        return value.toLowerCase();
    }
    var alphaHex = hex.length === 8 ? hex.slice(6, 8) : "ff";
    return "#" + alphaHex + hex.slice(0, 6);
}

/**
 * An element's text: "text", or the value of "bind" ("state.KEY" or
 * "attributes.KEY") put into "format" at "{}" (docs/vocabulary.md#binding).
 */
function boundText(element, bindings) {
    var bind = element.bind;
    if (typeof bind === "string" && bind.indexOf(".") > 0 && bindings) {
        var dot = bind.indexOf(".");
        var values = bindings[bind.slice(0, dot)] || {};
        var key = bind.slice(dot + 1);
        if (values.hasOwnProperty(key)) {
            var value = values[key];
            var text = typeof value === "string" ? value : JSON.stringify(value);
            var format = element.format;
            return typeof format === "string" && format.indexOf("{}") >= 0 ? format.replace("{}", text) : text;
        }
    }
    return typeof element.text === "string" ? element.text : "";
}

/** The elements in an element, in order (those that are objects). */
function children(element) {
    if (element === null || typeof element !== "object" || !Array.isArray(element.children))
        return [];
    return element.children.filter(function (c) { return c !== null && typeof c === "object" && !Array.isArray(c); });
}

/** The text an element shows, its descendants' joined by spaces. */
function visibleText(element, bindings) {
    if (element === null || typeof element !== "object")
        return "";
    var parts = [];
    if (element.type === "text")
        parts.push(boundText(element, bindings));
    children(element).forEach(function (child) { parts.push(visibleText(child, bindings)); });
    return parts.filter(function (p) { return p; }).join(" ");
}

/** An element is named by its label, else its visible text, else its id (docs/vocabulary.md#accessible-names). */
function accessibleName(element, bindings) {
    if (element === null || typeof element !== "object")
        return "";
    if (typeof element.label === "string" && element.label)
        return element.label;
    var text = visibleText(element, bindings);
    if (text)
        return text;
    return typeof element.id === "string" ? element.id : "";
}

/** The fraction of a progress or gauge element: (value - min) / (max - min), in 0…1. */
function fraction(element) {
    var value = number(element.value, defaultOf(element.type, "value"));
    var low = number(element.min, defaultOf(element.type, "min"));
    var high = number(element.max, defaultOf(element.type, "max"));
    if (high <= low)
        return 0;
    return Math.min(1, Math.max(0, (value - low) / (high - low)));
}

/**
 * Whether an element takes all the room its container gives it along `axis`
 * ("x" or "y") when it sits in a stack along `along` ("x", "y"), as SwiftUI's
 * greedy views do and widget-board's expanding widgets: a spacer along its
 * stack, a color both ways, a progress or gauge across; a stack along its
 * axis when a spacer (or a stack a spacer stretches) is in it, and across
 * when any child is greedy that way; a zstack as its first child.
 */
function greedy(element, axis, along) {
    var type = drawnType(element);
    var items = children(element);
    switch (type) {
    case "spacer":
        return axis === along;
    case "color":
        return true;
    case "progress":
    case "gauge":
        return axis === "x";
    case "zstack":
        return items.length > 0 && greedy(items[0], axis, "y");
    case "vstack":
    case "hstack":
        var own = type === "vstack" ? "y" : "x";
        if (axis === own) {
            return items.some(function (c) {
                var t = drawnType(c);
                return t === "spacer" || ((t === "vstack" || t === "hstack") && greedy(c, axis, own));
            });
        }
        return items.some(function (c) { return greedy(c, axis, own); });
    default:
        return false;
    }
}

/** A view tree from its JSON text: null for "" or text that is not a JSON object. */
function parseTree(text) {
    if (typeof text !== "string" || !text)
        return null;
    try {
        var tree = JSON.parse(text);
        return tree !== null && typeof tree === "object" && !Array.isArray(tree) ? tree : null;
    } catch (error) {
        return null;
    }
}

/** An image's "src" as a URL Qt loads: a path, a file: URL or a data: URL; "" otherwise. */
function imageSource(src) {
    if (typeof src !== "string")
        return "";
    if (src.indexOf("data:") === 0 || src.indexOf("file:") === 0)
        return src;
    if (src.charAt(0) === "/")
        return "file://" + src;
    return "";
}
