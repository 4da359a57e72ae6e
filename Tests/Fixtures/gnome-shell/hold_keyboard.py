#!/usr/bin/python3
"""hold_keyboard.py: holds the keyboard of the X display in $DISPLAY, as
another client may for a moment (an input method, a screen reader, a game),
until it is ended with SIGTERM; for GnomeShellTests.

    hold_keyboard.py     prints "held" once the X server gave it the keyboard

While it holds the keyboard every key comes to it, and the window with the
input focus sees the focus leave and come back only as grab and ungrab (a
shell's stage sees no change of focus of its own). It needs only libX11.
"""
import ctypes
import signal
import sys
import time

GRAB_MODE_ASYNC = 1
GRAB_SUCCESS = 0
CURRENT_TIME = 0

x11 = ctypes.CDLL("libX11.so.6")
x11.XOpenDisplay.restype = ctypes.c_void_p
x11.XOpenDisplay.argtypes = [ctypes.c_char_p]
x11.XDefaultRootWindow.restype = ctypes.c_ulong
x11.XDefaultRootWindow.argtypes = [ctypes.c_void_p]
x11.XGrabKeyboard.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_ulong]
x11.XUngrabKeyboard.argtypes = [ctypes.c_void_p, ctypes.c_ulong]
x11.XSync.argtypes = [ctypes.c_void_p, ctypes.c_int]
x11.XCloseDisplay.argtypes = [ctypes.c_void_p]


def main():
    display = x11.XOpenDisplay(None)
    if not display:
        sys.exit("hold_keyboard.py: cannot open the X display named in $DISPLAY")
    root = x11.XDefaultRootWindow(display)
    # Another client (the shell, in a keybinding) may hold it for a moment: try again for a while.
    for _ in range(50):
        status = x11.XGrabKeyboard(display, root, False, GRAB_MODE_ASYNC, GRAB_MODE_ASYNC, CURRENT_TIME)
        if status == GRAB_SUCCESS:
            break
        time.sleep(0.1)
    else:
        sys.exit(f"hold_keyboard.py: the X server refused the keyboard (XGrabKeyboard status {status})")
    x11.XSync(display, False)
    print("held", flush=True)

    def release(_signal, _frame):
        x11.XUngrabKeyboard(display, CURRENT_TIME)
        x11.XSync(display, False)
        x11.XCloseDisplay(display)
        sys.exit(0)

    signal.signal(signal.SIGTERM, release)
    while True:
        signal.pause()


if __name__ == "__main__":
    main()
