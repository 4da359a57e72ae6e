#!/usr/bin/python3
"""Compare what a running service introspects with the dbus/*.xml files.

usage: compare_introspection.py INTROSPECTED_XML_FILE INTERFACE_XML...

Each interface file declares one interface. The introspected document must
contain each of them with exactly the same methods, signals, properties,
arguments (name, type, direction) and annotations, in the same order.
Prints the first difference and exits 1, or prints "equal" and exits 0.
Uses only Python's own XML parser, so the check does not depend on the
code under test.
"""
import sys
import xml.etree.ElementTree as ET


def canon(element):
    """A nested tuple form of an element: tag, sorted attributes, children."""
    attrs = dict(element.attrib)
    if element.tag == "arg" and "direction" not in attrs and element_parent_is_method.get(element):
        attrs["direction"] = "in"
    return (element.tag, tuple(sorted(attrs.items())), tuple(canon(c) for c in element))


element_parent_is_method = {}


def interfaces(path):
    root = ET.parse(path).getroot()
    for method in root.iter("method"):
        for arg in method.findall("arg"):
            element_parent_is_method[arg] = True
    return {i.get("name"): i for i in root.findall("interface")}


def main():
    served = interfaces(sys.argv[1])
    for path in sys.argv[2:]:
        for name, declared in interfaces(path).items():
            if name not in served:
                print(f"{name} (from {path}) is not served; served: {sorted(served)}")
                return 1
            a, b = canon(declared), canon(served[name])
            if a != b:
                print(f"{name} differs from {path}:\n declared: {a}\n served:   {b}")
                return 1
    print("equal")
    return 0


if __name__ == "__main__":
    sys.exit(main())
