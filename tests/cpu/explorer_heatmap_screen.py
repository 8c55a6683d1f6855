"""The README's heat-map screenshot: the linked view of the sample matmul's instrumented trace
(interpreter wall-clock regions, instrument-regions with dots and memory groups), cursor on
the tt.dot:

    python tests/cpu/explorer_heatmap_screen.py docs/screenshots
"""
from __future__ import annotations

import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from explorer.app import ExplorerApp  # noqa: E402
from explorer.views.code_view import CodeView  # noqa: E402


def instrumented_matmul_trace():
    """The sample matmul run once in instrumentation mode under a full-compile recorder: the
    trace of its instrumented variant, with `regions` filled."""
    import tempfile

    import compiler.profiler as proton
    from compiler.runtime.recording import record
    from sample_kernels import matmul
    with record(full_compile=True) as recorder, tempfile.TemporaryDirectory() as folder:
        session = proton.start(str(Path(folder) / "heatmap"),
                               mode="instrumentation:dots=true:memory=true")
        matmul.main()
        proton.finalize(session)
    return next(t for t in recorder.traces if t.regions)


async def capture(trace, size=(160, 48)) -> str:
    """The SVG of the linked view with the heat map."""
    app = ExplorerApp([trace])
    async with app.run_test(size=size) as pilot:
        await pilot.press("5")
        ttgir = trace.stages["ttgir"]
        line = next(i for i, text in enumerate(ttgir.splitlines(), 1) if "tt.dot" in text)
        app.query_one("#linked-ttgir", CodeView).cursor = line
        await pilot.pause()
        return app.export_screenshot(title="tile-explore · linked view, region heat map")


if __name__ == "__main__":
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/screenshots")
    out.mkdir(parents=True, exist_ok=True)
    (out / "heatmap.svg").write_text(asyncio.run(capture(instrumented_matmul_trace())))
    print(f"wrote {out / 'heatmap.svg'}")
