"""Reading and moving in the explorer (issue 12 item 3) and its first screen (item 4), through
Textual's Pilot: the diff marks changed characters and keeps changed lines bright, scrolls
sideways and has a cursor; `/` `n` `N` in every text view; file line numbers in the Python pane;
copy and save from any view; the kernel switcher; the command palette's commands; the kernel
list at 80x24; the kernel's story on the first screen."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
from rich.color import Color

from explorer.app import ExplorerApp
from explorer.commands import app_commands
from explorer.summary import convert_layout_path, kernel_story, launch_groups
from explorer.views.code_view import CodeView
from explorer.views.diff_screen import (INTRALINE_LEFT, INTRALINE_RIGHT, DiffScreen, SideBySide,
                                        unified_lines)
from explorer.views.kernel_switcher import KernelSwitcher
from explorer.views.prompt import PromptScreen
from explorer.diff import side_by_side
from compiler.trace import CompileTrace, Launch, PassRecord

sys.path.insert(0, str(Path(__file__).parent))
from explorer_fixture import have_reference, reference_trace, run_async  # noqa: E402

needs_reference = pytest.mark.skipif(not have_reference(), reason="../shared/reference absent")

BEFORE = "a = tt.load %p : tensor<1024xf32, #blocked0>\nb = arith.addf a, a\nreturn\n"
AFTER = ("a = tt.load %p : tensor<1024xf32, #blocked1>\nb = arith.addf a, a\n"
         "c = ttg.convert_layout b : tensor<1024xf32, #blocked1> -> tensor<1024xf32, "
         "#blocked0_with_a_very_long_name_at_the_end_of_the_line>\nreturn\n")


def _small_trace(name: str = "tiny_kernel", launches=()) -> CompileTrace:
    record = PassRecord(stage="ttgir", name="tritongpu-coalesce", index=0, changed=True,
                        ir_after=AFTER, convert_layout_count=1)
    return CompileTrace(kernel_name=name, source_file="k.py", source_line=40,
                        stages={"source": "@jit\ndef tiny_kernel(x):\n    pass\n",
                                "ttgir": BEFORE}, stage_inputs={"ttgir": BEFORE},
                        passes=[record], launches=list(launches),
                        cubin_info={"registers": 24, "spill_stores": 8, "shared_memory": 512})


def _brightness(color: Color | None) -> float:
    if color is None:
        return 0.0
    r, g, b = color.get_truecolor()
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def _segments(view: SideBySide, row: int):
    return list(view.render_line(row - view.scroll_offset.y))


@run_async
async def test_diff_marks_changed_characters_keeps_them_bright_and_scrolls_sideways():
    app = ExplorerApp([_small_trace()])
    async with app.run_test(size=(160, 30)) as pilot:
        app.push_screen(DiffScreen(app.traces[0].passes[0], BEFORE, AFTER))
        await pilot.pause()
        view = app.screen.query_one(SideBySide)
        replaced = next(i for i, r in enumerate(view.rows) if r.tag == "replace")
        equal = next(i for i, r in enumerate(view.rows) if r.tag == "equal")
        segments = _segments(view, replaced)
        marked = [s for s in segments if s.style and s.style.bgcolor in
                  (INTRALINE_LEFT.bgcolor, INTRALINE_RIGHT.bgcolor)]
        # the changed characters, "0" before and "1" after, carry the intraline backgrounds
        assert {s.text for s in marked} >= {"0", "1"}
        text_fg = lambda segs: min(_brightness(s.style.color) for s in segs  # noqa: E731
                                   if s.style and s.style.color and s.text.strip() and
                                   not s.text.strip().isdigit())
        assert text_fg(segments) >= text_fg(_segments(view, equal))
        # the cursor lights the gutter, and sideways scrolling brings the line's end in view
        view.cursor = replaced
        long_row = next(i for i, r in enumerate(view.rows) if "very_long" in (r.right or ""))
        tail = "at_the_end_of_the_line>"
        before = "".join(s.text for s in _segments(view, long_row))
        assert tail not in before
        for _ in range(12):
            await pilot.press("right")
        after = "".join(s.text for s in _segments(view, long_row))
        assert view.offset_x > 0 and tail in after
        assert "- a = tt.load" in "\n".join(unified_lines(view.rows))


@run_async
async def test_search_in_the_diff_and_in_linked_panes():
    app = ExplorerApp([_small_trace()])
    async with app.run_test(size=(100, 30)) as pilot:
        app.push_screen(DiffScreen(app.traces[0].passes[0], BEFORE, AFTER))
        await pilot.pause()
        view = app.screen.query_one(SideBySide)
        await pilot.press("slash")
        await pilot.pause()
        assert isinstance(app.screen, PromptScreen)
        await pilot.press(*"convert_layout", "enter")
        await pilot.pause()
        assert view.matches and "convert_layout" in view.rows[view.cursor].right
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("5")
        ttgir = app.query_one("#linked-ttgir", CodeView)
        ttgir.focus()
        await pilot.press("slash", *"arith", "enter")
        await pilot.pause()
        assert ttgir.matches == [2] and ttgir.cursor == 2
        # Escape in the prompt cancels and leaves the view as it was
        await pilot.press("slash", "x", "escape")
        await pilot.pause()
        assert not isinstance(app.screen, PromptScreen) and ttgir.matches == [2]


@run_async
async def test_python_pane_numbers_lines_as_the_file_does():
    app = ExplorerApp([_small_trace()])
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("5")
        python = app.query_one("#linked-python", CodeView)
        assert python.first_line == 40
        first = "".join(s.text for s in python.render_line(0))
        assert first.lstrip().startswith("40 ")
        ttgir = app.query_one("#linked-ttgir", CodeView)
        ttgir.focus()
        height = ttgir.size.height
        await pilot.press("z")                       # collapse the Python pane
        await pilot.pause()
        assert not python.display and ttgir.size.height > height
        await pilot.press("z")
        await pilot.pause()
        assert python.display
        await pilot.press("2")
        stage = app.query_one("#stage-code", CodeView)
        assert stage.first_line == 1


@run_async
async def test_copy_selection_or_view_and_save_with_errors_in_the_app(tmp_path):
    app = ExplorerApp([_small_trace()], export_dir=tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("2")
        code = app.query_one("#stage-code", CodeView)
        code.focus()
        await pilot.press("c")
        assert app.clipboard == BEFORE
        await pilot.press("down", "v", "down")
        await pilot.press("c")
        assert app.clipboard == "b = arith.addf a, a\nreturn\n"
        await pilot.press("w")
        await pilot.pause()
        prompt = app.screen.query_one("#prompt-input")
        prompt.value = "saved.ttgir"
        await pilot.press("enter")
        await pilot.pause()
        assert (tmp_path / "saved.ttgir").read_text() == BEFORE
        await pilot.press("w")
        await pilot.pause()
        app.screen.query_one("#prompt-input").value = str(tmp_path / "no" / "such" / "dir.txt")
        await pilot.press("enter")
        await pilot.pause()
        errors = [n for n in app._notifications if n.severity == "error"]
        assert errors and "could not save" in errors[-1].message
        assert app.is_running


@run_async
async def test_kernel_switcher_from_any_view_and_palette_commands():
    traces = [_small_trace("first_kernel"), _small_trace("second_kernel")]
    app = ExplorerApp(traces)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("5")
        await pilot.press("ctrl+k")
        await pilot.pause()
        assert isinstance(app.screen, KernelSwitcher)
        await pilot.press(*"second", "enter")
        await pilot.pause()
        assert app.trace.kernel_name == "second_kernel"
        app.push_screen(DiffScreen(traces[1].passes[0], BEFORE, AFTER))
        await pilot.pause()
        await pilot.press("ctrl+k", "escape")
        await pilot.pause()
        assert isinstance(app.screen, DiffScreen)       # Escape keeps where we were
        names = [name for name, _, _ in app_commands(app)]
        assert {"view: stages", "copy to clipboard", "save view to file", "switch kernel",
                "search this view", "open kernel first_kernel #1"} <= set(names)
        dict((n, c) for n, _, c in app_commands(app))["open kernel first_kernel #1"]()
        await pilot.pause()
        assert app.trace.kernel_name == "first_kernel" and not isinstance(app.screen, DiffScreen)


@needs_reference
@run_async
async def test_kernel_list_keeps_the_time_column_at_80x24():
    long = reference_trace("add")
    long.specialization = dict(long.specialization,
                               constexprs={f"BLOCK_{n}": 1024 for n in "MNKXYZ"})
    app = ExplorerApp([reference_trace("softmax"), long])
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        table = app.query_one("#kernel-table")
        shown = "\n".join("".join(s.text for s in table.render_line(y)) for y in range(3))
        assert shown.count("ms (gpu)") == 2 and "…" in shown
        story = str(app.query_one("#kernel-story").render())
        assert "softmax_kernel" in story and "convert_layout:" in story
        await pilot.press("down")
        await pilot.pause()
        assert "add_kernel" in str(app.query_one("#kernel-story").render())


def test_kernel_story_tells_stages_passes_resources_and_launch_groups():
    launches = [Launch(grid=(4, 1, 1), backend="gpu", time_ms=t) for t in (1.0, 3.0, 2.0)]
    launches += [Launch(grid=(64, 1, 1), backend="gpu", time_ms=9.0)]
    trace = _small_trace(launches=launches)
    story = kernel_story(trace)
    assert "ttgir 3" in story and "1 of 1 changed: tritongpu-coalesce" in story
    assert "24 registers · 8 spill bytes · 512 B shared" in story
    groups = launch_groups(trace)
    assert groups[0].startswith("grid 4×1×1 warps 4: 3 × median 2 ms, min 1 ms")
    assert groups[1].startswith("grid 64×1×1 warps 4: 1 ×")
    assert convert_layout_path(trace) == "1"
    sized = [Launch(grid=(8, 1, 1), backend="gpu", time_ms=1.0, shapes=((1024, 1024), ()),
                    declared={"bytes": 8e9, "flops16": 2e12})]
    line = launch_groups(_small_trace(launches=sized))[0]
    assert line.startswith("[1024×1024 scalar] grid 8×1×1")
    assert line.endswith("8000 GB/s · 2000 TFLOP/s")
    assert "not launched" in kernel_story(_small_trace())
