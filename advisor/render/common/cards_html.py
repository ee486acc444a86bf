"""The card bars every HTML page draws: one bar per card, one segment per pod, width by MiB;
and their legend."""

from __future__ import annotations

from advisor.render.common.cards import MODE_NAMES, CardView, mode_name
from advisor.render.common.html import escape, format_mib
from advisor.render.common.style import MODE_PALETTES, MODE_TAGS, pod_colour

# Below these shares of a bar a segment's text cannot fit; the tooltip still has it.
_NARROW_SEGMENT = 0.07


_NARROW_FREE = 0.09


def card_legend() -> str:
    """The key to the card bars: isolation modes, free memory, placed pods, unhealthy cards."""

    def mode_tag(mode: int) -> str:
        colour = MODE_PALETTES[mode][0]
        return f'<span class="tag" style="background:{colour}">{MODE_TAGS[mode]}</span>'

    swatches = [f"<span>{mode_tag(mode)}{escape(MODE_NAMES[mode])}</span>" for mode in (0, 1)]
    hatch = f"repeating-linear-gradient(135deg,{MODE_PALETTES[0][0]} 0 6px,#fff 6px 9px)"
    swatches += [
        f"<span>{mode_tag(2)}no vGPU yet: an empty bar</span>",
        '<span><i class="sw" style="background:#f8fafc;border:1px solid #cbd5e1"></i>'
        "free memory</span>",
        f'<span><i class="sw" style="background:{hatch};box-shadow:inset 0 0 0 2px '
        f'{MODE_PALETTES[0][0]}"></i>Pending pod placed by this cycle</span>',
        '<span><i class="sw" style="border:2px solid #dc2626;background:repeating-linear-gradient'
        '(45deg,#fee2e2 0 6px,#fff 6px 12px)"></i>unhealthy card</span>',
    ]
    return (
        '<section class="panel"><h3>Cards: one bar per card, one segment per pod, width by MiB'
        f'</h3><div class="legend">{"".join(swatches)}</div></section>'
    )


def _segment(card: CardView, pod: str, mib: int, core: int, pending: bool, scale: int) -> str:
    share = mib / scale
    classes = (
        "seg" + (" pending" if pending else "") + (" narrow" if share < _NARROW_SEGMENT else "")
    )
    tip = f"{pod}: {mib} MiB" + (f", {core} % core" if core else "")
    if pending:
        tip += " (Pending, placed by this cycle)"
    core_text = f" · {core}\u00a0%" if core else ""
    return (
        f'<div class="{classes}" style="width:{share * 100:.3f}%;--c:{pod_colour(pod, card.mode)}"'
        f' title="{escape(tip)}"><span class="name">{escape(pod)}</span>'
        f'<span class="mib">{format_mib(mib)}{core_text}</span></div>'
    )


def mig_row(card: CardView) -> str:
    """A MIG card as a bar of its 8 memory slices, a segment per instance (its holder, or
    free), gaps where no instance is."""
    parts, at = [], 0
    for s in card.mig or ():
        if s.start > at:
            parts.append(_gap(s.start - at))
        tip = s.text + (" (Pending, placed by this cycle)" if s.pending else "")
        if s.pod is None:
            parts.append(
                f'<div class="free" style="width:{s.span * 12.5:.3f}%;border-left:1px solid '
                f'#cbd5e1" title="{escape(tip)}">'
                f'<span class="mib">{escape(s.profile)}</span><span class="mib">free</span></div>'
            )
        else:
            classes = "seg" + (" pending" if s.pending else "") + (" narrow" if s.span < 2 else "")
            parts.append(
                f'<div class="{classes}" style="width:{s.span * 12.5:.3f}%;'
                f'--c:{pod_colour(s.pod, 0)}" title="{escape(tip)}">'
                f'<span class="name">{escape(s.pod)}</span>'
                f'<span class="mib">{escape(s.profile)}</span></div>'
            )
        at = max(at, s.start + s.span)
    if at < 8:
        parts.append(_gap(8 - at))
    held = sum(1 for s in card.mig or () if s.pod is not None)
    sick = "" if card.healthy else '<span class="sick-text">unhealthy</span> · '
    row_class = "card" + ("" if card.healthy else " unhealthy")
    return (
        f'<div class="{row_class}" title="{escape(card.model)}"><div class="card-label">'
        f'<strong>GPU {card.index}</strong><br><span class="tag" style="background:#0f766e" '
        'title="MIG: a bar of its 8 memory slices, a segment per instance">MIG</span></div>'
        f'<div class="bar">{"".join(parts)}</div>'
        f'<div class="card-stats">{held} of {len(card.mig or ())} instances held'
        f'<div class="sub">{sick}{escape(card.model)}</div></div></div>'
    )


def _gap(span: int) -> str:
    return (
        f'<div class="free narrow" style="width:{span * 12.5:.3f}%" title="no instance">'
        '<span class="mib">—</span></div>'
    )


def card_row(card: CardView, show_model: bool) -> str:
    """One card as a bar, a segment per pod and one for free memory, with its figures."""
    if card.mig is not None:
        return mig_row(card)
    scale = max(card.memory_mib, card.allotted_mib, 1)
    segments = [
        _segment(card, a.pod, a.memory_mib, a.core_percent, a.pending, scale)
        for a in card.allotments
        if a.memory_mib > 0
    ]
    free = card.free_mib
    if free or not segments:
        narrow = " narrow" if free / scale < _NARROW_FREE else ""
        what = "unhealthy" if not card.healthy else "free"
        segments.append(
            f'<div class="free{narrow}" title="{escape(f"{free} MiB free")}">'
            f'<span class="mib">{what}</span><span class="mib">{format_mib(free)}</span></div>'
        )
    mode_colour = MODE_PALETTES.get(card.mode, MODE_PALETTES[2])[0]
    tag = (
        f'<span class="tag" style="background:{mode_colour}" '
        f'title="{escape(mode_name(card.mode))}">'
        f"{escape(MODE_TAGS.get(card.mode, mode_name(card.mode)))}</span>"
    )
    model = f" · {escape(card.model)}" if show_model and card.model else ""
    core = f" · core {card.core_allotted_percent}\u00a0%" if card.mode == 1 else ""
    vgpus = f"{card.vgpus} vGPU" + ("" if card.vgpus == 1 else "s")
    sick = "" if card.healthy else '<span class="sick-text">unhealthy</span> · '
    row_class = "card" + ("" if card.healthy else " unhealthy")
    used = f"{card.allotted_mib:,}".replace(",", "\u202f")
    return (
        f'<div class="{row_class}" title="{escape(card.model)}"><div class="card-label">'
        f"<strong>GPU {card.index}</strong><br>{tag}</div>"
        f'<div class="bar">{"".join(segments)}</div>'
        f'<div class="card-stats">{used} / {format_mib(card.memory_mib)}'
        f'<div class="sub">{sick}{vgpus}{core}{model}</div></div></div>'
    )
