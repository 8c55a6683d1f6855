"""What a new user met under tmux at 80x24 and 160x48 on the sample kernels, Triton's
tutorials 01-06 and Liger-Kernel's kernels (docs/walkthrough.md), each reproduced here.

The first screen left most of 160x48 to a short kernel table while the story sat in 9 lines;
rows that differ only past the 20th character of their specialization looked the same, and
the story did not show it; one median over launches of mixed sizes; nothing said that
launches ran through the interpreter because there was no GPU; the progress line and the
script's prints ran into one another; a @jit helper (tutorial 03's `leaky_relu`, 06's
`_attn_fwd_inner`) was compiled as a kernel and its failure reported; an error raised in a
module the script imported (Liger's `tanh` import) showed only the script's import line; a
save named a relative path; the hint offered Enter when there was no kernel.
"""
from __future__ import annotations

import asyncio
import io
import json
import sys
import textwrap
from dataclasses import replace
from pathlib import Path


from compiler.trace import CompileTrace, Launch
from explorer import cli
from explorer.app import ExplorerApp
from explorer.timing import interpreter_note
from explorer.views.kernel_list import spec_width, time_text

sys.path.insert(0, str(Path(__file__).parent))
from explorer_screens import screen_text  # noqa: E402

KERNEL = textwrap.dedent('''
    import numpy as np
    import triton
    import triton.language as tl


    @triton.jit
    def scale(x):
        return x * 2.0


    @triton.jit
    def double_kernel(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, scale(tl.load(x_ptr + offs, mask=offs < n)), mask=offs < n)


    x = np.arange(16, dtype=np.float32)
    double_kernel[(1,)](x, 16, BLOCK=16)
    print("done")
''')


def _trace(name="k", constexprs=None, launches=(), stages=None) -> CompileTrace:
    return CompileTrace(name, specialization={"signature": "*fp32:16, i32",
                                              "constexprs": constexprs or {"BLOCK": 16}},
                        stages=stages or {"source": "def k():\n    pass\n", "ttir": "module {\n}\n"},
                        launches=list(launches))


def _launch(n: int, ms: float, backend="interpreter") -> Launch:
    return Launch(grid=(n // 16,), backend=backend, time_ms=ms, shapes=((n,), (n,), (n,)))


async def _first_screen(app, size):
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        story = app.query_one("#kernel-story-scroll")
        return screen_text(app), story.size.height, app.query_one("#kernel-table").size.height


LONG = {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8}


def test_the_story_gets_the_room_and_rows_that_differ_late_are_told_apart():
    traces = [_trace("matmul_kernel", {**LONG, "ACTIVATION": "''"}),
              _trace("matmul_kernel", {**LONG, "ACTIVATION": "'leaky_relu'"})]
    wide, story_rows, table_rows = asyncio.run(_first_screen(ExplorerApp(traces), (160, 48)))
    assert table_rows == 3 and story_rows > 30        # header + 2 rows; the rest is the story
    assert "ACTIVATION=''" in wide and "ACTIVATION='leaky_relu'" in wide
    narrow, story_rows, _ = asyncio.run(_first_screen(ExplorerApp(traces), (80, 24)))
    assert story_rows >= 10
    assert "specialization: BLOCK_SIZE_M=128" in narrow   # the story has it whole
    for line in narrow.splitlines():
        assert len(line.rstrip()) <= 80


def test_the_spec_column_takes_what_the_other_columns_leave():
    rows = [["k", "1 ms (gpu)", "3", "4", "x" * 200]]
    assert spec_width(rows, 80) < spec_width(rows, 160) and spec_width(rows, 20) == 10


def test_launches_of_several_sizes_show_a_range_not_one_median():
    mixed = _trace(launches=[_launch(4096, 0.8), _launch(4096, 0.9), _launch(8192, 3430.4)])
    assert time_text(mixed) == "0.85–3430 ms (interp)"      # fits the column at 80x24
    assert time_text(_trace(launches=[_launch(4096, 0.8)])) == "0.8 ms (interp)"


def test_a_line_says_launches_ran_through_the_interpreter_and_why(monkeypatch):
    traces = [_trace(launches=[_launch(64, 1.0), _launch(64, 1.0)])]
    assert interpreter_note(traces, declined=True).startswith(
        "--no-gpu was given: the script's 2 launch(es) ran through the interpreter")
    monkeypatch.setattr("explorer.timing.gpu_present", lambda: False)
    assert interpreter_note(traces, declined=False).startswith("no usable NVIDIA GPU here")
    assert interpreter_note([_trace(launches=[_launch(64, 1.0, "gpu")])], False) is None


def test_the_interpreter_line_reaches_the_json_and_a_helper_is_no_kernel(tmp_path, capsys):
    (tmp_path / "double.py").write_text(KERNEL)
    assert cli.main([str(tmp_path / "double.py"), "--json", "--no-gpu"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [k["kernel"] for k in data["kernels"]] == ["double_kernel"]
    assert data["messages"][0].startswith("--no-gpu was given: the script's 1 launch(es)")
    assert not any("scale" in message for message in data["messages"])


def test_a_helper_defined_but_never_called_is_not_compiled_alone(tmp_path):
    from compiler.inspect import run_file
    script = tmp_path / "helpers.py"
    script.write_text(KERNEL.replace("double_kernel[(1,)](x, 16, BLOCK=16)\n", ""))
    result = run_file(script, interpret=True)
    assert result.error is None
    assert not any(message.startswith("scale:") for message in result.messages)
    assert any(message.startswith("double_kernel: not launched") for message in result.messages)


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_progress_line_is_cleared_before_the_script_prints():
    from compiler.inspect import Progress
    terminal = _Terminal()
    line = cli._progress_line(terminal)
    line.show(Progress(kernels=1, launches=2, elapsed_s=0.5))
    line.wrap(terminal).write("done\n")
    assert terminal.getvalue() == ("\rrunning: 1 kernel(s) compiled, 2 launch(es), 0.5 s\x1b[K"
                                   "\r\x1b[Kdone\n")
    assert cli._progress_line(io.StringIO()) is None        # no terminal: no progress noise


def test_an_error_raised_in_an_imported_module_shows_that_line_too(tmp_path):
    from compiler.inspect import run_file
    (tmp_path / "helper_mod.py").write_text("import math\nfrom math import tanh_missing\n")
    script = tmp_path / "uses.py"
    script.write_text("import numpy\nimport helper_mod\n")
    lines = run_file(script, interpret=True).error.splitlines()
    assert lines[0].startswith(f"{script}:2:1: ImportError: cannot import name 'tanh_missing'")
    assert lines[1] == "    import helper_mod" and lines[2] == "    ^"
    assert lines[3] == f"  raised in {tmp_path / 'helper_mod.py'}:2:1:"
    assert lines[4] == "    from math import tanh_missing" and lines[5] == "    ^"


def test_save_names_the_absolute_path_and_the_hint_fits_an_empty_list(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)

    async def drive():
        app = ExplorerApp([_trace()], export_dir=".")
        async with app.run_test(size=(100, 30)) as pilot:
            target = app.save_text("text\n", "out.txt")
            await pilot.pause()
            saved = [n.message for n in app._notifications]
        messages = [f"k.py:{n}:1: error: line {n} of a long error" for n in range(30)]
        empty = ExplorerApp([], messages)
        async with empty.run_test(size=(80, 24)):
            hint = str(empty.query_one("#kernel-hint").render())
            rows = empty.query_one("#kernel-messages-scroll").size.height
        return target, saved, hint, rows
    target, saved, hint, rows = asyncio.run(drive())
    assert (tmp_path / "out.txt").read_text() == "text\n"
    assert saved == [f"saved 1 line(s) to {tmp_path / 'out.txt'}"]
    assert "Enter" not in hint and "q quit" in hint and len(hint) <= 78
    assert rows >= 15            # without kernels the messages (06's error) take the screen


def test_interpreted_launches_are_labelled_in_every_view():
    trace = replace(_trace(launches=[_launch(64, 1.0)]))

    async def drive():
        app = ExplorerApp([trace])
        async with app.run_test(size=(80, 24)) as pilot:
            first = screen_text(app)
            await pilot.press("7")
            await pilot.pause()
            return first, screen_text(app)
    first, timings = asyncio.run(drive())
    assert "(interp)" in first and "interpreter (wall time)" in timings


def test_the_constexprs_that_tell_rows_apart_come_first():
    """The sample attention's four rows all began `stride_qk=1, stride_kk=…` at 80x24."""
    from explorer.views.kernel_list import differing_constexprs, spec_text
    common = {"stride_qk": 1, "stride_kk": 1, "stride_vk": 1}
    traces = [_trace("attn", {**common, "HEAD_DIM": d, "CAUSAL": c})
              for d in (64, 128) for c in (False, True)] + [_trace("other", common)]
    first = differing_constexprs(traces)
    assert first == {"attn": frozenset({"HEAD_DIM", "CAUSAL"}), "other": frozenset()}
    assert spec_text(traces[1], first["attn"]).startswith("HEAD_DIM=64, CAUSAL=True, stride_qk")
    assert spec_text(traces[4], first["other"]).startswith("stride_qk=1")


def test_80x24_shows_the_launch_times_before_the_long_pass_list():
    """The sample matmul's story ended at `launches:` at 80x24, its times below the fold."""
    from compiler.trace import PassRecord
    trace = _trace("matmul_kernel", LONG, launches=[_launch(4096, 34.5)])
    trace.passes = [PassRecord("ttgir", f"a-rather-long-pass-name-{i}", changed=True)
                    for i in range(12)]
    text, _, _ = asyncio.run(_first_screen(ExplorerApp([trace]), (80, 24)))
    assert "[4096] grid 256 warps 4: 1 × median 34.5 ms, min 34.5 ms (interp)" in text


def test_pass_records_with_one_index_do_not_crash_the_timeline():
    """Records that repeat an index (a hand-made or merged trace file) raised DuplicateKey."""
    from compiler.trace import PassRecord
    trace = _trace(launches=[_launch(64, 1.0)])
    trace.passes = [PassRecord("ttgir", name, changed=True) for name in ("cse", "dce")]

    async def drive():
        app = ExplorerApp([trace])
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.press("3")
            await pilot.pause()
            return app.query_one("#pass-table").row_count
    assert asyncio.run(drive()) == 2
