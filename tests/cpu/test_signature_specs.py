"""Kernels without launches (issue 12 item 6): `--signature 'kernel=*fp32,*fp32,i32'
--constexpr BLOCK=1024` compiles what a script only defines, with located errors for bad specs,
and the explorer's `g` prompt does the same in the app."""
from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from compiler import inspect as door
from compiler.signature_spec import (SpecError, parse_constexpr_option, parse_prompt,
                                     parse_signature_option)

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = '''import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)
'''


@pytest.fixture
def script(tmp_path) -> Path:
    path = tmp_path / "defs.py"
    path.write_text(SCRIPT)
    return path


def test_option_parsing_and_located_errors():
    assert parse_signature_option("k=*fp32, *fp16:16,i32") == ("k", ["*fp32", "*fp16:16", "i32"])
    assert parse_constexpr_option("BLOCK=1024") == (None, "BLOCK", 1024)
    assert parse_constexpr_option("k.FLAG=True") == ("k", "FLAG", True)
    with pytest.raises(SpecError) as bad_type:
        parse_signature_option("k=*fp32,*fq32")
    lines = str(bad_type.value).splitlines()
    assert lines[0].startswith("--signature 'k=*fp32,*fq32':9: '*fq32' is not a signature")
    assert lines[2].index("^") == lines[1].index("*fq32")
    with pytest.raises(SpecError, match="an empty type"):
        parse_signature_option("k=i32,,i32")
    with pytest.raises(SpecError, match="write KERNEL=TYPE"):
        parse_signature_option("*fp32,i32")
    with pytest.raises(SpecError, match="Python literal") as bad_value:
        parse_constexpr_option("BLOCK=10x24")
    lines = str(bad_value.value).splitlines()
    assert lines[2].index("^") == lines[1].index("10x24")
    spec = parse_prompt("k=*fp32,i32 BLOCK=64 k.X=1")
    assert spec.types == ["*fp32", "i32"] and spec.constexprs == {"BLOCK": 64, "X": 1}
    with pytest.raises(SpecError, match="other is not k"):
        parse_prompt("k=i32 other.X=1")


def _cli(*args):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "explorer.cli", *args, "--no-gpu", "--json"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_cli_compiles_an_unlaunched_kernel(script):
    proc = _cli(str(script), "--signature", "scale_kernel=*fp32,*fp32,i32",
                "--constexpr", "BLOCK=256")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    [kernel] = out["kernels"]
    assert kernel["specialization"]["signature"] == {"x_ptr": "*fp32", "out_ptr": "*fp32",
                                                     "n": "i32"}
    assert kernel["specialization"]["constexprs"] == {"BLOCK": "256"}
    assert "ptx" in kernel["stages"]
    assert any("compiled with --signature" in m for m in out["messages"])


@pytest.mark.parametrize("args, needle, code", [
    (["--signature", "scale_kernel=*fp32,i32", "--constexpr", "BLOCK=64"],
     "defs.py:6:1: scale_kernel takes 3 runtime argument(s) (x_ptr, out_ptr, n) but "
     "--signature gives 2", 1),
    (["--signature", "scale_kernel=*fp32,*fp32,i32"], "give the constexpr(s) BLOCK", 1),
    (["--signature", "nope=i32"], "a kernel 'nope' that the script does not define "
                                  "(its kernels: scale_kernel)", 1),
    (["--signature", "scale_kernel=*fp32,*fp32,i32", "--constexpr", "BLOCKZ=1"],
     "no kernel of the script has a constexpr named 'BLOCKZ'", 1),
    (["--constexpr", "BLOCK=x y"], "the value must be a Python literal", 2),
])
def test_cli_bad_specs_are_located_errors(script, args, needle, code):
    proc = _cli(str(script), *args)
    assert proc.returncode == code, proc.stderr
    assert needle in proc.stderr and "Traceback" not in proc.stderr
    if "defs.py:6:1" in needle:
        assert "    def scale_kernel(" in proc.stderr and "\n    ^" in proc.stderr


def test_constexpr_alone_completes_a_guessed_signature(script):
    proc = _cli(str(script), "--constexpr", "BLOCK=128")
    assert proc.returncode == 0, proc.stderr
    [kernel] = json.loads(proc.stdout)["kernels"]
    assert kernel["specialization"]["constexprs"] == {"BLOCK": "128"}


def test_app_prompt_compiles_a_kernel(script):
    from explorer.app import ExplorerApp
    from explorer.views.signature_prompt import SignaturePrompt
    result = door.run_file(script, interpret=True)
    assert not result.traces and "scale_kernel" in result.kernels

    async def body():
        app = ExplorerApp([], result.messages, uncompiled=["scale_kernel"],
                          signature_compiler=lambda text: door.compile_with_signature(
                              result.kernels, text))
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.press("g")
            await pilot.pause()
            assert isinstance(app.screen, SignaturePrompt)
            assert "scale_kernel" in str(app.screen.query_one("#signature-help").render())
            prompt = app.screen.query_one("#signature-input")
            prompt.value = "scale_kernel=*fp32,i32 BLOCK=64"
            await pilot.press("enter")
            await pilot.pause()
            error = str(app.screen.query_one("#signature-error").render())
            assert "takes 3 runtime argument(s)" in error
            prompt.value = "scale_kernel=*fp32,*fp32,i32 BLOCK=64"
            await pilot.press("enter")
            await pilot.pause()
            assert not isinstance(app.screen, SignaturePrompt)
            assert [t.kernel_name for t in app.traces] == ["scale_kernel"]
            assert app.trace.specialization["constexprs"] == {"BLOCK": "64"}
            assert app.query_one("#kernel-table").row_count == 1
            await pilot.press("g")
            await pilot.pause()
            await pilot.press("escape")
            await pilot.pause()
            assert not isinstance(app.screen, SignaturePrompt)
    asyncio.run(body())


def test_app_prompt_without_a_script_says_so():
    from explorer.app import ExplorerApp

    async def body():
        app = ExplorerApp([])
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.press("g")
            await pilot.pause()
            assert app.screen is app.screen_stack[0]
    asyncio.run(body())
