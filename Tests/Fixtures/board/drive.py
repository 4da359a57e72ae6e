#!/usr/bin/python3
"""drive.py: uses widget-board as a person does, for the board's tests.

It finds what is on screen through the AT-SPI accessibility tree
(python3-pyatspi) and clicks it with real pointer events (xdotool), on the
X display in $DISPLAY. With --app NAME it looks only inside the application
of that name (gnome-shell, whose actors are placed on the screen itself):

    drive.py find NAME [--role ROLE] [--timeout S]   wait for an element; print it as JSON (ROLE may
                                                     list roles any of which will do: "toggle button|push button")
    drive.py click NAME [--role ROLE] [--timeout S] [--button N]
                                                     find it, then click its centre (with
                                                     pointer button N: 1, or 3 for a secondary click)
    drive.py hover NAME [--role ROLE] [--timeout S]  find it, then move the pointer onto it
    drive.py clickat X Y [--button N]                click at X, Y of the screen
    drive.py focus NAME [--role ROLE] [--timeout S]  find it and give it the keyboard focus
    drive.py focused [NAME] [--timeout S]            wait until an element (named NAME) has the
                                                     keyboard focus; print it as JSON
    drive.py gone NAME [--timeout S]                 wait until no element is named NAME
    drive.py key KEY...                              press keys (xdotool names: Tab, Return)
    drive.py window                                  print the board window's place and size
    drive.py park                                    move the pointer off the board (no hover, no tooltip)
    drive.py tree                                    print the board's accessible tree

An element is printed as {"name", "role", "x", "y", "width", "height", "seen", "states"},
x and y on the screen, seen the Unix time it was first found showing, states its
AT-SPI states ("checked", "pressed", "focused" ...). Exits 1
(saying what it saw) when nothing matches in time.
"""
import argparse
import json
import re
import subprocess
import sys
import time

import pyatspi

WINDOW_TITLE = "Widget Board"
APP = None  # --app: the only application looked in, whose extents are the screen's
PREFIX = False  # --prefix: a name that begins with the one asked for matches too


def board_apps():
    desktop = pyatspi.Registry.getDesktop(0)
    for i in range(desktop.childCount):
        app = desktop.getChildAtIndex(i)
        if app is not None and (APP is None or app.name == APP):
            yield app


def walk(accessible, depth=0):
    """Every object under `accessible`; one the board destroys while we look
    (a widget redrawn by its timeline) is skipped."""
    if accessible is None or depth > 60:
        return
    yield accessible, depth
    try:
        children = [accessible.getChildAtIndex(i) for i in range(accessible.childCount)]
    except Exception:  # noqa: BLE001 - it went away
        return
    for child in children:
        yield from walk(child, depth + 1)


def showing(accessible):
    """Whether it is drawn: GTK 4 marks what is mapped VISIBLE (and SHOWING only in later versions); gnome-shell
    marks an actor VISIBLE while it is itself shown, even inside a hidden popup menu, and SHOWING when it is mapped,
    as GTK 3 (Waybar) does a widget inside a hidden one."""
    try:
        states = accessible.getState()
        if APP in ("gnome-shell", "waybar"):
            return states.contains(pyatspi.STATE_SHOWING)
        return states.contains(pyatspi.STATE_VISIBLE) or states.contains(pyatspi.STATE_SHOWING)
    except Exception:  # noqa: BLE001 - an object that went away while we looked
        return False


def has_focus(accessible):
    try:
        return accessible.getState().contains(pyatspi.STATE_FOCUSED)
    except Exception:  # noqa: BLE001 - an object that went away while we looked
        return False


def matches(name, role):
    for app in board_apps():
        for accessible, _ in walk(app):
            try:
                if (accessible.name.startswith(name) if PREFIX else accessible.name == name) and (role is None or accessible.getRoleName() in role.split("|")) and showing(accessible):
                    yield accessible
            except Exception:  # noqa: BLE001
                continue


def window_of(accessible):
    """The window an element is in (the board's, the gallery's): its frame or dialog, else None."""
    while accessible is not None:
        if accessible.getRoleName() in ("frame", "dialog", "window") and accessible.name:
            return accessible
        accessible = accessible.parent
    return None


def window_geometry(title):
    """Where the window titled `title` is on the screen and its size (X, Y,
    WIDTH, HEIGHT), as xdotool reports it; empty when there is no such window."""
    out = subprocess.run(["xdotool", "search", "--name", f"^{re.escape(title)}$", "getwindowgeometry", "--shell"],
                         capture_output=True, text=True).stdout
    return {k: int(v) for k, v in (line.split("=", 1) for line in out.splitlines() if "=" in line) if v.isdigit()}


def window_origin(window):
    """Where a window's content is on the screen: GTK reports extents in window coordinates,
    which start inside the margin a client-side decorated window keeps around itself (for its
    shadow) — half of what its X window is larger than the window's extents."""
    title = window.name if window is not None else WINDOW_TITLE
    values = window_geometry(title)
    x, y = values.get("X", 0), values.get("Y", 0)
    if window is not None and "WIDTH" in values:
        extents = window.queryComponent().getExtents(pyatspi.WINDOW_COORDS)
        x += max(0, values["WIDTH"] - extents.width) // 2
        y += max(0, values.get("HEIGHT", 0) - extents.height) // 2
    return x, y


def describe(accessible):
    states = sorted(pyatspi.stateToString(s) for s in accessible.getState().getStates())
    if APP is not None:
        extents = accessible.queryComponent().getExtents(pyatspi.DESKTOP_COORDS)
        return {"name": accessible.name, "role": accessible.getRoleName(), "x": extents.x, "y": extents.y,
                "width": extents.width, "height": extents.height, "seen": time.time(), "states": states}
    extents = accessible.queryComponent().getExtents(pyatspi.WINDOW_COORDS)
    ox, oy = window_origin(window_of(accessible))
    return {"name": accessible.name, "role": accessible.getRoleName(), "x": ox + extents.x, "y": oy + extents.y,
            "width": extents.width, "height": extents.height, "seen": time.time(), "states": states}


def describe_briefly(accessible):
    try:
        return f"{accessible.getRoleName()}:{accessible.name}" if accessible.name else ""
    except Exception:  # noqa: BLE001 - it went away
        return ""


def find(name, role, timeout):
    deadline = time.monotonic() + timeout
    while True:
        for accessible in matches(name, role):
            try:
                found = describe(accessible)
            except Exception:  # noqa: BLE001 - it went away as we looked: look again
                continue
            if found["width"] > 0 and found["height"] > 0:
                return found
        if time.monotonic() > deadline:
            names = sorted({describe_briefly(a) for app in board_apps() for a, _ in walk(app)} - {""})
            sys.exit(f"drive.py: nothing named {name!r}{' with role ' + role if role else ''} is showing; "
                     f"named elements: {names}")
        time.sleep(0.05)


def settled(name, role, timeout):
    """What `find` finds, once it stands still: the same place and size in two
    looks 0.15 s apart. A person clicks what has stopped moving; a revealer
    sliding open or a window still being laid out moves what is in it."""
    deadline = time.monotonic() + timeout
    found = find(name, role, timeout)
    while True:
        time.sleep(0.15)
        again = find(name, role, max(deadline - time.monotonic(), 0))
        if all(again[k] == found[k] for k in ("x", "y", "width", "height")) or time.monotonic() > deadline:
            return again
        found = again


def move_to(x, y):
    """Moves the pointer to x, y and waits until it is there (xdotool's --sync
    waits for a motion, so a pointer already there is left alone)."""
    out = subprocess.run(["xdotool", "getmouselocation", "--shell"], capture_output=True, text=True).stdout
    here = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
    if (here.get("X"), here.get("Y")) != (str(x), str(y)):
        subprocess.run(["xdotool", "mousemove", "--sync", str(x), str(y)], check=True)
    time.sleep(0.1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("command", choices=["find", "click", "clickat", "hover", "focus", "focused", "gone", "key", "window", "park", "tree"])
    parser.add_argument("args", nargs="*")
    parser.add_argument("--role")
    parser.add_argument("--timeout", type=float, default=10)
    parser.add_argument("--app")
    parser.add_argument("--button", type=int, default=1)
    parser.add_argument("--prefix", action="store_true", help="a name that begins with NAME matches too")
    options = parser.parse_args()
    global APP, PREFIX
    APP = options.app
    PREFIX = options.prefix
    if options.command == "focus":
        # As a person does: with the pointer over the window, Tab until it has the focus.
        found = find(options.args[0], options.role, options.timeout)
        move_to(found["x"], found["y"] - 4)
        for _ in range(60):
            if any(has_focus(a) for a in matches(options.args[0], options.role)):
                break
            subprocess.run(["xdotool", "key", "Tab"], check=True)
            time.sleep(0.08)
        else:
            sys.exit(f"drive.py: Tab never moved the keyboard focus to {options.args[0]!r}")
    elif options.command in ("find", "click", "hover"):
        found = (find if options.command == "find" else settled)(options.args[0], options.role, options.timeout)
        if options.command in ("click", "hover"):
            move_to(found["x"] + found["width"] // 2, found["y"] + found["height"] // 2)
        if options.command == "click":
            subprocess.run(["xdotool", "click", str(options.button)], check=True)
        print(json.dumps(found), flush=True)
    elif options.command == "clickat":
        move_to(int(options.args[0]), int(options.args[1]))
        subprocess.run(["xdotool", "click", str(options.button)], check=True)
    elif options.command == "focused":
        deadline = time.monotonic() + options.timeout
        while True:
            found = [a for app in board_apps() for a, _ in walk(app) if has_focus(a)]
            named = [a for a in found if not options.args or a.name == options.args[0]]
            if named:
                print(json.dumps(describe(named[0])), flush=True)
                break
            if time.monotonic() > deadline:
                sys.exit(f"drive.py: {options.args[0] if options.args else 'nothing'!r} has no keyboard focus; "
                         f"the focus is on {[describe_briefly(a) for a in found]}")
            time.sleep(0.05)
    elif options.command == "gone":
        deadline = time.monotonic() + options.timeout
        while any(True for _ in matches(options.args[0], None)):
            if time.monotonic() > deadline:
                sys.exit(f"drive.py: {options.args[0]!r} is still showing")
            time.sleep(0.05)
    elif options.command == "window":
        values = window_geometry(WINDOW_TITLE)
        if "WIDTH" not in values:
            sys.exit(f"drive.py: no window titled {WINDOW_TITLE!r} is on the screen")
        print(json.dumps({"name": WINDOW_TITLE, "role": "frame", "x": values.get("X", 0), "y": values.get("Y", 0),
                          "width": values["WIDTH"], "height": values.get("HEIGHT", 0), "seen": time.time()}))
    elif options.command == "park":
        out = subprocess.run(["xdotool", "getdisplaygeometry"], capture_output=True, text=True).stdout.split()
        move_to(int(out[0]) - 1, int(out[1]) - 1)
        time.sleep(0.5)  # tooltips and hover effects fade
    elif options.command == "key":
        subprocess.run(["xdotool", "key", "--delay", "80", *options.args], check=True)
    else:
        for app in board_apps():
            for accessible, depth in walk(app):
                print("  " * depth + f"{accessible.getRoleName()}: {accessible.name!r}")


if __name__ == "__main__":
    main()
