"""The pipeline editor (issue 12 item 5) through the Pilot: pass names and options complete from
the registry, Escape cancels the input, a crashed recompile worker is an error in the app (which
lives on), and B is seen in A's views (its stages, its pass timeline, an A/B stage diff)."""
from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pytest

from compiler.isolation import CompileCrashed
from explorer.app import ExplorerApp
from explorer.views.diff_screen import DiffScreen, SideBySide
from explorer.views.pass_suggester import PassSuggester, complete_pass_spec
from explorer.views.pipeline_editor import PipelineEditor
from explorer.views.result_screen import ResultScreen

sys.path.insert(0, str(Path(__file__).parent))
from explorer_fixture import have_reference, reference_trace, run_async  # noqa: E402

pytestmark = pytest.mark.skipif(not have_reference(), reason="../shared/reference absent")


def test_completion_of_names_and_options_from_the_registry():
    passes = PassSuggester().passes
    assert "licm" in passes and passes["licm"]
    assert complete_pass_spec("lic", passes) == "licm"
    option = sorted(passes["licm"])[0]
    assert complete_pass_spec("licm{", passes) == f"licm{{{option}="
    assert complete_pass_spec("no-such-pa", passes) is None
    assert complete_pass_spec("licm{x=1}", passes) is None


def _b_recompiler(a_trace):
    """A recompile whose B has a different ttgir; `licm` in the pipeline crashes the worker."""
    def recompile(trace, pipelines):
        if "licm" in [name.split("{")[0] for name in pipelines.get("ttgir", "").split(",")]:
            raise CompileCrashed(trace.kernel_name, "llir", "convert-triton-gpu-to-llvm",
                                 "killed by SIGABRT")
        stages = dict(a_trace.stages, ttgir=a_trace.stages["ttgir"].replace("#blocked", "#b2"))
        return replace(a_trace, stages=stages, launches=[])
    return recompile


@run_async
async def test_completion_crash_and_b_in_the_views_of_a():
    a = reference_trace("softmax")
    app = ExplorerApp([a], recompiler=_b_recompiler(a))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("6")
        editor = app.query_one(PipelineEditor)
        await pilot.press("a", *"lic")
        await pilot.pause()
        box = app.query_one("#pipeline-add")
        assert box._suggestion == "licm"
        await pilot.press("right")                     # accept the suggestion
        assert box.value == "licm"
        await pilot.press("escape")
        assert not box.display and len(editor.entries["ttgir"]) == len(a.passes_of("ttgir"))
        await pilot.press("b")
        assert "no B yet" in str(app.query_one("#pipeline-status").render())
        await pilot.press("r")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert editor.result is not None
        await pilot.press("d")
        await pilot.pause()
        assert isinstance(app.screen, DiffScreen)
        rows = app.screen.query_one(SideBySide).rows
        assert any("#b2" in (row.right or "") for row in rows if row.tag == "replace")
        assert "A (left) against B (right)" in str(app.screen.query_one("#diff-title").render())
        await pilot.press("escape")
        await pilot.press("b")
        await pilot.pause()
        assert isinstance(app.screen, ResultScreen)
        assert "#b2" in "\n".join(app.screen.query_one("#stage-code").raw_lines)
        await pilot.press("p")
        assert app.screen.query_one("#pass-table").row_count == len(a.passes)
        await pilot.press("6")                         # a view key closes B's screen
        await pilot.pause()
        assert not isinstance(app.screen, ResultScreen)
        assert app.query_one("#views").active == "pipeline"
        # a crash of the compile worker is an error line; the app and the last B live on
        await pilot.press("a", *"licm", "enter", "r")
        await app.workers.wait_for_complete()
        await pilot.pause()
        status = str(app.query_one("#pipeline-status").render())
        assert "CompileCrashed" in status and "keeping the last good result" in status
        assert app.is_running and editor.result is not None
