# Debian packages WidgetHost builds and tests with. Sourced by scripts/demo,
# scripts/test and .ci/run, so there is one list of each kind.
#   libdbus-1-dev pkg-config  the binding's systemLibrary (pkg-config dbus-1)
#   dbus                      dbus-daemon: the private buses of the tests and the demo
#   systemd                   busctl, a client the tests drive the host with
#   libglib2.0-bin            gdbus, the other client; glib-compile-schemas, which compiles
#                             widget-board's settings schema in a checkout
#   python3 python3-gi        a real GApplication as a host app
#   help2man                  the packages' man pages, made from --help
#   bubblewrap                bwrap, to run test callers sandboxed as Flatpak runs apps
#   gir1.2-gtk-4.0            GTK 4 for widget-board (renderers/gtk), the reference renderer
#   at-spi2-core python3-pyatspi xvfb xdotool
#                             the board's tests: a virtual display, the accessibility
#                             tree to find what is on screen, real pointer clicks
#   fonts-noto-color-emoji    the examples' emoji, drawn in the board's screenshots
#   libglib2.0-dev gcc        GLib's headers and a C compiler: docs/guides/app.md compiles a GApplication in C
#   libkf5dbusaddons-dev g++  KDBusService (KDE Frameworks) and Qt D-Bus: the same guide compiles a KDE app
#   gjs                       the same guide runs a GJS app; the GNOME Shell extension's
#                             tests run its modules outside the shell with it
WIDGETHOST_DEBS=(libdbus-1-dev pkg-config dbus systemd libglib2.0-bin python3 python3-gi help2man bubblewrap gir1.2-gtk-4.0 at-spi2-core python3-pyatspi xvfb xdotool fonts-noto-color-emoji libglib2.0-dev gcc libkf5dbusaddons-dev g++ gjs)
# What only the tests need besides, installed without the packages they
# recommend (the demo needs none of them, and takes a picture of GNOME Shell
# only where gnome-shell is installed already):
#   gnome-shell               a real GNOME Shell, on the virtual display and as a
#                             headless Wayland compositor (no Xwayland needed), for
#                             the extension's tests (renderers/gnome-shell)
#   plasma-sdk plasma-desktop plasmoidviewer, a real Plasma shell container, for the KDE
#                             Plasma applet's tests (renderers/plasma); plasma-desktop brings
#                             what plasmoidviewer needs and plasma-sdk does not name: Plasma's
#                             shell package structure (plasma-workspace), the desktop
#                             containment, the Breeze theme and icons
#   qml-module-org-kde-kitemmodels  what plasmoidviewer's configuration dialog imports,
#                             where the applet's gallery is
#   kwin-wayland              KWin as a headless Wayland compositor (its virtual backend), where
#                             the applet's taps carry xdg-activation tokens KWin mints; it brings
#                             KWindowSystem's Wayland plugin (kwayland-integration), which asks for them
#   cmake extra-cmake-modules qtdeclarative5-dev libkf5windowsystem-dev
#                             what builds the applet's QML module (Qt 5's QML and D-Bus,
#                             KWindowSystem's startup ids and activation tokens), with g++:
#                             its install script in the tests, and packaging/build-plasma-deb
#   sway waybar i3blocks yambar polybar grim
#                             status bars that load the snippets of docs/bars.md, shown and
#                             clicked: Waybar, i3blocks in swaybar and yambar in a headless
#                             sway, whose screen grim takes a picture of; polybar on the
#                             virtual display
WIDGETHOST_TEST_DEBS=(gnome-shell plasma-sdk plasma-desktop qml-module-org-kde-kitemmodels kwin-wayland cmake extra-cmake-modules qtdeclarative5-dev libkf5windowsystem-dev sway waybar i3blocks yambar polybar grim)

# Installs whichever of the packages are missing (with sudo when not root);
# with --tests, the tests' packages too.
ensure_packages() {
    local missing=() tests=()
    for p in "${WIDGETHOST_DEBS[@]}"; do
        deb_installed "$p" || missing+=("$p")
    done
    if [ "${1:-}" = --tests ]; then
        for p in "${WIDGETHOST_TEST_DEBS[@]}"; do
            deb_installed "$p" || tests+=("$p")
        done
    fi
    [ ${#missing[@]} -eq 0 ] && [ ${#tests[@]} -eq 0 ] && return 0
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    echo "Installing ${missing[*]} ${tests[*]} ..." >&2
    $sudo apt-get update -qq
    if [ ${#missing[@]} -gt 0 ]; then
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
    fi
    if [ ${#tests[@]} -gt 0 ]; then
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${tests[@]}" >/dev/null
    fi
}

deb_installed() {
    dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"
}
