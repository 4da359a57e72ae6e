"""The widget gallery: adding, configuring and removing widgets.

The gallery lists every app's widget bundle (Widgets.ListBundles): each kind's
name, description and families. Picking a family places the widget
(Widgets.AddWidget); a configurable kind first asks for its parameters, with
the app's own choices for dynamic ones (Widgets.GetConfigurationOptions). The
same form edits a placed widget's configuration (Widget.Configure). See
docs/board.md.
"""
import json
import os
from gettext import gettext as _

import gi

gi.require_version("Gtk", "4.0")
gi.require_version("Gio", "2.0")
from gi.repository import Gio, GLib, Gtk  # noqa: E402

from .mirror import error_text  # noqa: E402
from .vocabulary import FAMILY_SIZES  # noqa: E402

WIDGETS = "org.widgethost.Host1.Widgets"
APPS = "org.widgethost.Host1.Apps"

def N_(text):
    """Marks a string to translate where it is used."""
    return text


FAMILY_NAMES = {
    "systemSmall": N_("Small"), "systemMedium": N_("Medium"), "systemLarge": N_("Large"),
    "systemExtraLarge": N_("Extra Large"), "accessoryCircular": N_("Circular"),
    "accessoryRectangular": N_("Rectangular"), "accessoryInline": N_("Inline"), "accessoryCorner": N_("Corner"),
}


def family_name(family):
    return _(FAMILY_NAMES[family]) if family in FAMILY_NAMES else family


class Kind:
    """One widget kind of an app's bundle, as the gallery shows it."""

    def __init__(self, app_id, app_name, entry):
        self.app_id = app_id
        self.app_name = app_name
        self.kind = entry.get("kind", "")
        self.name = entry.get("displayName") or self.kind
        self.description = entry.get("description") or ""
        self.families = [f for f in entry.get("families", []) if isinstance(f, str)]
        configuration = entry.get("configuration") if isinstance(entry.get("configuration"), dict) else {}
        self.parameters = [p for p in configuration.get("parameters", []) if isinstance(p, dict) and p.get("name")]


class Catalogue:
    """The bundles the host knows, by app id and kind, with the apps' names."""

    def __init__(self):
        self.kinds = {}

    def load(self, bundles, apps):
        names = {app_id: details.get("name") for app_id, details in apps}
        self.kinds = {}
        for app_id, text in bundles:
            try:
                entries = json.loads(text).get("widgets", [])
            except (ValueError, AttributeError):
                continue
            for entry in entries:
                if isinstance(entry, dict) and entry.get("kind"):
                    self.kinds[(app_id, entry["kind"])] = Kind(app_id, names.get(app_id) or app_id, entry)

    def kind(self, app_id, kind):
        return self.kinds.get((app_id, kind))

    def by_app(self):
        apps = {}
        for kind in self.kinds.values():
            apps.setdefault((kind.app_name.casefold(), kind.app_id), []).append(kind)
        return [kinds for _, kinds in sorted(apps.items())]


def refresh_catalogue(mirror, catalogue, done):
    """Reads ListBundles and ListApps into `catalogue`; `done(error_or_None)`."""
    def bundles_read(bundles, error):
        if error is not None:
            done(error)
            return

        def apps_read(apps, _error):
            catalogue.load(bundles[0], apps[0] if apps else [])
            done(None)
        mirror.call_root(APPS, "ListApps", None, apps_read)
    mirror.call_root(WIDGETS, "ListBundles", None, bundles_read)


class ConfigurationForm(Gtk.Box):
    """The parameters of one kind: a text entry for each plain parameter and,
    for each dynamic one, the app's choices as radio buttons, asked for with
    the configuration chosen so far."""

    def __init__(self, mirror, kind, configuration):
        super().__init__(orientation=Gtk.Orientation.VERTICAL, spacing=10)
        self.mirror = mirror
        self.kind = kind
        self.values = dict(configuration)  # name -> GLib.Variant, kept for keys the form does not show
        self.entries = {}
        self.choices = {}
        for parameter in kind.parameters:
            name = parameter["name"]
            title = parameter.get("title") if isinstance(parameter.get("title"), str) else name
            heading = Gtk.Label(label=title, xalign=0)
            heading.add_css_class("heading")
            self.append(heading)
            if parameter.get("dynamic") is True:
                box = Gtk.Box(orientation=Gtk.Orientation.VERTICAL, spacing=4)
                box.update_property([Gtk.AccessibleProperty.LABEL], [title])
                box.append(Gtk.Label(label=_("Asking the app for the choices…"), xalign=0))
                self.choices[name] = box
                self.append(box)
            else:
                entry = Gtk.Entry(placeholder_text=title)
                current = self.values.get(name)
                if current is not None and current.get_type_string() == "s":
                    entry.set_text(current.get_string())
                elif current is not None:  # a value the form cannot show as text is kept unless edited
                    entry.set_placeholder_text(current.print_(False))
                entry.widget_board_edited = False
                entry.connect("changed", lambda e: setattr(e, "widget_board_edited", True))
                entry.update_property([Gtk.AccessibleProperty.LABEL], [title])
                self.entries[name] = entry
                self.append(entry)
        for name in self.choices:
            self.ask(name)

    def ask(self, name):
        box = self.choices[name]
        args = GLib.Variant("(sssa{sv})", (self.kind.app_id, self.kind.kind, name, self.configuration()))

        def answered(result, error):
            while (child := box.get_first_child()) is not None:
                box.remove(child)
            if error is not None:
                box.append(Gtk.Label(label=_("{app} did not give its choices: {error}").format(
                    app=self.kind.app_name, error=error_text(error)),
                                     xalign=0, wrap=True))
                return
            group = None
            current = self.values.get(name)
            current = current.get_string() if current is not None and current.get_type_string() == "s" else None
            for identifier, title in result[0]:
                button = Gtk.CheckButton(label=title, group=group, accessible_role=Gtk.AccessibleRole.RADIO)
                group = group or button
                button.widget_board_identifier = identifier
                button.set_active(identifier == current)
                button.connect("toggled", self.on_choice, name)
                box.append(button)
            if group is None:
                box.append(Gtk.Label(label=_("The app offers no choices."), xalign=0))
        self.mirror.call_root(WIDGETS, "GetConfigurationOptions", args, answered)

    def on_choice(self, button, name):
        if button.get_active():
            self.values[name] = GLib.Variant("s", button.widget_board_identifier)

    def configuration(self):
        """What the form says, as the a{sv} AddWidget and Configure take."""
        values = dict(self.values)
        for name, entry in self.entries.items():
            text = entry.get_text()
            if text:
                values[name] = GLib.Variant("s", text)
            elif entry.widget_board_edited or (name in values and values[name].get_type_string() == "s"):
                values.pop(name, None)
        return values


@Gtk.Template(filename=os.path.join(os.path.dirname(__file__), "gallery.ui"))
class Gallery(Gtk.Window):
    """The gallery window: every kind of every app's bundle, by app, with a
    button per family; a configurable kind asks for its parameters first."""
    __gtype_name__ = "WbGallery"
    stack = Gtk.Template.Child()
    list = Gtk.Template.Child()

    def __init__(self, board):
        super().__init__(transient_for=board)
        self.board = board
        refresh_catalogue(board.mirror, board.catalogue, self.show_kinds)

    def clear(self, box):
        while (child := box.get_first_child()) is not None:
            box.remove(child)

    def show_kinds(self, error):
        self.clear(self.list)
        self.board.on_catalogue()
        if error is not None:
            self.list.append(Gtk.Label(wrap=True, label=_("WidgetHost did not list the widgets: {error}").format(
                error=error_text(error))))
            return
        apps = self.board.catalogue.by_app()
        if not apps:
            self.list.append(Gtk.Label(label=_("No app offers widgets yet. Apps publish them with RegisterWidgets."),
                                       wrap=True))
        for kinds in apps:
            heading = Gtk.Label(label=kinds[0].app_name, xalign=0)
            heading.add_css_class("title-3")
            self.list.append(heading)
            for kind in kinds:
                self.list.append(self.kind_row(kind))

    def kind_row(self, kind):
        row = Gtk.Box(orientation=Gtk.Orientation.VERTICAL, spacing=4)
        row.add_css_class("wb-gallery-kind")
        title = Gtk.Label(label=kind.name, xalign=0)
        title.add_css_class("heading")
        row.append(title)
        if kind.description:
            row.append(Gtk.Label(label=kind.description, xalign=0, wrap=True))
        families = Gtk.Box(orientation=Gtk.Orientation.HORIZONTAL, spacing=6)
        for family in kind.families:
            width, height = FAMILY_SIZES.get(family, (0, 0))
            button = Gtk.Button(label=family_name(family))
            button.set_tooltip_text(f"{family}, {width}×{height}")
            button.update_property([Gtk.AccessibleProperty.LABEL],
                                   [_("Add {kind}, {family}").format(kind=kind.name, family=family_name(family))])
            button.connect("clicked", lambda _b, f=family: self.pick(kind, f))
            families.append(button)
        row.append(families)
        return row

    def pick(self, kind, family):
        if not kind.parameters:
            self.board.add_widget(kind, family, {}, self.placed)
            return
        page = ConfigurePage(self.board, kind, f"{kind.name} — {family_name(family)}", {}, _("Add to Board"),
                             lambda configuration: self.board.add_widget(kind, family, configuration, self.placed),
                             self.back)
        old = self.stack.get_child_by_name("configure")
        if old is not None:
            self.stack.remove(old)
        self.stack.add_named(page, "configure")
        self.stack.set_visible_child_name("configure")

    def back(self):
        self.stack.set_visible_child_name("kinds")

    def placed(self, error):
        if error is None:
            self.close()
        else:
            page = self.stack.get_child_by_name("configure")
            if page is not None and self.stack.get_visible_child_name() == "configure":
                page.problem(error)
            else:
                self.list.prepend(Gtk.Label(label=_("Not added: {error}").format(error=error_text(error)), wrap=True))


@Gtk.Template(filename=os.path.join(os.path.dirname(__file__), "configure.ui"))
class ConfigurePage(Gtk.Box):
    """A kind's configuration form with a button that confirms it: `on_confirm(configuration)`;
    the other button goes back with `on_back`, or closes the window when it is None."""
    __gtype_name__ = "WbConfigurePage"
    heading = Gtk.Template.Child()
    message = Gtk.Template.Child()
    back_button = Gtk.Template.Child()
    confirm_button = Gtk.Template.Child()

    def __init__(self, board, kind, heading, configuration, confirm, on_confirm, on_back):
        super().__init__()
        self.heading.set_label(heading)
        self.form = ConfigurationForm(board.mirror, kind, configuration)
        self.insert_child_after(self.form, self.heading)
        self.back_button.set_label(_("Back") if on_back else _("Cancel"))
        self.confirm_button.set_label(confirm)
        self.confirmed, self.went_back = on_confirm, on_back

    @Gtk.Template.Callback()
    def on_back(self, _button):
        if self.went_back:
            self.went_back()
        else:
            self.get_root().close()

    @Gtk.Template.Callback()
    def on_confirm(self, _button):
        self.confirmed(self.form.configuration())

    def problem(self, error):
        self.message.set_label(error_text(error))
        self.message.set_visible(True)


@Gtk.Template(filename=os.path.join(os.path.dirname(__file__), "edit.ui"))
class EditWindow(Gtk.Window):
    """Edits a placed widget's configuration with the gallery's form."""
    __gtype_name__ = "WbEditWindow"
    scrolled = Gtk.Template.Child()

    def __init__(self, board, tile, kind):
        super().__init__(title=_("Edit {kind}").format(kind=kind.name), transient_for=board)
        configuration = {}
        value = tile.proxy.get_cached_property("Configuration")
        if value is not None:
            configuration = {key: value.lookup_value(key, None) for key in value.keys()}
        self.page = ConfigurePage(board, kind, f"{kind.name} — {family_name(tile.family)}", configuration, _("Save"),
                                  lambda c: board.configure(tile, c, self.saved), None)
        self.scrolled.set_child(self.page)

    def saved(self, error):
        if error is None:
            self.close()
        else:
            self.page.problem(error)
