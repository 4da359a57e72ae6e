#!/usr/bin/python3
"""pointer.py: plugs a pointer into a wlroots compositor's seat, for the status
bars' tests, which run sway headless: wlroots' headless backend has no input
devices, and a seat with no pointer gives its clients none, so nothing in it can
be clicked. This client makes one with the wlr virtual pointer protocol
(zwlr_virtual_pointer_manager_v1, which sway serves), on the compositor in
$WAYLAND_DISPLAY, prints "ready" once the compositor has it, and holds it until
it is ended or the compositor goes. The pointer itself sends nothing: the
tests move and click it with sway's own commands (sway(5): seat <seat> cursor
set X Y, seat <seat> cursor press|release button1), as sway does a mouse's.

It speaks the Wayland wire protocol itself (Debian has no Python binding for
it): each message is the object's id, its length and opcode, and its
arguments, 32-bit words in the machine's order. Exits 1 saying what failed.
"""
import os
import socket
import struct
import sys

MANAGER = "zwlr_virtual_pointer_manager_v1"


class Connection:
    def __init__(self):
        display = os.environ.get("WAYLAND_DISPLAY", "wayland-0")
        path = display if display.startswith("/") else os.path.join(os.environ["XDG_RUNTIME_DIR"], display)
        self.socket = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.socket.connect(path)
        self.next_id = 2  # 1 is wl_display
        self.buffer = b""

    def new_id(self):
        self.next_id += 1
        return self.next_id - 1

    def send(self, target, opcode, *arguments):
        body = b""
        for argument in arguments:
            if isinstance(argument, str):
                text = argument.encode() + b"\0"
                body += struct.pack("=I", len(text)) + text + b"\0" * (-len(text) % 4)
            else:
                body += struct.pack("=I", argument)
        self.socket.sendall(struct.pack("=II", target, (8 + len(body)) << 16 | opcode) + body)

    def receive(self):
        """The next event: (object id, opcode, its arguments' bytes)."""
        while True:
            if len(self.buffer) >= 8:
                target, word = struct.unpack("=II", self.buffer[:8])
                size = word >> 16
                if len(self.buffer) >= size:
                    event, self.buffer = self.buffer[:size], self.buffer[size:]
                    return target, word & 0xFFFF, event[8:]
            data = self.socket.recv(4096)
            if not data:
                raise ConnectionError("the compositor closed the connection")
            self.buffer += data

    def roundtrip(self, on_event):
        """wl_display.sync: every event before its callback's done goes to on_event."""
        callback = self.new_id()
        self.send(1, 0, callback)
        while True:
            target, opcode, arguments = self.receive()
            if target == callback:
                return
            if target == 1 and opcode == 0:  # wl_display.error: object, code, message
                _, code, length = struct.unpack("=III", arguments[:12])
                raise ConnectionError(f"error {code}: {arguments[12:12 + length - 1].decode()}")
            on_event(target, opcode, arguments)


def main():
    connection = Connection()
    registry = connection.new_id()
    connection.send(1, 1, registry)  # wl_display.get_registry
    globals_ = {}

    def on_global(target, opcode, arguments):
        if target == registry and opcode == 0:  # wl_registry.global: name, interface, version
            name, length = struct.unpack("=II", arguments[:8])
            globals_[arguments[8:8 + length - 1].decode()] = name

    connection.roundtrip(on_global)
    if MANAGER not in globals_:
        sys.exit(f"pointer.py: the compositor does not serve {MANAGER}: {sorted(globals_)}")
    manager = connection.new_id()
    connection.send(registry, 0, globals_[MANAGER], MANAGER, 1, manager)  # wl_registry.bind
    connection.send(manager, 0, 0, connection.new_id())  # create_virtual_pointer on the default seat
    connection.roundtrip(lambda *_: None)
    print("ready", flush=True)
    # The pointer lasts as long as the connection: until the end, or the compositor's.
    while connection.socket.recv(4096):
        pass


if __name__ == "__main__":
    try:
        main()
    except (OSError, KeyError) as error:
        sys.exit(f"pointer.py: {error}")
