"""SVG snapshot tests of the explorer's main screens at 80x24 and 160x48.

At 80x24 the exported SVG must equal the stored file in tests/cpu/snapshots/ (regenerate with
TILE_UPDATE_SNAPSHOTS=1 after a deliberate change, and look at the new files); at both sizes the
screen must show its key text."""
from __future__ import annotations

import asyncio
import html
import os
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from explorer_fixture import have_reference  # noqa: E402
from explorer_screens import capture, make_traces  # noqa: E402

pytestmark = pytest.mark.skipif(not have_reference(), reason="../shared/reference absent")
SNAPSHOTS = Path(__file__).parent / "snapshots"
RENDERERS = SNAPSHOTS / "renderers.txt"


def renderer_versions() -> str:
    """The versions of the packages that draw the SVG: byte comparisons hold only between
    identical ones."""
    from importlib.metadata import version
    return " ".join(f"{name}=={version(name)}" for name in ("textual", "rich", "pygments")) + "\n"
STORED = ("kernels", "stages", "passes", "diff", "layouts", "linked", "pipeline")
KEY_TEXT = {
    "kernels": ["softmax_kernel", "add_kernel", "BLOCK=4096", "Enter opens"],
    "stages": ["ttgir", "tt.load", "#blocked", "Search"],
    "passes": ["convert_layout", "tritongpu-coalesce", "Hide unchanged"],
    "diff": ["tritongpu-coalesce", "convert_layout 7", "Fold unchanged"],
    "layouts": ["#blocked on tensor 4096", "warps", "Export DOT"],
    "linked": ["ttgir line 21", "PTX 47-48", "Python line 17", "setp.lt.s32"],
    "pipeline": ["pipeline", "convert_layout", "registers", "Recompile"],
    "timings": ["GPU (CUDA events)", "median"],
    "help": ["tile-explore", "1 Kernels", "2 Stages"],
}


@pytest.fixture(scope="module")
def traces():
    return make_traces()


def svg_text(svg: str) -> str:
    """The visible text of a Textual SVG screenshot, pieces joined in document order."""
    pieces = re.findall(r"<text[^>]*>([^<]*)</text>", svg)
    return html.unescape("".join(pieces)).replace("\xa0", " ")


def _check_key_text(name: str, svg: str, size: tuple) -> None:
    text = svg_text(svg)
    missing = [key for key in KEY_TEXT[name] if key not in text]
    assert not missing, f"{name} at {size} lacks {missing}"


@pytest.mark.parametrize("name", list(KEY_TEXT))
def test_screen_at_80x24(name, traces):
    """Key text always; for the main screens also the stored SVG, byte for byte."""
    svg = asyncio.run(capture(name, (80, 24), traces))
    _check_key_text(name, svg, (80, 24))
    if name not in STORED:
        return
    path = SNAPSHOTS / f"explorer-{name}-80x24.svg"
    if os.environ.get("TILE_UPDATE_SNAPSHOTS") == "1" or not path.exists():
        SNAPSHOTS.mkdir(exist_ok=True)
        path.write_text(svg)
        RENDERERS.write_text(renderer_versions())
        if os.environ.get("TILE_UPDATE_SNAPSHOTS") != "1":
            pytest.fail(f"no stored snapshot: wrote {path}; check it and run again")
    if RENDERERS.exists() and RENDERERS.read_text() != renderer_versions():
        pytest.skip(f"snapshots were rendered with {RENDERERS.read_text().strip()}; this is "
                    f"{renderer_versions().strip()} (key text was checked; regenerate with "
                    "TILE_UPDATE_SNAPSHOTS=1 to compare bytes)")
    assert svg == path.read_text(), (
        f"{name} differs from {path}; if the change is deliberate, rerun with "
        "TILE_UPDATE_SNAPSHOTS=1 and review the new SVG")


@pytest.mark.parametrize("name", list(KEY_TEXT))
def test_screen_at_160x48(name, traces):
    _check_key_text(name, asyncio.run(capture(name, (160, 48), traces)), (160, 48))
