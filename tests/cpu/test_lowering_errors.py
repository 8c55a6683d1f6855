"""The lowering never lets an internal exception out (issue 14, item 3): an unsupported or
malformed case is a `LoweringError` at the op (file:line:col, the source line, a caret, the op
and its layouts); any other exception becomes a located LoweringError saying it is a compiler
bug; LLVM IR that LLVM would reject is caught before LLVM sees it; a watchdog bounds every
stage and ptxas."""
from __future__ import annotations

import re
import time

import pytest

from compiler.codegen.cubin import PtxasError, assemble
from compiler.codegen.backend import OptionError
from compiler.codegen.lowering import LoweringError, LoweringOptions, lower_module
from compiler.codegen.registry import LOWERINGS
from compiler.compiler import compile as compile_source
from compiler.dialects import tt
from compiler.ir import parse_module
from compiler.ir.verifier_errors import VerificationError
from compiler.passes.base import PASSES, Pass
from compiler.passes.manager import load_all_passes
from compiler.stage_state import CompileOptions
from compiler.watchdog import StageTimeout, Watchdog
from tests.fuzz_lowering import seeds

TO_PTX = {"build_cubin": False, "build_sass": False}


def _seed(name: str) -> str:
    return dict(seeds())[name]


def _lower(text: str, name: str = "mutant.ttgir"):
    return compile_source(parse_module(text, name), options=TO_PTX, stop_after="ptx")


def _lower_unverified(text: str, name: str = "mutant.ttgir"):
    """The lowering alone, on a module the verifier has not seen: the lowering's own checks
    are the second line behind the verifier (which refuses these modules first)."""
    return lower_module(parse_module(text, name), LoweringOptions(ttgir_file=name, optimize=True))


def _lowering_error_text(text: str) -> str:
    """What the unverified lowering raises on `text` (a LoweringError's message)."""
    try:
        _lower_unverified(text)
    except LoweringError as err:
        return str(err)
    return "no error"


def test_a_bad_layout_is_located_at_the_python_line_with_the_op_and_its_layout():
    text = _seed("vector_add").replace("sizePerThread = [1]", "sizePerThread = [0]", 1)
    with pytest.raises(VerificationError, match="must be positive"):
        _lower(text)                        # the verifier refuses it first, at the ttgir line
    with pytest.raises(LoweringError) as info:
        _lower_unverified(text)
    message = str(info.value)
    first, source, caret = message.splitlines()[:3]
    assert re.match(r".*sample_kernels/vector_add\.py:\d+:\d+: error: ", first)
    assert "sizePerThread = [0] must hold powers of two" in first
    col = int(first.split(": error")[0].rsplit(":", 1)[1])
    assert caret == " " * col + "^" and source.strip()
    assert "op: tt.make_range (() -> tensor<" in message and "#ttg.blocked<" in message
    assert not info.value.internal


@pytest.mark.parametrize("field,value,says", [
    ("threadsPerWarp = [32]", "threadsPerWarp = [16]", "has 16 lanes per warp, not 32"),
    ("warpsPerCTA = [4]", "warpsPerCTA = [2]", "spreads over 2 warps but the kernel has 4"),
    ("order = [0]", "order = [1]", "is not a permutation"),
    ("sizePerThread = [1]", "sizePerThread = [1, 1]", "has 2 entries for a rank-1 tensor"),
    ("sizePerThread = [1]", "sizePerThread = [99999999999]", "powers of two"),
    ("sizePerThread = [1]", "sizePerThread = [1099511627776]", "is far too large"),
])
def test_odd_layouts_are_lowering_errors_not_crashes(field, value, says):
    text = _seed("vector_add")
    assert field in text
    mutant = text.replace(field, value, 1)
    with pytest.raises(VerificationError, match=r"mutant\.ttgir:\d+:\d+: error: .*bad layout"):
        _lower(mutant)                       # the first line: the verifier
    with pytest.raises(LoweringError, match=re.escape(says)):
        _lower_unverified(mutant)            # the second line: the lowering's layout check


def test_an_op_without_a_python_location_is_located_at_its_ttgir_line():
    text = re.sub(r" loc\([^()]*(\([^()]*\))?[^()]*\)", "", _seed("vector_add"))
    text = "\n".join(line for line in text.splitlines() if not line.startswith("#loc"))
    text = text.replace("sizePerThread = [1]", "sizePerThread = [3]", 1)
    module = parse_module(text, "k.ttgir")
    with pytest.raises(LoweringError) as info:
        lower_module(module, LoweringOptions(ttgir_file="k.ttgir", optimize=False))
    first, source, caret = str(info.value).splitlines()[:3]
    assert re.match(r"k\.ttgir:\d+: error: ", first)
    assert "tt.make_range" in source
    assert caret.endswith("^") and len(caret) - 1 == len(source) - len(source.lstrip())


def test_an_internal_exception_becomes_a_located_lowering_error(monkeypatch):
    def broken(ctx, op):
        return 1 // 0
    monkeypatch.setitem(LOWERINGS, tt.MakeRangeOp, broken)
    with pytest.raises(LoweringError) as info:
        _lower(_seed("softmax"))
    message = str(info.value)
    assert info.value.internal
    assert "internal error lowering tt.make_range (() -> tensor<" in message
    assert "ZeroDivisionError: integer division or modulo by zero" in message
    assert "compiler bug" in message
    assert re.search(r"at .*sample_kernels/softmax\.py:\d+:\d+", message)
    assert isinstance(info.value.__cause__, ZeroDivisionError)


def test_llvm_ir_llvm_would_abort_on_is_an_exception(tmp_path):
    """A unary math op given two operands made the lowering call an intrinsic with a wrong
    type; LLVM's parser aborted the process on it (debug info makes it verify and abort). Now
    the module is checked first, without debug info. Run in a worker so a regression cannot
    take the test run down."""
    from compiler.isolation import compile_isolated, run_isolated
    text = _seed("softmax").replace("math.exp %row_minus_max_8 :",
                                    "math.rsqrt %row_minus_max_8, %row_minus_max_8 :")
    assert "math.rsqrt" in text
    file = tmp_path / "rsqrt-two-operands.ttgir"
    file.write_text(text)
    # the verifier refuses it (operand counts are declared per op class) ...
    with pytest.raises(Exception, match="'math.rsqrt': expects 1 operands, got 2"):
        compile_isolated(str(file), TO_PTX, stop_after="ptx")
    # ... and the lowering alone, unverified, still never hands LLVM the broken IR
    assert "LLVM IR that LLVM rejects: Intrinsic" in run_isolated(
        _lowering_error_text, text, kernel="softmax_kernel")


def test_expand_dims_axis_out_of_range_is_located():
    text = _seed("matmul")
    changed = text.replace("{axis = 1 : i32}", "{axis = 5 : i32}", 1)
    assert changed != text
    with pytest.raises(VerificationError, match="'tt.expand_dims': axis 5 out of range"):
        _lower(changed)
    with pytest.raises(LoweringError, match="axis = 5 is not a dim of the rank-2 result"):
        _lower_unverified(changed)


# ---- the watchdog ------------------------------------------------------------------------------
class _Forever(Pass):
    """Never returns (tests only)."""

    name = "loop-forever"

    def run(self, module, ctx):
        while True:
            pass


def test_a_hanging_pass_is_stopped_and_named():
    load_all_passes()
    PASSES[_Forever.name] = _Forever
    try:
        start = time.perf_counter()
        with pytest.raises(StageTimeout) as info:
            compile_source(parse_module(_ttir_text()),
                           options={**TO_PTX, "stage_timeout_s": 0.5},
                           pipelines={"ttir": "canonicalize,loop-forever"}, stop_after="ttir")
        assert time.perf_counter() - start < 10
    finally:
        PASSES.pop(_Forever.name, None)
    assert info.value.stage == "ttir" and info.value.pass_name == "loop-forever"
    assert "pass 'loop-forever' of the ttir stage ran past 0.5 s" in str(info.value)


def _ttir_text() -> str:
    from tests.fuzz_pipelines import _sample
    source, options, _, _, _ = _sample("vector_add")
    compiled = compile_source(source, options=options, pipelines={"ttir": ""}, stop_after="ttir")
    return compiled.trace.stage_inputs["ttir"]


def test_a_finished_stage_leaves_no_timer_behind():
    with Watchdog(0.2, "ttir"):
        pass
    time.sleep(0.4)          # the timer was cancelled: nothing is raised here


def test_the_stage_timeout_option_and_its_environment_variable():
    assert CompileOptions.from_env({}, environ={}).stage_timeout_s == 120.0
    assert CompileOptions.from_env({}, environ={"TILE_STAGE_TIMEOUT": "7.5"}).stage_timeout_s == 7.5
    assert CompileOptions.from_env({}, environ={"TILE_STAGE_TIMEOUT": "0"}).stage_timeout_s is None
    assert CompileOptions.from_env({"stage_timeout_s": None}, environ={}).stage_timeout_s is None
    with pytest.raises(OptionError, match="TILE_STAGE_TIMEOUT='soon' is not a number"):
        CompileOptions.from_env({}, environ={"TILE_STAGE_TIMEOUT": "soon"})
    with pytest.raises(OptionError, match="stage_timeout_s"):
        CompileOptions.from_env({"stage_timeout_s": -1}, environ={})


def test_ptxas_past_its_time_limit_is_an_error(tmp_path, monkeypatch):
    fake = tmp_path / "ptxas"
    fake.write_text("#!/bin/sh\nsleep 5\n")
    fake.chmod(0o755)
    from compiler.codegen.toolchain import find_tool
    monkeypatch.setenv("TILE_PTXAS_PATH", str(fake))
    find_tool.cache_clear()                 # tools are looked up once per process
    try:
        start = time.perf_counter()
        with pytest.raises(PtxasError, match="ptxas ran past 0.3 s"):
            assemble(".version 8.0\n", timeout_s=0.3)
        assert time.perf_counter() - start < 4
    finally:
        monkeypatch.undo()
        find_tool.cache_clear()
