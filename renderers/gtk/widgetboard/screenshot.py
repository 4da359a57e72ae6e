"""Saves what an X server shows as a PNG file: Xvfb's framebuffer file
(`Xvfb -fbdir DIR` keeps the screen in DIR/Xvfb_screen0, in XWD format),
converted without any image library.

    python3 -m widgetboard.screenshot DIR/Xvfb_screen0 OUT.png [X Y WIDTH HEIGHT]

With a rectangle, only that part of the screen is saved (a widget's tile).
It prints the size and how many distinct colours a sample of the pixels has,
so a caller can tell a blank picture from a drawn one.
"""
import struct
import sys
import zlib


def xwd_to_png(source, target, crop=None):
    """Converts a 24- or 32-bit ZPixmap XWD image, or the rectangle `crop`
    (x, y, width, height) of it; returns (width, height, distinct colours seen)."""
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
    left, top = 0, 0
    if crop is not None:
        x, y, w, h = crop
        left, top = max(0, min(x, width)), max(0, min(y, height))
        width, height = max(0, min(w, width - left)), max(0, min(h, height - top))
        if width == 0 or height == 0:
            raise ValueError(f"{source}: the rectangle {crop} is off the screen")
    step = max(1, min(16, height // 8))
    rows = []
    colours = set()
    for y in range(height):
        start = offset + (top + y) * bytes_per_line + left * 4
        line = data[start: start + width * 4]
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
        if y % step == 0:
            colours.update(bytes(row[i:i + 3]) for i in range(0, len(row), 3 * step))
        rows.append(b"\x00" + bytes(row))

    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xffffffff)
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
    png += chunk(b"IDAT", zlib.compress(b"".join(rows), 6)) + chunk(b"IEND", b"")
    with open(target, "wb") as f:
        f.write(png)
    return width, height, len(colours)


if __name__ == "__main__":
    w, h, n = xwd_to_png(sys.argv[1], sys.argv[2], tuple(int(v) for v in sys.argv[3:7]) if len(sys.argv) >= 7 else None)
    print(f"{sys.argv[2]}: {w}x{h}, {n} colours sampled")
