"""Saves what an X server shows as a PNG file: Xvfb's framebuffer file
(`Xvfb -fbdir DIR` keeps the screen in DIR/Xvfb_screen0, in XWD format),
converted without any image library.

    python3 -m widgetboard.screenshot DIR/Xvfb_screen0 OUT.png
"""
import struct
import sys
import zlib


def xwd_to_png(source, target):
    """Converts a 24- or 32-bit ZPixmap XWD image; returns (width, height, distinct colours seen)."""
    with open(source, "rb") as f:
        data = f.read()
    header = struct.unpack(">25I", data[:100])
    header_size, version, pixmap_format, depth, width, height = header[:6]
    byte_order, bits_per_pixel, bytes_per_line = header[7], header[11], header[12]
    ncolors = header[19]
    if version != 7 or pixmap_format != 2 or bits_per_pixel != 32:
        raise ValueError(f"{source}: not a 32-bit ZPixmap XWD image (version {version}, format {pixmap_format}, {bits_per_pixel} bpp)")
    offset = header_size + ncolors * 12
    little = byte_order == 0
    rows = []
    colours = set()
    for y in range(height):
        line = data[offset + y * bytes_per_line: offset + y * bytes_per_line + width * 4]
        if little:  # B G R X
            row = bytearray(width * 3)
            row[0::3] = line[2::4]
            row[1::3] = line[1::4]
            row[2::3] = line[0::4]
        else:  # X R G B
            row = bytearray(width * 3)
            row[0::3] = line[1::4]
            row[1::3] = line[2::4]
            row[2::3] = line[3::4]
        if y % 16 == 0:
            colours.update(bytes(row[i:i + 3]) for i in range(0, len(row), 48))
        rows.append(b"\x00" + bytes(row))

    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xffffffff)
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
    png += chunk(b"IDAT", zlib.compress(b"".join(rows), 6)) + chunk(b"IEND", b"")
    with open(target, "wb") as f:
        f.write(png)
    return width, height, len(colours)


if __name__ == "__main__":
    w, h, n = xwd_to_png(sys.argv[1], sys.argv[2])
    print(f"{sys.argv[2]}: {w}x{h}, {n} colours sampled")
