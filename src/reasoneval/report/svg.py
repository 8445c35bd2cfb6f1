"""Small inline SVG plots (no chart library, no network): line plots and histograms."""

from __future__ import annotations

import html
import math
from typing import Mapping, Sequence

COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
          "#17becf")
W, H, L, R, T, B = 420, 260, 52, 12, 28, 40


def esc(s: object) -> str:
    """Text for HTML and SVG: &, <, >, and both quotes escaped (safe in text and in attribute values)."""
    return html.escape(str(s), quote=True)


def _ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    if hi <= lo:
        return [lo]
    step = 10 ** math.floor(math.log10((hi - lo) / n))
    for m in (1, 2, 5, 10):
        if (hi - lo) / (step * m) <= n:
            step *= m
            break
    start = math.ceil(lo / step) * step
    return [round(start + i * step, 10) for i in range(int((hi - start) / step + 1e-9) + 1)]


def line_plot(series: Mapping[str, Sequence[tuple[float, float | None]]], *, title: str, xlabel: str, ylabel: str,
              logx: bool = False, logy: bool = False, percent: bool = True, dashed: Sequence[str] = (),
              ylim: tuple[float, float] | None = None) -> str:
    """One line per series (points with y None are skipped); k axes in log2 when logx."""
    pts = [(x, y) for s in series.values() for x, y in s if y is not None and (not logy or y > 0)]
    if not pts:
        return f'<svg class="plot" width="{W}" height="{H}" role="img"><text x="10" y="20">{esc(title)}: no data</text></svg>'
    fx = (lambda v: math.log2(v)) if logx else (lambda v: v)
    fy = (lambda v: math.log10(v)) if logy else (lambda v: v)
    xs = [fx(x) for x, _ in pts]
    ys = [fy(y) for _, y in pts if y is not None]
    x0, x1 = min(xs), max(xs)
    if x1 == x0:
        x1 = x0 + 1
    y0, y1 = ylim if ylim else (min(ys), max(ys))
    if not ylim:
        pad = (y1 - y0) * 0.08 or 0.05
        y0, y1 = y0 - pad, y1 + pad

    def px(v: float) -> float:
        return L + (fx(v) - x0) / (x1 - x0) * (W - L - R)

    def py(v: float) -> float:
        return H - B - (fy(v) - y0) / (y1 - y0) * (H - T - B)

    out = [f'<svg class="plot" width="{W}" height="{H}" viewBox="0 0 {W} {H}" role="img" aria-label="{esc(title)}">',
           f'<text x="{W / 2}" y="16" text-anchor="middle" class="pt">{esc(title)}</text>',
           f'<line x1="{L}" y1="{H - B}" x2="{W - R}" y2="{H - B}" class="ax"/>',
           f'<line x1="{L}" y1="{T}" x2="{L}" y2="{H - B}" class="ax"/>']
    xticks = sorted({x for x, _ in pts}) if logx else _ticks(x0, x1)
    for xt in xticks[:: max(1, len(xticks) // 8)]:
        out.append(f'<text x="{px(xt):.1f}" y="{H - B + 14}" text-anchor="middle" class="tk">{xt:g}</text>')
    yt = [10 ** e for e in range(math.floor(y0), math.ceil(y1) + 1)] if logy else _ticks(y0, y1)
    for v in yt:
        if not (y0 - 1e-9 <= fy(v) <= y1 + 1e-9):
            continue
        label = f"{100 * v:g}" if percent else f"{v:g}"
        out.append(f'<line x1="{L}" y1="{py(v):.1f}" x2="{W - R}" y2="{py(v):.1f}" class="gr"/>'
                   f'<text x="{L - 4}" y="{py(v) + 4:.1f}" text-anchor="end" class="tk">{label}</text>')
    out.append(f'<text x="{(L + W - R) / 2}" y="{H - 6}" text-anchor="middle" class="tk">{esc(xlabel)}</text>')
    out.append(f'<text x="12" y="{(T + H - B) / 2}" text-anchor="middle" class="tk" '
               f'transform="rotate(-90 12 {(T + H - B) / 2})">{esc(ylabel)}</text>')
    for i, (name, s) in enumerate(series.items()):
        color = COLORS[i % len(COLORS)]
        good = [(x, y) for x, y in s if y is not None and (not logy or y > 0)]
        if not good:
            continue
        d = " ".join(f"{'M' if j == 0 else 'L'}{px(x):.1f},{py(y):.1f}" for j, (x, y) in enumerate(good))
        dash = ' stroke-dasharray="5,3"' if name in dashed else ""
        out.append(f'<path d="{d}" fill="none" stroke="{color}" stroke-width="2"{dash}><title>{esc(name)}</title></path>')
        out += [f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="2.5" fill="{color}"><title>{esc(name)} {x:g}: '
                f'{100 * y:.2f}{"%" if percent else ""}</title></circle>' if percent else
                f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="2.5" fill="{color}"><title>{esc(name)} {x:g}: {y:g}'
                f'</title></circle>' for x, y in good]
        out.append(f'<text x="{W - R - 4}" y="{H - B - 8 - 13 * (len(series) - 1 - i)}" text-anchor="end" fill="{color}" '
                   f'class="lg">{esc(name)}</text>')
    out.append("</svg>")
    return "".join(out)


def histogram(values: Sequence[int], marked: Sequence[int], *, title: str, xlabel: str, bins: int = 30) -> str:
    """Counts of `values`, with the `marked` ones (e.g. truncated responses) stacked in red."""
    allv = list(values) + list(marked)
    if not allv:
        return f'<svg class="plot" width="{W}" height="{H}" role="img"><text x="10" y="20">{esc(title)}: no data</text></svg>'
    lo, hi = float(min(allv)), float(max(allv))
    width = max(1.0, (hi - lo) / bins)
    n = int((hi - lo) / width) + 1
    a, m = [0] * n, [0] * n
    for v in values:
        a[min(n - 1, int((v - lo) / width))] += 1
    for v in marked:
        m[min(n - 1, int((v - lo) / width))] += 1
    top = max(x + y for x, y in zip(a, m)) or 1
    bw = (W - L - R) / n
    out = [f'<svg class="plot" width="{W}" height="{H}" viewBox="0 0 {W} {H}" role="img" aria-label="{esc(title)}">',
           f'<text x="{W / 2}" y="16" text-anchor="middle" class="pt">{esc(title)}</text>',
           f'<line x1="{L}" y1="{H - B}" x2="{W - R}" y2="{H - B}" class="ax"/>']
    scale = (H - T - B) / top
    for i in range(n):
        x = L + i * bw
        lo_i = lo + i * width
        if a[i]:
            out.append(f'<rect x="{x:.1f}" y="{H - B - a[i] * scale:.1f}" width="{max(bw - 1, 1):.1f}" '
                       f'height="{a[i] * scale:.1f}" fill="#1f77b4"><title>{lo_i:.0f}-{lo_i + width:.0f}: {a[i]}</title></rect>')
        if m[i]:
            out.append(f'<rect x="{x:.1f}" y="{H - B - (a[i] + m[i]) * scale:.1f}" width="{max(bw - 1, 1):.1f}" '
                       f'height="{m[i] * scale:.1f}" fill="#d62728" class="trunc"><title>{lo_i:.0f}-{lo_i + width:.0f}: '
                       f'{m[i]} truncated</title></rect>')
    for tv in _ticks(0, top, 4):
        y = H - B - tv * scale
        out.append(f'<text x="{L - 4}" y="{y + 4:.1f}" text-anchor="end" class="tk">{tv:g}</text>')
    for tv in _ticks(lo, lo + n * width, 5):
        out.append(f'<text x="{L + (tv - lo) / width * bw:.1f}" y="{H - B + 14}" text-anchor="middle" class="tk">{tv:g}</text>')
    out.append(f'<text x="{(L + W - R) / 2}" y="{H - 6}" text-anchor="middle" class="tk">{esc(xlabel)}</text>')
    out.append(f'<text x="{W - R}" y="{T + 10}" text-anchor="end" class="lg" fill="#d62728">truncated: {len(marked)}</text>')
    out.append("</svg>")
    return "".join(out)


def interval_plot(items: Sequence[tuple[str, float, float, float]], *, title: str) -> str:
    """A forest plot: one row per (label, estimate, lo, hi), in percentage points, with a zero line."""
    if not items:
        return ""
    h = T + 24 * len(items) + B
    lo = min(min(i[2] for i in items), 0.0)
    hi = max(max(i[3] for i in items), 0.0)
    span = (hi - lo) or 0.01
    lo, hi = lo - 0.05 * span, hi + 0.05 * span
    left = 140

    def px(v: float) -> float:
        return left + (v - lo) / (hi - lo) * (W - left - R)

    out = [f'<svg class="plot" width="{W}" height="{h}" viewBox="0 0 {W} {h}" role="img" aria-label="{esc(title)}">',
           f'<text x="{W / 2}" y="16" text-anchor="middle" class="pt">{esc(title)}</text>',
           f'<line x1="{px(0):.1f}" y1="{T}" x2="{px(0):.1f}" y2="{h - B}" class="ax"/>']
    for j, (label, est, a, b) in enumerate(items):
        y = T + 12 + 24 * j
        out.append(f'<text x="{left - 6}" y="{y + 4}" text-anchor="end" class="tk">{esc(label)}</text>'
                   f'<line x1="{px(a):.1f}" y1="{y}" x2="{px(b):.1f}" y2="{y}" stroke="#333" stroke-width="2"/>'
                   f'<circle cx="{px(est):.1f}" cy="{y}" r="4" fill="#d62728"><title>{100 * est:+.2f} '
                   f'[{100 * a:+.2f}, {100 * b:+.2f}]</title></circle>')
    for v in _ticks(lo, hi, 5):
        out.append(f'<text x="{px(v):.1f}" y="{h - B + 14}" text-anchor="middle" class="tk">{100 * v:+g}</text>')
    out.append(f'<text x="{(left + W - R) / 2}" y="{h - 6}" text-anchor="middle" class="tk">difference (points), '
               f'95% CI</text></svg>')
    return "".join(out)
