"""Golden SVG snapshots of the explorer's main screens at 80x24 and 160x48, taken and compared
by pytest-textual-snapshot (syrupy keeps them in `__snapshots__/test_explorer_snapshots/`).

Each screen is reached from a fresh app by the key presses of `explorer_screens.SCREENS`, on
traces made from Triton's reference outputs with fixed times and no paths on screen, so the
pictures do not depend on the machine. Before the picture is compared, the screen must show
its key text (`KEY_TEXT`): a failure then says what went missing in words.

After a deliberate change to a screen, regenerate and look at the new pictures:

    python -m pytest tests/cpu/test_explorer_snapshots.py --snapshot-update

(a failing run writes `snapshot_report.html`, old and new side by side). The SVG bytes depend
on the versions of textual, rich and pygments that drew them (`snapshot_renderers.txt`):
under other versions only the key text is checked, and the test says so as it skips.
"""
from __future__ import annotations

import sys
from importlib.metadata import version
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from explorer_fixture import have_reference  # noqa: E402
from explorer_screens import SCREENS, make_app, make_traces, screen_text  # noqa: E402

pytestmark = pytest.mark.skipif(not have_reference(), reason="../shared/reference absent")
pytest.importorskip("pytest_textual_snapshot", reason="pytest-textual-snapshot is not installed "
                    "(pip install -e '.[test]')")

# beside, not in __snapshots__/ (syrupy would count it as an unused snapshot and fail the run)
RENDERERS = Path(__file__).parent / "snapshot_renderers.txt"
SIZES = {"80x24": (80, 24), "160x48": (160, 48)}
KEY_TEXT = {
    "kernels": ["softmax_kernel", "add_kernel", "BLOCK=4096", "specialization:",
                "convert_layout: 0 → 7 → 0", "ptxas: 32 registers", "Enter opens"],
    "stages": ["ttgir", "tt.load", "#blocked", "softmax_kernel · ttgir"],
    "passes": ["convert_layout", "tritongpu-coalesce", "Hide unchanged"],
    "diff": ["tritongpu-coalesce", "convert_layout 7", "Fold unchanged"],
    "layouts": ["#blocked on tensor 4096", "warps", "Export DOT"],
    "linked": ["ttgir line 21", "PTX 47-48", "Python line 17", "setp.lt.s32"],
    "pipeline": ["pipeline", "convert_layout", "registers", "Recompile"],
    "timings": ["GPU (CUDA events)", "median"],
    "error": ["kernels/attention.py:14:11: error:", "tl.dot(q, k)", "^",
              "launch(es) ran through", "(interp)"],
    "help": ["tile-explore", "1 Kernels", "2 Stages"],
}


def renderer_versions() -> str:
    """The versions of the packages that draw the SVG: bytes compare only between identical
    ones."""
    return " ".join(f"{name}=={version(name)}" for name in ("textual", "rich", "pygments")) + "\n"


@pytest.fixture(scope="module")
def traces():
    return make_traces()


def test_every_screen_has_key_text():
    assert set(KEY_TEXT) == set(SCREENS)


@pytest.mark.parametrize("size", list(SIZES))
@pytest.mark.parametrize("name", list(SCREENS))
def test_screen(name, size, traces, snap_compare, request):
    """The screen shows its key text, and looks as its stored snapshot does."""
    shown = {}

    async def drive(pilot):
        await SCREENS[name](pilot.app, pilot)
        await pilot.pause()
        await pilot.wait_for_scheduled_animations()
        shown["text"] = screen_text(pilot.app)

    updating = request.config.getoption("--snapshot-update")
    if not updating and RENDERERS.exists() and RENDERERS.read_text() != renderer_versions():
        import asyncio
        from explorer_screens import capture
        text = asyncio.run(capture(name, SIZES[size], traces, as_text=True))
        missing = [key for key in KEY_TEXT[name] if key not in text]
        assert not missing, f"{name} at {size} lacks {missing}"
        pytest.skip(f"snapshots were drawn by {RENDERERS.read_text().strip()}, this is "
                    f"{renderer_versions().strip()}: key text checked, pictures not compared "
                    "(--snapshot-update redraws them)")
    same = snap_compare(make_app(name, traces), terminal_size=SIZES[size], run_before=drive)
    missing = [key for key in KEY_TEXT[name] if key not in shown["text"]]
    assert not missing, f"{name} at {size} lacks {missing}"
    if updating:
        RENDERERS.write_text(renderer_versions())
    assert same, (f"{name} at {size} differs from its snapshot: see snapshot_report.html; if "
                  "the change is deliberate, rerun with --snapshot-update and look at the SVG")
