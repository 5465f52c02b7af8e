#!/usr/bin/env python3
"""Renders a terminal capture with ANSI colour escapes (what
`tmux capture-pane -e -p` prints) to a PNG, the way a terminal would show it.

    render_ansi.py CAPTURE PNG [--cols N] [--rows N] [--font-size PX] [--title TEXT]

Understands SGR: reset, bold, dim, italic, underline, reverse (and their
offs), the 8/16 colours (30-37, 90-97, 40-47, 100-107), 256 colours
(38;5;N / 48;5;N), true colour (38;2;R;G;B) and the defaults (39/49).
Other escapes are dropped. Bold is drawn with the bold face, not as a
brighter colour. Needs Debian's python3-pil and fonts-dejavu-core.
"""
import argparse
import re
import sys
import unicodedata

from PIL import Image, ImageDraw, ImageFont

FONT_DIR = "/usr/share/fonts/truetype/dejavu/"
FONTS = {
    (False, False): "DejaVuSansMono.ttf",
    (True, False): "DejaVuSansMono-Bold.ttf",
    (False, True): "DejaVuSansMono-Oblique.ttf",
    (True, True): "DejaVuSansMono-BoldOblique.ttf",
}

# A dark theme; "white" (37) sits below the default foreground, so text the
# console draws as dim (white on the default background) reads as dimmer.
DEFAULT_FG = (220, 223, 228)
DEFAULT_BG = (24, 26, 31)
ANSI16 = [
    (40, 42, 46),     # black
    (224, 92, 92),    # red
    (130, 200, 100),  # green
    (229, 192, 90),   # yellow
    (97, 160, 235),   # blue
    (198, 120, 221),  # magenta
    (86, 190, 200),   # cyan
    (160, 165, 175),  # white
    (92, 99, 112),    # bright black
    (240, 120, 120),  # bright red
    (160, 225, 130),  # bright green
    (240, 210, 120),  # bright yellow
    (130, 185, 250),  # bright blue
    (215, 150, 235),  # bright magenta
    (120, 215, 225),  # bright cyan
    (240, 242, 245),  # bright white
]


def xterm256(n):
    if n < 16:
        return ANSI16[n]
    if n < 232:
        n -= 16
        steps = [0, 95, 135, 175, 215, 255]
        return (steps[n // 36], steps[(n // 6) % 6], steps[n % 6])
    g = 8 + (n - 232) * 10
    return (g, g, g)


class Style:
    __slots__ = ("fg", "bg", "bold", "dim", "italic", "underline", "reverse")

    def __init__(self):
        self.reset()

    def reset(self):
        self.fg = None  # None: the default colour
        self.bg = None
        self.bold = self.dim = self.italic = self.underline = self.reverse = False

    def copy(self):
        s = Style()
        for k in self.__slots__:
            setattr(s, k, getattr(self, k))
        return s

    def colours(self):
        fg = self.fg if self.fg is not None else DEFAULT_FG
        bg = self.bg if self.bg is not None else DEFAULT_BG
        if self.reverse:
            fg, bg = bg, fg
        if self.dim:
            fg = tuple((c + b) // 2 for c, b in zip(fg, bg))
        return fg, bg


def apply_sgr(style, params):
    ps = [int(p) if p.isdigit() else 0 for p in params.split(";")] if params else [0]
    i = 0
    while i < len(ps):
        p = ps[i]
        if p == 0:
            style.reset()
        elif p == 1:
            style.bold = True
        elif p == 2:
            style.dim = True
        elif p == 3:
            style.italic = True
        elif p == 4:
            style.underline = True
        elif p == 7:
            style.reverse = True
        elif p == 22:
            style.bold = style.dim = False
        elif p == 23:
            style.italic = False
        elif p == 24:
            style.underline = False
        elif p == 27:
            style.reverse = False
        elif 30 <= p <= 37:
            style.fg = ANSI16[p - 30]
        elif 90 <= p <= 97:
            style.fg = ANSI16[p - 90 + 8]
        elif 40 <= p <= 47:
            style.bg = ANSI16[p - 40]
        elif 100 <= p <= 107:
            style.bg = ANSI16[p - 100 + 8]
        elif p == 39:
            style.fg = None
        elif p == 49:
            style.bg = None
        elif p in (38, 48) and i + 1 < len(ps):
            colour = None
            if ps[i + 1] == 5 and i + 2 < len(ps):
                colour = xterm256(ps[i + 2] % 256)
                i += 2
            elif ps[i + 1] == 2 and i + 4 < len(ps):
                colour = tuple(max(0, min(255, c)) for c in ps[i + 2 : i + 5])
                i += 4
            if p == 38:
                style.fg = colour
            else:
                style.bg = colour
        i += 1


ESCAPE = re.compile(r"\x1b(?:\[([0-9;?]*)([@-~])|\][^\x07\x1b]*(?:\x07|\x1b\\)|[()][0-9A-Za-z]|.)")


def parse(text, cols, rows):
    """The screen as rows of (char, Style) cells. The style carries over
    from one line to the next, as tmux writes it."""
    style = Style()
    screen = []
    for line in text.split("\n")[:rows]:
        cells = []
        pos = 0
        for m in ESCAPE.finditer(line):
            for ch in line[pos : m.start()]:
                put(cells, ch, style)
            pos = m.end()
            if m.group(2) == "m":
                apply_sgr(style, m.group(1))
        for ch in line[pos:]:
            put(cells, ch, style)
        # tmux leaves out the cells a clear-to-end-of-line coloured (ncurses
        # clears the title bar that way): a line whose last cell has a
        # background colour keeps it to the edge.
        if cells and len(cells) < cols and cells[-1][1].bg is not None:
            fill = Style()
            fill.bg = cells[-1][1].bg
            cells.extend([(" ", fill)] * (cols - len(cells)))
        screen.append(cells[:cols])
    while len(screen) < rows:
        screen.append([])
    return screen


def put(cells, ch, style):
    if ch in "\r\x07" or (ord(ch) < 32 and ch != "\t"):
        return
    if ch == "\t":
        for _ in range(8 - len(cells) % 8):
            cells.append((" ", style.copy()))
        return
    if unicodedata.combining(ch) and cells:
        c, s = cells[-1]
        cells[-1] = (c + ch, s)
        return
    cells.append((ch, style.copy()))
    if unicodedata.east_asian_width(ch) in ("W", "F"):
        cells.append(("", style.copy()))  # the second half of a wide character


def render(screen, cols, rows, size, out, title=None):
    fonts = {k: ImageFont.truetype(FONT_DIR + v, size) for k, v in FONTS.items()}
    regular = fonts[(False, False)]
    cw = regular.getlength("M")
    ascent, descent = regular.getmetrics()
    ch = ascent + descent + 2
    pad = round(size * 0.9)
    bar = round(size * 1.9) if title is not None else 0
    width = round(cols * cw) + 2 * pad
    height = rows * ch + 2 * pad + bar
    img = Image.new("RGB", (width, height), DEFAULT_BG)
    d = ImageDraw.Draw(img)
    if title is not None:
        # A plain window bar, so the picture reads as a terminal.
        d.rectangle([0, 0, width, bar - 1], fill=(44, 47, 54))
        r = round(size * 0.35)
        for k, c in enumerate([(237, 106, 94), (245, 191, 79), (98, 197, 84)]):
            cx, cy = pad + r + k * (3 * r), bar // 2
            d.ellipse([cx - r, cy - r, cx + r, cy + r], fill=c)
        tw = regular.getlength(title)
        d.text(((width - tw) / 2, (bar - ascent - descent) / 2), title, font=regular, fill=(170, 175, 185))
    for y, cells in enumerate(screen):
        top = bar + pad + y * ch
        for x, (c, s) in enumerate(cells):
            fg, bg = s.colours()
            left = pad + x * cw
            if bg != DEFAULT_BG:
                d.rectangle([round(left), top, round(left + cw) - 1, top + ch - 1], fill=bg)
            if c == "\u2588":
                # The full block fills its cell, as a terminal draws it: the
                # font's glyph at a fractional advance leaves seams in a bar.
                d.rectangle([round(left), top, round(left + cw) - 1, top + ch - 1], fill=fg)
            elif c and c != " ":
                d.text((left, top + 1), c, font=fonts[(s.bold, s.italic)], fill=fg)
            if s.underline:
                d.line([round(left), top + ascent + 2, round(left + cw), top + ascent + 2], fill=fg)
    img.save(out, optimize=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("capture")
    ap.add_argument("png")
    ap.add_argument("--cols", type=int, default=0, help="default: the longest line")
    ap.add_argument("--rows", type=int, default=0, help="default: the capture's lines")
    ap.add_argument("--font-size", type=int, default=15)
    ap.add_argument("--title", default=None, help="draw a window bar with this title")
    a = ap.parse_args()
    with open(a.capture, encoding="utf-8", errors="replace") as f:
        text = f.read()
    if text.endswith("\n"):
        text = text[:-1]
    lines = text.split("\n")
    rows = a.rows or len(lines)
    cols = a.cols or max((len(ESCAPE.sub("", l)) for l in lines), default=80)
    render(parse(text, cols, rows), cols, rows, a.font_size, a.png, a.title)
    return 0


if __name__ == "__main__":
    sys.exit(main())
