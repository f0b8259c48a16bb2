"""The colours, patterns and text size every figure of the project draws with (Note [Figure palette]),
and the colour-vision check that tests/labs/figures_test.py applies to them.

Note [Figure palette]
~~~~~~~~~~~~~~~~~~~~~
Every figure — the labs' (tools/figures/make_figures.py) and the report's (tools/reproduce.py) — draws
with Okabe and Ito's eight colours and a grey, which stay apart under the common colour-vision
deficiencies, or with light tints of them for the faces of boxes. One series, one style: a figure
with more series than colours adds a hatch pattern, never a repeated colour alone; what a colour
means is also written next to it (a label or a legend entry). No text is smaller than MIN_FONT_PT.
tests/labs/figures_test.py simulates deuteranopia on every colour a figure uses and fails when two
that a viewer with normal vision tells apart become alike, and fails on smaller text.
"""

from __future__ import annotations

INK, ORANGE, SKY, GREEN = "#000000", "#E69F00", "#56B4E9", "#009E73"
YELLOW, BLUE, VERMILLION, PURPLE, GREY = "#F0E442", "#0072B2", "#D55E00", "#CC79A7", "#999999"
OKABE_ITO = (BLUE, ORANGE, GREEN, VERMILLION, SKY, PURPLE, YELLOW, INK, GREY)

# Roles in the drawings: trusted (blue), the adversary's (vermillion), clear bytes (yellow), neutral.
TRUSTED, TRUSTED_EDGE = "#D5E8F4", BLUE
HOSTILE, HOSTILE_EDGE = "#F8E0CC", VERMILLION
CLEAR = "#FAF4B8"
NEUTRAL, NEUTRAL_EDGE = "#EEEEEE", "#555555"

LIGHT_GREY, DARK_GREY = "#CCCCCC", "#555555"
MIN_FONT_PT = 9
HATCHES = ("", "///", "...", "xxx")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "h", "p", "<", ">")
LINESTYLES = {"": "-", "///": "--", "...": ":", "xxx": "-."}


def series_styles(n: int) -> list[tuple[str, str, str]]:
    """(colour, hatch, marker) of n series, each its own colour, no two alike under deuteranopia
    (alike(): the same hatch and confused colours): a colour confused with an earlier series' gets
    the first hatch that tells it apart. Lines draw the hatch as a dash pattern (LINESTYLES)."""
    colours = OKABE_ITO + (LIGHT_GREY, DARK_GREY, TRUSTED, HOSTILE)
    if n > len(colours):
        raise ValueError(f"{n} series: more than the palette's {len(colours)} colours")
    out: list[tuple[str, str, str]] = []
    for i, colour in enumerate(colours[:n]):
        hatch = next((h for h in HATCHES if not any(alike((colour, h), (c, o)) for c, o, _ in out)), None)
        if hatch is None:
            raise ValueError(f"{colour}: no pattern tells it apart from the series before it")
        out.append((colour, hatch, MARKERS[i % len(MARKERS)]))
    return out


def hatch_ink(colour: str) -> str:
    """The colour to draw a hatch in over `colour`: white on a dark fill, black on a light one."""
    r, g, b = _rgb(colour)
    return "#FFFFFF" if 0.2126 * r + 0.7152 * g + 0.0722 * b < 0.25 else INK


def rcparams() -> dict:
    """matplotlib settings for every figure: the palette as the colour cycle, and readable text."""
    from cycler import cycler  # matplotlib's own dependency
    return {"axes.prop_cycle": cycler(color=[c for c, _, _ in series_styles(6)]), "font.size": MIN_FONT_PT,
            "legend.fontsize": MIN_FONT_PT, "xtick.labelsize": MIN_FONT_PT, "ytick.labelsize": MIN_FONT_PT,
            "axes.titlesize": MIN_FONT_PT + 1, "axes.labelsize": MIN_FONT_PT}


# --- the colour-vision check ------------------------------------------------------------------------

def _linear(c: float) -> float:
    return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4


def _rgb(hex_colour: str) -> tuple[float, float, float]:
    h = hex_colour.lstrip("#")
    if len(h) == 3:
        h = "".join(ch * 2 for ch in h)
    return tuple(_linear(int(h[i:i + 2], 16) / 255) for i in (0, 2, 4))  # type: ignore[return-value]


# Machado, Oliveira and Fernandes (2009): full deuteranopia, on linear RGB.
DEUTERANOPIA = ((0.367322, 0.860646, -0.227968), (0.280085, 0.672501, 0.047413), (-0.011820, 0.042940, 0.968881))


def _lab(rgb: tuple[float, float, float]) -> tuple[float, float, float]:
    r, g, b = (min(1.0, max(0.0, v)) for v in rgb)
    x, y, z = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047, 0.2126 * r + 0.7152 * g + 0.0722 * b, \
        (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883
    f = [v ** (1 / 3) if v > 0.008856 else 7.787 * v + 16 / 116 for v in (x, y, z)]
    return 116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])


def _distance(a, b) -> float:
    return sum((p - q) ** 2 for p, q in zip(_lab(a), _lab(b))) ** 0.5  # CIE76 delta E


def deuteranope(hex_colour: str) -> tuple[float, float, float]:
    r, g, b = _rgb(hex_colour)
    return tuple(m[0] * r + m[1] * g + m[2] * b for m in DEUTERANOPIA)  # type: ignore[return-value]


def confused(a: str, b: str) -> float | None:
    """How far apart a deuteranope sees two colours (delta E) when that is too close: under 20 and
    under half of what normal vision sees (the old green TEE box and red adversary area, #e3f2e1 and
    #fdecea: 13.9 apart, 2.7 seen); None when they stay apart, or were alike to begin with (< 10)."""
    normal = _distance(_rgb(a), _rgb(b))
    seen = _distance(deuteranope(a), deuteranope(b))
    return seen if normal >= 10 and seen < min(20.0, 0.5 * normal) else None


def alike(a: tuple[str, str], b: tuple[str, str]) -> bool:
    """Two (colour, hatch) styles a deuteranope cannot tell apart: the same pattern, colours confused."""
    return a[1] == b[1] and (a[0].upper() == b[0].upper() or confused(a[0], b[0]) is not None)


def confusable(colours) -> list[tuple[str, str, float]]:
    """The pairs of `colours` (hex) that deuteranopia makes alike: (a, b, their simulated delta E)."""
    cs = sorted({c.upper() for c in colours})
    return [(a, b, seen) for i, a in enumerate(cs) for b in cs[i + 1:] if (seen := confused(a, b)) is not None]
