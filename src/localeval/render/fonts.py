"""Fonts for the report's figures: the benchmarks' languages drawn with real glyphs, not boxes.

matplotlib's own font (DejaVu Sans) has no Chinese, Thai, Myanmar or Tamil, and a tick label,
legend or title can hold any of them (TMLU's subjects and levels, a run's label, a language's
name). matplotlib (>= 3.6) falls back glyph by glyph along the list in ``font.family``, so the
figures name DejaVu Sans first (Latin, digits, the same look as before) and then the first
installed font of each script. On Debian these come from ``fonts-noto-cjk``,
``fonts-thai-tlwg`` and ``fonts-noto-core`` (Noto Sans Myanmar and Tamil); without them the
figures are still drawn (missing glyphs as boxes) after one warning line that names the
packages, once a figure holds text of that script (issue 69: it was printed for runs whose
figures hold Latin text only, and named Myanmar and Tamil on a TMLU run). The HTML report's
own text is drawn by the browser from the same system fonts.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from functools import cache

LATIN = "DejaVu Sans"  # matplotlib's bundled font: always there
# Best first. Traditional Chinese first: TMLU is Taiwanese Mandarin.
CJK = ("Noto Sans CJK TC", "Noto Sans CJK SC", "Noto Sans CJK JP", "Source Han Sans TC",
       "PingFang TC", "Microsoft JhengHei", "WenQuanYi Zen Hei", "Droid Sans Fallback")
THAI = ("Noto Sans Thai", "Loma", "Garuda", "Tlwg Typo", "Norasi", "Leelawadee UI", "Tahoma")
# SEA-SafeguardBench's Myanmar (my) and Tamil (ta) items
MYANMAR = ("Noto Sans Myanmar", "Padauk", "Myanmar Text", "Myanmar Sangam MN")
TAMIL = ("Noto Sans Tamil", "Lohit Tamil", "Latha", "Tamil Sangam MN")
SCRIPTS = {"Chinese": CJK, "Thai": THAI, "Myanmar": MYANMAR, "Tamil": TAMIL}
DEBIAN_PACKAGES = "fonts-noto-cjk fonts-thai-tlwg fonts-noto-core"
# Each script's code points (CJK: radicals to ideographs, compatibility ideographs, full-width
# forms), to tell which a figure's text holds
RANGES = {"Chinese": ((0x2E80, 0x9FFF), (0xF900, 0xFAFF), (0xFF00, 0xFFEF)),
          "Thai": ((0x0E00, 0x0E7F),), "Myanmar": ((0x1000, 0x109F),),
          "Tamil": ((0x0B80, 0x0BFF),)}
_warned: set[str] = set()  # the scripts a warning has named, once per process


def _installed() -> set[str]:
    from matplotlib import font_manager

    return {f.name for f in font_manager.fontManager.ttflist}


def _register_system_fonts() -> None:
    """matplotlib keeps its font list in a cache made the first time it ran: fonts installed
    since are unknown to it until they are added (a public call, for this process only)."""
    from matplotlib import font_manager

    known = {f.fname for f in font_manager.fontManager.ttflist}
    for path in font_manager.findSystemFonts():
        if path not in known:
            try:
                font_manager.fontManager.addfont(path)
            except (OSError, RuntimeError, ValueError):  # a font file matplotlib cannot read
                continue


@cache
def figure_fonts() -> tuple[str, ...]:
    """``font.family`` for the figures: DejaVu Sans, then one font each for Chinese, Thai,
    Myanmar and Tamil where installed (every script of the benchmarks' languages that DejaVu
    lacks). Only installed names are listed: matplotlib logs a line for every name it cannot
    find, at every figure. A script without a font is warned of by :func:`warn_missing`, once
    a figure holds its text."""
    return (LATIN, *(n for n in _found().values() if n is not None))


@cache
def _found() -> dict[str, str | None]:
    """Each script's installed font, None where it has none."""
    names = _installed()
    if not all(any(n in names for n in group) for group in SCRIPTS.values()):
        _register_system_fonts()
        names = _installed()
    return {what: next((n for n in group if n in names), None) for what, group in SCRIPTS.items()}


def warn_missing(texts: Iterable[str]) -> None:
    """One line (stderr) naming each script that ``texts`` (a figure's) hold and no installed
    font draws, once per process."""
    unfound = [what for what, name in _found().items() if name is None and what not in _warned]
    if not unfound:
        return
    points = {ord(ch) for text in texts for ch in text if not ch.isascii()}
    drawn = [what for what in unfound
             if any(low <= p <= high for p in points for low, high in RANGES[what])]
    if drawn:
        _warned.update(drawn)
        scripts = ", ".join(drawn[:-1]) + (" or " if len(drawn) > 1 else "") + drawn[-1]
        print(f"warning: no {scripts} font for the report's figures: such text is "
              f"drawn as boxes (Debian: apt-get install {DEBIAN_PACKAGES})", file=sys.stderr)


@contextmanager
def quiet_missing_glyphs() -> Iterator[None]:
    """Without a font for a script, matplotlib warns for every glyph of every figure; the one
    line of :func:`figure_fonts` has said it already."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"Glyph \d+ .*missing from")
        yield
