"""Issue 12 item 1, "robust and truthful": each failure a new user met, reproduced and fixed.

User text is never read as markup; errors show file:line:col and a caret, in the app and (in
headless modes) on stderr with a non-zero exit; a bad `--passes` pipeline is an error; notes
reach the kernel's screen; the messages panel scrolls; a missing or corrupt trace file is a
clear message; Ctrl-C keeps what was recorded; a progress line is reported while a script runs.
"""
from __future__ import annotations

import asyncio
import json
import sys
import textwrap

import pytest

from compiler.passes.base import PASSES, Pass, register_pass
from compiler.passes.requirements import TTGIR
from compiler.trace import CompileTrace, Launch, PassRecord
from explorer import cli
from explorer.app import ExplorerApp

KERNEL = textwrap.dedent('''
    import numpy as np
    import triton
    import triton.language as tl


    @triton.jit
    def double_kernel(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2.0, mask=offs < n)


    x = np.arange(16, dtype=np.float32)
    double_kernel[(1,)](x, 16, BLOCK=16)
''')

SUBSCRIPT_ERROR = "k.py:3:9: error: v is not a tensor\n    s = v[i]\n        ^"
MARKUP_MESSAGES = ["k.py:5: NameError\n    y = [x for x in range(3)]", "closing [/bold] tag",
                   SUBSCRIPT_ERROR]


def _trace(notes=()) -> CompileTrace:
    source = "def k(v, i):\n    s = v[i]\n    t = [x for x in range(3)]\n"
    return CompileTrace("k[odd]", specialization={"constexprs": {"SHAPE": "[1, 2]"}},
                        stages={"source": source, "ttir": "module {\n}\n"},
                        passes=[PassRecord("ttir", "cse[x]", ir_after="module {\n}\n")],
                        launches=[Launch(grid=(1,), backend="interpreter", time_ms=0.1)],
                        notes=list(notes))


def _rendered(app, selector: str) -> str:
    return str(app.query_one(selector).render())


def _run(coroutine):
    return asyncio.run(coroutine)


def test_user_text_is_never_read_as_markup():
    async def drive():
        app = ExplorerApp([_trace(notes=["no SASS [/red] here"])], list(MARKUP_MESSAGES))
        async with app.run_test(size=(100, 30)) as pilot:
            shown = _rendered(app, "#kernel-messages")
            for view in "234567":
                await pilot.press(view)
            return shown
    shown = _run(drive())
    for message in MARKUP_MESSAGES:
        assert message in shown


def test_a_subscript_and_its_caret_are_shown_as_written():
    async def drive():
        app = ExplorerApp([], [SUBSCRIPT_ERROR])
        async with app.run_test(size=(100, 30)):
            return _rendered(app, "#kernel-messages")
    lines = _run(drive()).splitlines()
    assert "    s = v[i]" in lines
    caret = lines[lines.index("    s = v[i]") + 1]
    assert caret.index("^") == "    s = v[i]".index("v[i]")     # under the v, not past the text


def test_a_real_subscript_error_reaches_the_app_with_its_caret(tmp_path):
    from compiler.inspect import run_file
    script = tmp_path / "sub.py"
    script.write_text(KERNEL.replace("    offs = tl.arange(0, BLOCK)\n",
                                     "    offs = tl.arange(0, BLOCK)\n"
                                     "    s = offs[0]\n"
                                     "    vals = [o for o in range(2)]\n"))
    result = run_file(script, interpret=True)

    async def drive():
        app = ExplorerApp(result.traces, [result.error] + result.messages)
        async with app.run_test(size=(120, 30)):
            return _rendered(app, "#kernel-messages")
    lines = _run(drive()).splitlines()
    assert lines[0].startswith(f"{script}:10:") and "error" in lines[0]
    assert lines[1].strip() == "s = offs[0]"          # the source line as written, [0] too
    assert lines[1][lines[2].index("^")] == "0"           # the caret on the index, in the text


def test_notes_are_on_the_kernels_screen():
    async def drive():
        app = ExplorerApp([_trace(notes=["no SASS: neither nvdisasm nor cuobjdump was found"])])
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.press("enter")
            await pilot.pause()
            return _rendered(app, "#stage-notes"), app.query_one("#stage-notes").display
    text, shown = _run(drive())
    assert shown and "note: no SASS: neither nvdisasm nor cuobjdump was found" in text


def test_the_messages_panel_scrolls_to_the_real_error():
    messages = [f"note {i}: a kernel was not launched" for i in range(40)]
    messages.append("06-fused-attention.py:12:5: unknown name tl.make_block_ptr")

    async def drive():
        app = ExplorerApp([_trace()], messages)
        async with app.run_test(size=(100, 30)) as pilot:
            panel = app.query_one("#kernel-messages-scroll")
            await pilot.pause()
            scrollable = panel.max_scroll_y > 0
            panel.scroll_end(animate=False)
            await pilot.pause()
            return scrollable, panel.scroll_y, panel.max_scroll_y
    scrollable, y, end = _run(drive())
    assert scrollable and y == end


@pytest.fixture
def kernel_file(tmp_path):
    path = tmp_path / "double.py"
    path.write_text(KERNEL)
    return path


def test_a_misspelt_pass_is_an_error_with_suggestions(kernel_file, capsys):
    code = cli.main([str(kernel_file), "--json", "--no-gpu",
                     "--passes", "ttgir=convert-triton-to-tritongpu,coalesse"])
    err = capsys.readouterr().err
    assert code == 2
    assert "unknown pass 'coalesse' (did you mean 'coalesce'?)" in err
    assert err.rstrip().endswith("^") and "ttgir=convert-triton-to-tritongpu,coalesse" in err


def test_an_unparsable_pipeline_is_an_error(kernel_file, capsys):
    assert cli.main([str(kernel_file), "--json", "--passes", "ttir=cse{"]) == 2
    assert "unbalanced '{'" in capsys.readouterr().err


@register_pass
class _BreakTheIR(Pass):
    """A deliberately broken pass (tests only): it fails on every module."""

    name = "test-break-the-ir"
    stage = "ttgir"
    requires = TTGIR

    def run(self, module, ctx):
        raise RuntimeError("this pass breaks the IR")


def test_a_pipeline_that_breaks_the_ir_is_an_error_not_zero_passes(kernel_file, capsys):
    assert "test-break-the-ir" in PASSES
    code = cli.main([str(kernel_file), "--json", "--no-gpu", "--passes",
                     "ttgir=convert-triton-to-tritongpu,test-break-the-ir"])
    captured = capsys.readouterr()
    assert code == 1
    assert "test-break-the-ir" in captured.err and "this pass breaks the IR" in captured.err
    assert json.loads(captured.out)["error"]


def test_a_missing_or_corrupt_trace_file_is_a_clear_message(tmp_path, capsys):
    assert cli.main(["--trace", str(tmp_path / "missing.json")]) == 2
    assert "missing.json: no such trace file" in capsys.readouterr().err
    corrupt = tmp_path / "corrupt.json"
    corrupt.write_text('{"kernel_name": "k",\n "passes": [}')
    assert cli.main(["--trace", str(corrupt), "--json"]) == 2
    err = capsys.readouterr().err
    assert "corrupt.json:2:" in err and "not a trace file" in err and "Traceback" not in err


def test_ctrl_c_stops_the_script_and_keeps_what_was_recorded(tmp_path, capsys):
    script = tmp_path / "long.py"
    script.write_text(KERNEL + "raise KeyboardInterrupt\n")
    code = cli.main([str(script), "--json", "--no-gpu"])
    captured = capsys.readouterr()
    data = json.loads(captured.out)
    assert code == 1
    assert [k["kernel"] for k in data["kernels"]] == ["double_kernel"]
    assert "interrupted (Ctrl-C)" in data["error"] and "interrupted (Ctrl-C)" in captured.err


def test_a_progress_line_while_the_script_runs(tmp_path):
    from compiler.inspect import run_file
    script = tmp_path / "slow.py"
    script.write_text(KERNEL + "import time\ntime.sleep(1.3)\n")
    seen = []
    result = run_file(script, interpret=True, progress=seen.append)
    assert result.error is None and seen
    assert seen[-1].kernels == 1 and seen[-1].launches == 1 and seen[-1].elapsed_s > 0.4
    assert seen[-1].line().startswith("running: 1 kernel(s) compiled, 1 launch(es), ")


def test_headless_errors_go_to_stderr_with_a_non_zero_exit(tmp_path, capsys):
    script = tmp_path / "bad.py"
    script.write_text(KERNEL + "y = undefined_name\n")
    assert cli.main([str(script), "--json", "--no-gpu"]) == 1
    err = capsys.readouterr().err
    assert f"{script}:{KERNEL.count(chr(10)) + 1}:5: NameError" in err and "^" in err
    assert cli.main([str(script), "--dump", str(tmp_path / "dump"), "--no-gpu"]) == 1
    assert "NameError" in capsys.readouterr().err


def test_settings_travel_as_arguments_not_environment(kernel_file, monkeypatch):
    import os
    monkeypatch.delenv("TILE_INTERPRET", raising=False)
    monkeypatch.delenv("TILE_PIPELINE_TTGIR", raising=False)
    before = dict(os.environ)
    assert cli.main([str(kernel_file), "--json", "--no-gpu",
                     "--passes", "ttgir=convert-triton-to-tritongpu,coalesce"]) == 0
    assert dict(os.environ) == before


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
