"""The explorer's main screens, each reached by a few key presses from a fresh app; used by the
SVG snapshot tests (tests/cpu/test_explorer_snapshots.py) and, run as a script, to export the
README screenshots:

    python tests/cpu/explorer_screens.py docs/screenshots [--reference]

(our compiler's traces of the sample kernels; `--reference` uses Triton's outputs instead).
"""
from __future__ import annotations

import asyncio
import html
import re
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from explorer_fixture import reference_trace  # noqa: E402

from explorer.app import ExplorerApp  # noqa: E402
from explorer.views.code_view import CodeView  # noqa: E402


def _line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


async def _kernels(app, pilot):
    await pilot.pause()


async def _stages(app, pilot):
    await pilot.press("enter")
    await pilot.pause()
    app.query_one("#stage-code", CodeView).cursor = _line_of(app.trace.stages["ttgir"], "tt.load")


async def _passes(app, pilot):
    await pilot.press("3", "h")
    for _ in range(5):          # tritongpu-coalesce: where convert_layouts appear
        await pilot.press("down")


async def _diff(app, pilot):
    await _passes(app, pilot)
    await pilot.press("enter")


async def _layouts(app, pilot):
    await pilot.press("4")
    app.query_one("#layout-code", CodeView).cursor = _line_of(app.trace.stages["ttgir"],
                                                              "= tt.load")


async def _linked(app, pilot):
    await pilot.press("5")
    app.query_one("#linked-ttgir", CodeView).cursor = _line_of(app.trace.stages["ttgir"],
                                                               "= arith.cmpi")


async def _pipeline(app, pilot):
    await pilot.press("6", "down", "space")


async def _timings(app, pilot):
    await pilot.press("7")


async def _help(app, pilot):
    await pilot.press("question_mark")


SCREENS = {"kernels": _kernels, "stages": _stages, "passes": _passes, "diff": _diff,
           "layouts": _layouts, "linked": _linked, "pipeline": _pipeline,
           "timings": _timings, "error": _kernels, "help": _help}

# The error screen: a script whose second kernel failed to compile (a located error, as the
# compiler words it), the first run through the interpreter (the line cli.py adds then).
ERROR_MESSAGES = [
    "kernels/attention.py:14:11: error: tl.dot needs two 2-D operands; got tensor<64xf16> "
    "and tensor<64x64xf16>\n    acc = tl.dot(q, k)\n          ^",
    "no usable NVIDIA GPU here: the script's 3 launch(es) ran through the interpreter, so "
    "their times are interpreter wall time, not GPU time",
]


def make_app(name: str, traces: list) -> ExplorerApp:
    """A fresh app for screen `name` (the error screen has its own messages and launches)."""
    if name != "error":
        return ExplorerApp(traces)
    interpreted = replace(traces[1], launches=[replace(launch, backend="interpreter")
                                               for launch in traces[1].launches])
    return ExplorerApp([interpreted], list(ERROR_MESSAGES))


def screen_text(app) -> str:
    """The text on the app's screen now, one line per terminal row."""
    rows: dict = {}
    for y, piece in re.findall(r'<text[^>]*\by="([\d.]+)"[^>]*>([^<]*)</text>',
                               app.export_screenshot()):
        rows.setdefault(float(y), []).append(html.unescape(piece).replace("\xa0", " "))
    return "\n".join("".join(rows[y]) for y in sorted(rows))


def make_traces() -> list:
    """The traces the snapshot tests show: softmax and add from Triton's reference outputs."""
    return [reference_trace("softmax"), reference_trace("add")]


def our_traces() -> list:
    """Traces made by our compiler: the sample matmul (where most passes fire), softmax and
    vector add, run (through the interpreter when there is no GPU) under the recorder, as
    `tile-explore FILE` does."""
    from compiler.runtime.recording import record
    from sample_kernels import matmul, softmax, vector_add
    with record(full_compile=True) as recorder:
        matmul.main()
        softmax.main()
        vector_add.main()
    return list(recorder.traces)


async def capture(name: str, size: tuple, traces: list, as_text: bool = False) -> str:
    """The SVG of one screen at a terminal size (or, with `as_text`, its text)."""
    app = make_app(name, traces)
    async with app.run_test(size=size) as pilot:
        await SCREENS[name](app, pilot)
        await pilot.pause()
        await pilot.wait_for_scheduled_animations()
        if as_text:
            return screen_text(app)
        return app.export_screenshot(title=f"tile-explore · {name}")


def main(folder: str, ours: bool = True) -> None:
    """Export every screen at 160x48 into `folder`,
    from our compiler's traces of the sample kernels (or Triton's reference with ours=False)."""
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    traces = our_traces() if ours else make_traces()
    for name in SCREENS:
        svg = asyncio.run(capture(name, (160, 48), traces))
        (out / f"{name}.svg").write_text(svg)
        print(f"wrote {out / f'{name}.svg'}")


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    main(args[0] if args else "docs/screenshots", ours="--reference" not in sys.argv)
