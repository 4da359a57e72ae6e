"""The rendering vocabulary: view-tree elements drawn as GTK 4 widgets.

The element types, keys, defaults, roles and family sizes are declared in
vocabulary/vocabulary.json (read here) and documented in docs/vocabulary.md;
this module is their reference implementation. Every element becomes one GTK
widget. An element with an "id" remembers it (the board reports the innermost
one under the pointer); link, button and toggle become real buttons, so the
keyboard and assistive technologies reach them.
"""
import base64
import json
import math
import os
import re
import urllib.parse

import gi

gi.require_version("Gtk", "4.0")
gi.require_version("Gdk", "4.0")
from gi.repository import Gdk, GLib, Gtk  # noqa: E402


class DeclarationMissing(Exception):
    """The rendering vocabulary's declaration (vocabulary.json) is not where the board looks."""


def _declaration():
    """The rendering vocabulary's declaration (docs/vocabulary.md#the-declaration):
    vocabulary.json beside this module where the package installs it, else
    vocabulary/vocabulary.json of the checkout this module is in."""
    here = os.path.dirname(os.path.abspath(__file__))
    places = [os.path.join(here, "vocabulary.json"),
              os.path.join(here, os.pardir, os.pardir, os.pardir, "vocabulary", "vocabulary.json")]
    for place in places:
        if os.path.exists(place):
            with open(place, encoding="utf-8") as file:
                return json.load(file)
    raise DeclarationMissing(
        "the rendering vocabulary's declaration is in neither " + " nor ".join(map(os.path.normpath, places))
        + ": install vocabulary/vocabulary.json of the source tree beside widgetboard/vocabulary.py")


DECLARATION = _declaration()

# Each family's size in board units (logical pixels at scale 1), in the
# proportions of Apple's widget families: see docs/vocabulary.md#family-sizes.
FAMILY_SIZES = {name: tuple(family["size"]) for name, family in DECLARATION["families"].items()}

# Families drawn in one colour, as the accessory families are on a lock screen.
MONOCHROME = {name for name, family in DECLARATION["families"].items() if family.get("monochrome")}

TYPES = set(DECLARATION["types"])
TAPPABLE = {name for name, spec in DECLARATION["types"].items() if spec.get("tappable")}

# Presentational keys any element may carry (docs/vocabulary.md#keys): those the host does not read.
STYLE_KEYS = {key for key, spec in DECLARATION["keys"].items() if not spec.get("host")}

# Each type's accessible role as AT-SPI names it, and the widget's ("widget").
ROLES = {name: spec["role"] for name, spec in DECLARATION["types"].items() if "role" in spec}
ROLES["widget"] = DECLARATION["widget"]["role"]

# The CSS weight of each font weight's name.
FONT_WEIGHTS = dict(DECLARATION["keys"]["fontWeight"]["choices"])

# Where each alignment's name puts a child across its stack.
_PLACES = {"start": Gtk.Align.START, "center": Gtk.Align.CENTER, "end": Gtk.Align.END, "fill": Gtk.Align.FILL}
ALIGN = {name: _PLACES[place] for name, place in DECLARATION["keys"]["alignment"]["choices"]}


def default(kind, key):
    """The declared default of `key` on an element of type `kind` (its own key's, else the common key's)."""
    spec = DECLARATION["types"].get(kind, {}).get("keys", {}).get(key) or DECLARATION["keys"].get(key) or {}
    return spec.get("default")


def gtk_role(kind):
    """The GTK 4 accessible role of the AT-SPI role the declaration gives `kind`
    (an element type, or "widget"): GTK calls a push button BUTTON."""
    name = ROLES[kind]
    return Gtk.AccessibleRole.BUTTON if name == "push button" else getattr(Gtk.AccessibleRole, name.upper().replace(" ", "_"))


# The colours the lint accepts (Sources/WidgetHostCore/Vocabulary.swift): a CSS name, #rgb, #rgba,
# #rrggbb, #rrggbbaa, rgb(…) or rgba(…), exactly as written.
_COLOR = re.compile(r"^(#([0-9a-fA-F]{3,4}|[0-9a-fA-F]{6}|[0-9a-fA-F]{8})|[a-zA-Z]+|rgba?\([0-9., %]+\))$")


def colour(value, dark):
    """A CSS colour from a colour value: a name or #hex, or {"light": …, "dark": …}."""
    if isinstance(value, dict):
        value = value.get("dark" if dark else "light", value.get("light"))
    if isinstance(value, str) and _COLOR.fullmatch(value):
        return value
    return None


def number(value, default=None):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return default
    return value


def bound_text(element, bindings):
    """An element's text: "text", or the value of "bind" ("state.KEY" or
    "attributes.KEY") put into "format" at "{}" (docs/vocabulary.md#binding)."""
    bind = element.get("bind")
    if isinstance(bind, str) and "." in bind and bindings is not None:
        scope, key = bind.split(".", 1)
        values = bindings.get(scope) or {}
        if key in values:
            value = values[key]
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            text = value if isinstance(value, str) else json.dumps(value)
            fmt = element.get("format")
            return fmt.replace("{}", text, 1) if isinstance(fmt, str) and "{}" in fmt else text
    text = element.get("text")
    return text if isinstance(text, str) else ""


def accessible_name(element, bindings=None):
    """CONTRACT §3: an element is named by its label, else its visible text, else its id."""
    label = element.get("label")
    if isinstance(label, str) and label:
        return label
    text = visible_text(element, bindings)
    if text:
        return text
    ident = element.get("id")
    return ident if isinstance(ident, str) else ""


def visible_text(element, bindings=None):
    """The text an element shows, its descendants' joined by spaces."""
    if not isinstance(element, dict):
        return ""
    parts = []
    if element.get("type") == "text":
        parts.append(bound_text(element, bindings))
    for child in element.get("children") or []:
        if isinstance(child, dict):
            parts.append(visible_text(child, bindings))
    return " ".join(p for p in parts if p)


def texture_from_url(url):
    """A Gdk.Texture from a file path, a file: URL or a data: URL; None when unreadable."""
    try:
        if url.startswith("data:"):
            header, _, payload = url[5:].partition(",")
            data = base64.b64decode(payload) if header.endswith(";base64") else urllib.parse.unquote_to_bytes(payload)
            return Gdk.Texture.new_from_bytes(GLib.Bytes.new(data))
        if url.startswith("file:"):
            url = GLib.filename_from_uri(url)[0]
        if url.startswith("/"):
            return Gdk.Texture.new_from_filename(url)
    except (GLib.Error, ValueError, TypeError):
        return None
    return None


class Rendered:
    """One drawn view tree: the root widget, and for each widget made from an
    element with an id, that id (what a tap on it reports)."""

    def __init__(self, root, ids, css):
        self.root = root
        self.ids = ids
        self.css = css

    def element_id_at(self, widget, stop):
        """The id of the innermost element with an id that contains `widget`, or ""."""
        while widget is not None and widget is not stop:
            ident = self.ids.get(widget)
            if ident:
                return ident
            widget = widget.get_parent()
        return ""


class Renderer:
    """Draws view trees for one tile. `on_activate(element_id, button)` is
    called when a link, button or toggle is clicked, by the pointer, the
    keyboard or an assistive technology."""

    def __init__(self, scope, family, dark, on_activate, bindings=None):
        self.scope = scope
        self.family = family
        self.dark = dark
        self.on_activate = on_activate
        self.bindings = bindings
        self.monochrome = family in MONOCHROME
        self.ids = {}
        self.rules = []
        self.count = 0

    def render(self, tree):
        root = self.element(tree, Gtk.Orientation.VERTICAL) if isinstance(tree, dict) else Gtk.Box()
        return Rendered(root, self.ids, "\n".join(self.rules))

    # -- styling ----------------------------------------------------------

    def style(self, widget, element):
        """Gives `widget` a class of its own with the element's presentational keys as CSS."""
        self.count += 1
        name = f"wb-{self.scope}-{self.count}"
        widget.add_css_class(name)
        decls = []
        fg = colour(element.get("foreground", element.get("color") if element.get("type") == "text" else None), self.dark)
        if fg and not self.monochrome:
            decls.append(f"color: {fg};")
        bg = colour(element.get("background"), self.dark)
        if bg and not self.monochrome:
            decls.append(f"background-color: {bg};")
        padding = number(element.get("padding"))
        if padding is not None:
            decls.append(f"padding: {max(0, padding)}px;")
        radius = number(element.get("cornerRadius"))
        if radius is not None:
            decls.append(f"border-radius: {max(0, radius)}px;")
        size = number(element.get("fontSize"))
        if size is not None and size > 0:
            decls.append(f"font-size: {size}px;")
        weight = element.get("fontWeight")
        if isinstance(weight, str) and weight in FONT_WEIGHTS:
            decls.append(f"font-weight: {FONT_WEIGHTS[weight]};")
        opacity = number(element.get("opacity"))
        if opacity is not None:
            decls.append(f"opacity: {min(1, max(0, opacity))};")
        if decls:
            self.rules.append(f".{name} {{ {' '.join(decls)} }}")

    def remember(self, widget, element):
        ident = element.get("id")
        if isinstance(ident, str) and ident:
            self.ids[widget] = ident

    # -- elements ---------------------------------------------------------

    def element(self, element, parent_axis):
        kind = element.get("type")
        children = [c for c in element.get("children") or [] if isinstance(c, dict)]
        make = getattr(self, "make_" + kind, None) if kind in TYPES else None
        widget = make(element, children, parent_axis) if make else self.stack(element, children, Gtk.Orientation.VERTICAL)
        self.style(widget, element)
        self.remember(widget, element)
        return widget

    def stack(self, element, children, axis):
        box = Gtk.Box(orientation=axis, spacing=int(number(element.get("spacing"), default(element.get("type"), "spacing"))))
        cross = ALIGN.get(element.get("alignment"), Gtk.Align.CENTER)
        across = Gtk.Orientation.HORIZONTAL if axis == Gtk.Orientation.VERTICAL else Gtk.Orientation.VERTICAL
        for child in children:
            widget = self.element(child, axis)
            # Every child lines up as `alignment` says, but those that fill the stack across: a
            # divider, a colour, a bar, and a stack a spacer stretches that way.
            if not isinstance(widget, Gtk.Separator) and not widget.compute_expand(across):
                if axis == Gtk.Orientation.VERTICAL:
                    widget.set_halign(cross)
                else:
                    widget.set_valign(cross)
            box.append(widget)
        # A stack takes the room its content needs, centred as SwiftUI centres
        # it, and the whole length of its axis when a spacer pushes its content apart.
        pushes = any(c.get("type") == "spacer" for c in children)
        if axis == Gtk.Orientation.VERTICAL:
            box.set_valign(Gtk.Align.FILL if pushes else Gtk.Align.CENTER)
            box.set_vexpand(pushes)
        else:
            box.set_halign(Gtk.Align.FILL if pushes else Gtk.Align.CENTER)
            box.set_hexpand(pushes)
        return box

    def make_vstack(self, element, children, _):
        return self.stack(element, children, Gtk.Orientation.VERTICAL)

    def make_hstack(self, element, children, _):
        return self.stack(element, children, Gtk.Orientation.HORIZONTAL)

    def make_zstack(self, element, children, _):
        overlay = Gtk.Overlay()
        align = ALIGN.get(element.get("alignment"), Gtk.Align.CENTER)
        for index, child in enumerate(children):
            widget = self.element(child, Gtk.Orientation.VERTICAL)
            if index == 0:
                overlay.set_child(widget)
            else:
                widget.set_halign(align if widget.get_halign() == Gtk.Align.FILL else widget.get_halign())
                widget.set_valign(align if widget.get_valign() == Gtk.Align.FILL else widget.get_valign())
                overlay.add_overlay(widget)
        # Its first child sets its size: it takes no more room than that.
        return overlay

    def make_text(self, element, _children, _):
        label = Gtk.Label(label=bound_text(element, self.bindings), wrap=True, justify=Gtk.Justification.CENTER)
        label.set_ellipsize(3)  # Pango.EllipsizeMode.END
        lines = number(element.get("lineLimit"))
        if lines:
            label.set_lines(int(lines))
        label.add_css_class("wb-text")
        return label

    def make_image(self, element, _children, _):
        size = int(number(element.get("size"), default("image", "size")))
        image = None
        icon = element.get("icon")
        src = element.get("src")
        if isinstance(src, str):
            texture = texture_from_url(src)
            if texture is not None:
                # An image is `size` square whatever room it is given, as an icon is.
                image = Gtk.Image.new_from_paintable(texture)
        if image is None:
            image = Gtk.Image.new_from_icon_name(icon if isinstance(icon, str) and icon else "image-missing")
        image.set_pixel_size(size)
        image.set_halign(Gtk.Align.CENTER)
        image.set_valign(Gtk.Align.CENTER)
        name = accessible_name(element, self.bindings)
        if name:
            image.update_property([Gtk.AccessibleProperty.LABEL], [name])
        return image

    def make_spacer(self, element, _children, axis):
        spacer = Gtk.Box()
        length = int(number(element.get("minLength"), default("spacer", "minLength")))
        if axis == Gtk.Orientation.VERTICAL:
            spacer.set_vexpand(True)
            spacer.set_size_request(-1, length)
        else:
            spacer.set_hexpand(True)
            spacer.set_size_request(length, -1)
        return spacer

    def make_divider(self, _element, _children, axis):
        across = Gtk.Orientation.HORIZONTAL if axis == Gtk.Orientation.VERTICAL else Gtk.Orientation.VERTICAL
        return Gtk.Separator(orientation=across)

    def make_color(self, element, children, _):
        # The colour fills its parent; its children sit on it, centred as in a vstack.
        inner = self.stack(element, children, Gtk.Orientation.VERTICAL)
        inner.set_vexpand(True)
        box = Gtk.Box(orientation=Gtk.Orientation.VERTICAL)
        box.append(inner)
        box.set_halign(Gtk.Align.FILL)
        box.set_valign(Gtk.Align.FILL)
        box.set_hexpand(True)
        box.set_vexpand(True)
        fill = colour(element.get("color"), self.dark)
        if fill and not self.monochrome:
            self.count += 1
            name = f"wb-{self.scope}-fill-{self.count}"
            box.add_css_class(name)
            self.rules.append(f".{name} {{ background-color: {fill}; }}")
        return box

    def value_fraction(self, element):
        kind = element["type"]
        value = number(element.get("value"), default(kind, "value"))
        low = number(element.get("min"), default(kind, "min"))
        high = number(element.get("max"), default(kind, "max"))
        if high <= low:
            return 0.0
        return min(1.0, max(0.0, (value - low) / (high - low)))

    def make_progress(self, element, _children, _):
        bar = Gtk.ProgressBar(fraction=self.value_fraction(element))
        bar.set_valign(Gtk.Align.CENTER)
        bar.set_hexpand(True)
        name = accessible_name(element, self.bindings)
        if name:
            bar.update_property([Gtk.AccessibleProperty.LABEL], [name])
        return bar

    def make_gauge(self, element, _children, _):
        gauge = Gtk.LevelBar(min_value=0, max_value=1, value=self.value_fraction(element))
        gauge.set_valign(Gtk.Align.CENTER)
        gauge.set_hexpand(True)
        gauge.set_size_request(-1, 8)
        name = accessible_name(element, self.bindings)
        if name:
            gauge.update_property([Gtk.AccessibleProperty.LABEL], [name])
        return gauge

    def tappable(self, element, children, role, button=None):
        button = button or Gtk.Button(accessible_role=role)
        button.add_css_class("flat")
        button.add_css_class("wb-" + element["type"])
        if children:
            button.set_child(self.stack({"spacing": element.get("spacing")}, children, Gtk.Orientation.VERTICAL))
        else:
            button.set_child(Gtk.Label(label=accessible_name(element, self.bindings)))
        button.update_property([Gtk.AccessibleProperty.LABEL], [accessible_name(element, self.bindings)])
        button.set_cursor_from_name("pointer")
        ident = element.get("id") if isinstance(element.get("id"), str) else ""
        button.connect("clicked", lambda b: self.on_activate(ident, b))
        return button

    def make_link(self, element, children, _):
        return self.tappable(element, children, gtk_role("link"))

    def make_button(self, element, children, _):
        return self.tappable(element, children, gtk_role("button"))

    def make_toggle(self, element, children, _):
        # A toggle shows the state its view tree gives: a click reports the
        # tap, and the new state is drawn once the app's new tree arrives.
        on = element.get("isOn") is True
        button = self.tappable(element, children, None, Gtk.ToggleButton(active=on))

        def keep(toggle):
            if toggle.get_active() != on:
                toggle.handler_block(handler)
                toggle.set_active(on)
                toggle.handler_unblock(handler)
        handler = button.connect("toggled", keep)
        if on:
            button.add_css_class("wb-on")
        return button
