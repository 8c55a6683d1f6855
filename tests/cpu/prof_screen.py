"""The README's `tile-explore prof` screenshot: a profile of three scoped workloads run by the
interpreter (wall-clock times, labelled so), the matmul in instrumentation mode so its
in-kernel regions appear under it, a kernel with `launch_metadata` for the rate column,
printed by `tile-explore prof` and saved as an SVG terminal capture:

    python tests/cpu/prof_screen.py docs/screenshots
"""
from __future__ import annotations

import contextlib
import io
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import compiler  # noqa: E402
import compiler.language as tl  # noqa: E402


#: The columns shown: the kernels' times, counts and shares, the regions' summed times (ns,
#: the interpreter's wall clock here; cycles on the GPU) and the rate from launch_metadata.
METRICS = "time/ms,count,pct,region time,rate"


def _saxpy_metadata(grid, kernel, args):
    n = args["n"]
    return {"name": f"saxpy n={n}", "flops32": 2 * n, "bytes": 12 * n}


@compiler.jit(launch_metadata=_saxpy_metadata)
def saxpy(x, y, out, a, n, BLOCK: tl.constexpr):
    """out = a * x + y."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, a * tl.load(x + offs, mask=mask) + tl.load(y + offs, mask=mask),
             mask=mask)


def profile(folder: Path) -> Path:
    """Run the workloads in one session; the hatchet file it wrote."""
    import compiler.profiler as proton
    from sample_kernels import matmul, softmax

    session = proton.start(str(folder / "samples"), hook="triton",
                           mode="instrumentation:dots=true")
    with proton.scope("matmul"):
        matmul.main()
    with proton.scope("softmax"):
        softmax.main()
    with proton.scope("saxpy"):
        n = 4096
        x, y = (np.ones(n, np.float32) for _ in range(2))
        out = np.empty(n, np.float32)
        for _ in range(3):
            saxpy[(n // 256,)](x, y, out, 2.0, n, BLOCK=256, interpret=True)
    [path] = proton.finalize(session)
    return Path(path)


def capture(path: Path, width: int = 232) -> str:
    """The SVG of `tile-explore prof PATH` as a terminal shows it."""
    from rich.console import Console
    from rich.text import Text

    from explorer.prof import main as prof_main
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        prof_main([str(path), "-m", METRICS])
    console = Console(record=True, width=width, file=io.StringIO())
    console.print(f"$ tile-explore prof {path.name} -m '{METRICS}'", style="bold")
    console.print(Text.from_ansi(printed.getvalue()))
    return console.export_svg(title="tile-explore prof")


if __name__ == "__main__":
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/screenshots")
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as folder:
        (out / "prof.svg").write_text(capture(profile(Path(folder))))
    print(f"wrote {out / 'prof.svg'}")
