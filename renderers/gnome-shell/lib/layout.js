// Where the desktop's widgets sit: a widget the user dragged stays where it
// was dropped, kept per widget id as (monitor, x, y) from the top left of that
// monitor's work area; every other widget flows, in the order the host placed
// them, into the free space of the primary monitor's work area, left to
// right, row after row.
//
// Plain arithmetic on rectangles ({x, y, width, height}) and sizes
// ([width, height]): this module imports nothing at all, so `gjs -m` checks it
// outside the shell.

export const MARGIN = 24;
export const SPACING = 18;

/**
 * Where widgets of the given sizes go, flowing as text does from the top left
 * of `area` ({x, y, width, height}): left to right, a new row when one is full,
 * each row as tall as its tallest widget. Returns one [x, y] per size.
 */
export function flow(sizes, area, margin = MARGIN, spacing = SPACING) {
    const occupied = [];
    return sizes.map(size => {
        const place = freePlace(size, area, occupied, margin, spacing);
        occupied.push({x: place[0], y: place[1], width: size[0], height: size[1]});
        return place;
    });
}

/** Whether rectangles `a` and `b`, `a` grown by `gap` on every side, overlap. */
function overlaps(a, b, gap) {
    return a.x - gap < b.x + b.width && b.x < a.x + a.width + gap
        && a.y - gap < b.y + b.height && b.y < a.y + a.height + gap;
}

/**
 * The first place in reading order (top to bottom, then left to right) inside
 * `area`, `margin` from its edges, where a widget of `size` keeps `spacing`
 * from every rectangle of `occupied`: at the margin, or right of or below one
 * of them. When none is left, below everything (the desktop is full; it
 * overlaps rather than disappears). Returns [x, y].
 */
export function freePlace([width, height], area, occupied, margin = MARGIN, spacing = SPACING) {
    const left = area.x + margin, top = area.y + margin;
    const right = area.x + area.width - margin, bottom = area.y + area.height - margin;
    const xs = [left, ...occupied.map(r => r.x + r.width + spacing)].filter(x => x >= left);
    const ys = [top, ...occupied.map(r => r.y + r.height + spacing)].filter(y => y >= top);
    const candidates = [];
    for (const y of new Set(ys)) {
        for (const x of new Set(xs))
            candidates.push([x, y]);
    }
    candidates.sort((a, b) => a[1] - b[1] || a[0] - b[0]);
    for (const [x, y] of candidates) {
        // A widget wider than the area still gets the area's first column.
        const fits = (x + width <= right || x === left) && (y + height <= bottom || y === top);
        if (fits && !occupied.some(r => overlaps(r, {x, y, width, height}, spacing)))
            return [x, y];
    }
    const lowest = Math.max(top, ...occupied.map(r => r.y + r.height + spacing));
    return clamp([left, lowest], [width, height], area);
}

/** [x, y] moved just enough for a widget of `size` to lie inside `area` (its top left when it is larger). */
export function clamp([x, y], [width, height], area) {
    return [
        Math.round(Math.max(area.x, Math.min(x, area.x + area.width - width))),
        Math.round(Math.max(area.y, Math.min(y, area.y + area.height - height))),
    ];
}

/**
 * The index of the area in `areas` (one per monitor, null for a monitor
 * without one) that holds the point x, y, else the nearest one, else `primary`.
 */
export function areaAt(x, y, areas, primary) {
    let best = primary, distance = Infinity;
    areas.forEach((area, index) => {
        if (!area)
            return;
        const dx = Math.max(area.x - x, 0, x - (area.x + area.width));
        const dy = Math.max(area.y - y, 0, y - (area.y + area.height));
        const d = Math.hypot(dx, dy);
        if (d < distance) {
            best = index;
            distance = d;
        }
    });
    return best;
}

/**
 * The saved form of a widget of `size` dropped with its top left at x, y:
 * [monitor, x, y], the monitor whose work area holds the widget's centre, the
 * position clamped into that area and taken from its top left.
 */
export function toSaved([x, y], size, areas, primary) {
    const monitor = areaAt(x + size[0] / 2, y + size[1] / 2, areas, primary);
    const area = areas[monitor];
    if (!area)
        return null;
    const [cx, cy] = clamp([x, y], size, area);
    return [monitor, cx - area.x, cy - area.y];
}

/** Where a saved [monitor, x, y] puts a widget of `size` on the screen now: on the primary monitor when that monitor is gone. */
export function fromSaved([monitor, x, y], size, areas, primary) {
    const area = areas[monitor] ?? areas[primary];
    return area ? clamp([area.x + x, area.y + y], size, area) : null;
}

/**
 * Where every widget goes. `widgets` are {id, size} in the order the host
 * placed them; `saved` maps ids to [monitor, x, y]; `areas` holds each
 * monitor's work area (null for none) and `primary` the primary monitor's
 * index. Saved widgets go where they were left (clamped into their monitor's
 * work area); the others flow into the primary monitor's free space, around
 * them. Returns a Map from id to [x, y]; empty without a primary work area.
 */
export function arrange(widgets, saved, areas, primary) {
    const places = new Map();
    const home = areas[primary];
    if (!home)
        return places;
    const occupied = [];
    for (const {id, size} of widgets) {
        const place = Object.hasOwn(saved, id) ? fromSaved(saved[id], size, areas, primary) : null;
        if (place !== null) {
            places.set(id, place);
            occupied.push({x: place[0], y: place[1], width: size[0], height: size[1]});
        }
    }
    for (const {id, size} of widgets) {
        if (places.has(id))
            continue;
        const place = freePlace(size, home, occupied);
        places.set(id, place);
        occupied.push({x: place[0], y: place[1], width: size[0], height: size[1]});
    }
    return places;
}

/** The ids of `places` (a Map from id to [x, y]) in reading order: top to bottom, then left to right. */
export function readingOrder(places) {
    return [...places].sort(([, a], [, b]) => a[1] - b[1] || a[0] - b[0]).map(([id]) => id);
}

/** Whether a pointer that moved dx, dy since the press has gone far enough to drag. */
export function dragged(dx, dy, threshold) {
    return Math.abs(dx) > threshold || Math.abs(dy) > threshold;
}

/** The saved positions as read from GSettings (a{s(iii)} unpacked), keeping only well-formed entries. */
export function savedPositions(unpacked) {
    const saved = {};
    for (const [id, value] of Object.entries(unpacked ?? {})) {
        if (Array.isArray(value) && value.length === 3 && value.every(Number.isInteger))
            saved[id] = value;
    }
    return saved;
}
