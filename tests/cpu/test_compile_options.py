"""One channel for compile facts: every accepted option does what it says or is refused, pass
options are checked like launch options, the llir pipeline runs through the pass manager, and
the kernel's metadata is the one source of num_warps after the ttgir stage."""
from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from compiler.passes.requirements import PassOrderError

import compiler as triton
import compiler.language as tl
from compiler.codegen.backend import OptionError
from compiler.codegen.lowering import LoweringError, lower_module
from compiler.compiler import CompileOptions, compile as compile_kernel
from compiler.ir.parser import parse_module
from compiler.metadata import KernelMetadata, MetadataError
from compiler.passes.manager import PassFailure, PassManager, PipelineError, parse_pipeline
from compiler.runtime.specialization import ASTSource

ROOT = Path(__file__).resolve().parents[2]
NO_BINARIES = {"build_cubin": False, "build_sass": False}


@triton.jit
def fma_kernel(x_ptr, y_ptr, z_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    tl.store(out_ptr + offs, x * y + tl.load(z_ptr + offs))


@triton.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, EXPLICIT: tl.constexpr):
    offs = tl.arange(0, 16)
    idx = offs[:, None] * 16 + offs[None, :]
    a = tl.load(a_ptr + idx)
    b = tl.load(b_ptr + idx)
    if EXPLICIT:
        c = tl.dot(a, b, input_precision="tf32x3")
    else:
        c = tl.dot(a, b)
    tl.store(c_ptr + idx, c)


def fma_source() -> ASTSource:
    return ASTSource(fma_kernel, {"x_ptr": "*fp32", "y_ptr": "*fp32", "z_ptr": "*fp32",
                                  "out_ptr": "*fp32"}, {"BLOCK": 128})


def dot_source(explicit: bool = False) -> ASTSource:
    return ASTSource(dot_kernel, {"a_ptr": "*fp32", "b_ptr": "*fp32", "c_ptr": "*fp32"},
                     {"EXPLICIT": explicit})


# ---- options that were accepted and never read ------------------------------------------------

def test_enable_fp_fusion_decides_whether_mul_add_becomes_fma():
    fused = compile_kernel(fma_source(), {**NO_BINARIES, "enable_fp_fusion": True},
                           stop_after="ptx")
    apart = compile_kernel(fma_source(), {**NO_BINARIES, "enable_fp_fusion": False},
                           stop_after="ptx")
    assert "fma.rn.f32" in fused.asm["ptx"]
    assert "fma.rn.f32" not in apart.asm["ptx"] and "mul.rn.f32" in apart.asm["ptx"]
    assert " contract " not in apart.asm["llir"]


def test_ptx_version_sets_the_ptx_dot_version():
    default = compile_kernel(fma_source(), NO_BINARIES, stop_after="ptx")
    newer = compile_kernel(fma_source(), {**NO_BINARIES, "ptx_version": 84}, stop_after="ptx")
    assert "\n.version 8.0\n" in default.asm["ptx"]
    assert "\n.version 8.4\n" in newer.asm["ptx"]


@pytest.mark.parametrize("options,pattern", [
    ({"ptx_version": 79}, r"option 'ptx_version' = 79 is not allowed"),
    ({"warp_size": 64}, r"option 'warp_size' = 64 .* 32 \(NVIDIA warps"),
    ({"default_dot_input_precision": "fp8"}, r"option 'default_dot_input_precision'"),
    ({"pipelines": {"lir": "x"}}, r"'pipelines' names unknown stage\(s\) lir"),
])
def test_options_out_of_range_are_refused_by_name(options, pattern):
    with pytest.raises(OptionError, match=pattern):
        CompileOptions.from_env(options, environ={})


def test_default_dot_input_precision_is_tl_dot_default():
    ttir = compile_kernel(dot_source(), {"default_dot_input_precision": "ieee"},
                          stop_after="ttir").asm["ttir"]
    assert "inputPrecision = ieee" in ttir
    plain = compile_kernel(dot_source(), stop_after="ttir").asm["ttir"]
    assert "inputPrecision = tf32" in plain
    explicit = compile_kernel(dot_source(True), {"default_dot_input_precision": "ieee"},
                              stop_after="ttir").asm["ttir"]
    assert "inputPrecision = tf32x3" in explicit      # the call's own value wins


def test_debug_reaches_the_front_end_on_the_gpu_path(monkeypatch):
    import compiler.frontend as frontend
    seen = []
    original = frontend.generate_ttir

    def spy(fn, signature, constexprs, attrs=None, options=None, **kwargs):
        seen.append(dict(options))
        return original(fn, signature, constexprs, attrs, options, **kwargs)

    monkeypatch.setattr(frontend, "generate_ttir", spy)
    compile_kernel(fma_source(), {"debug": True}, stop_after="ttir")
    compile_kernel(fma_source(), {"default_dot_input_precision": "ieee"}, stop_after="ttir")
    assert seen[0]["debug"] is True and seen[1]["debug"] is False
    assert seen[1]["default_dot_input_precision"] == "ieee"


def test_environment_is_read_once_into_the_options():
    env = {"TILE_DEBUG": "1", "TILE_PIPELINE_LLIR": "convert-tritongpu-to-llvm"}
    opts = CompileOptions.from_env({}, environ=env)
    assert opts.debug is True and opts.pipelines == {"llir": "convert-tritongpu-to-llvm"}
    assert CompileOptions.from_env({"debug": False}, environ=env).debug is False


@pytest.mark.parametrize("option,default", [
    ("mma_v2_tf32_int8", True),     # on since the H200 verified it
    ("tf32_ldmatrix", True),        # on since the H200 verified it
])
def test_switch_knobs_set_their_compile_options(option, default, monkeypatch):
    """Each ENV_SWITCHES option: its knob (knobs.nvidia.<option>) writes the variable, which
    the options read unless the caller gives the option."""
    from compiler import knobs
    from compiler.stage_state import ENV_SWITCHES
    variable = dict((o, v) for v, o in ENV_SWITCHES)[option]
    monkeypatch.delenv(variable, raising=False)
    assert getattr(knobs.nvidia, option) is default
    assert getattr(CompileOptions.from_env({}), option) is default
    setattr(knobs.nvidia, option, not default)        # writes the variable (propagate_env)
    try:
        assert getattr(CompileOptions.from_env({}), option) is (not default)
        assert option in CompileOptions.from_env({}).key_parts()
        assert getattr(CompileOptions.from_env({option: default}), option) is default
    finally:
        knobs.nvidia.reset()
        os.environ.pop(variable, None)
    raw = "1" if not default else "0"
    assert getattr(CompileOptions.from_env({}, environ={variable: raw}), option) is (not default)


# ---- pass options, checked like launch options (issue 14 item 5) ------------------------------

@pytest.mark.parametrize("pipeline,pattern", [
    ("convert-triton-to-tritongpu{num-warps=3}",
     r"pass 'convert-triton-to-tritongpu': option 'num-warps' = 3 is not allowed; it must be "
     r"a power of two from 1 to 32"),
    ("convert-triton-to-tritongpu{num-warps=64}", r"'num-warps' = 64 is not allowed"),
    ("convert-triton-to-tritongpu{num-warps=0}", r"'num-warps' = 0 is not allowed"),
    ("convert-triton-to-tritongpu{threads-per-warp=64}",
     r"'threads-per-warp' = 64 is not allowed; it must be 32"),
    ("convert-triton-to-tritongpu{num-ctas=2}", r"'num-ctas' = 2 is not allowed"),
    ("convert-triton-to-tritongpu{target=rocm}", r"'target' = 'rocm' is not allowed"),
    ("pipeline{num-stages=0}", r"pass 'pipeline': option 'num-stages' = 0"),
    ("pipeline{num-stages=9}", r"pass 'pipeline': option 'num-stages' = 9"),
    ("loop-unroll{max-trip-count=-1}", r"pass 'loop-unroll': option 'max-trip-count' = -1"),
    ("llvm-optimize{level=4}", r"pass 'llvm-optimize': option 'level' = 4"),
    ("convert-triton-to-tritongpu{num-warps=four}", r"option 'num-warps' takes a int"),
])
def test_bad_pass_options_name_the_pass_and_the_option(pipeline, pattern):
    with pytest.raises(PipelineError, match=pattern):
        parse_pipeline(pipeline)


def test_bad_pass_option_stops_a_compile_before_any_pass_runs():
    with pytest.raises(PipelineError, match="'num-warps' = 3 is not allowed"):
        compile_kernel(fma_source(), pipelines={"ttgir": "convert-triton-to-tritongpu{"
                                                         "num-warps=3}"}, stop_after="ttgir")


def test_pass_instances_are_checked_too():
    from compiler.passes.base import PassOptionError
    from compiler.passes.manager import pass_class
    with pytest.raises(PassOptionError, match="'threads-per-warp' = 16"):
        pass_class("convert-triton-to-tritongpu")(**{"threads-per-warp": 16})


def test_compile_options_are_bound_to_every_pass_when_the_pipeline_is_built():
    opts = CompileOptions.from_env({"num_warps": 8, "num_stages": 2, "arch": 80}, environ={})
    manager = PassManager("ttgir", None, [], opts)
    by_name = {p.name: p for p in manager.passes}
    convert = by_name["convert-triton-to-tritongpu"]
    assert convert.options == {"num-warps": 8, "threads-per-warp": 32, "num-ctas": 1,
                               "target": "cuda:80"}
    assert by_name["pipeline"].options["num-stages"] == 2
    assert all(p.compile_options is opts for p in manager.passes)
    given = PassManager("ttgir", "convert-triton-to-tritongpu{num-warps=2}", [], opts)
    assert given.passes[0].options["num-warps"] == 2          # the pipeline's value wins


def test_the_pipelines_num_warps_is_the_kernels():
    kernel = compile_kernel(fma_source(), NO_BINARIES, stop_after="llir", pipelines={
        "ttgir": "convert-triton-to-tritongpu{num-warps=2},coalesce,allocate-shared-memory"})
    assert kernel.metadata.num_warps == 2 and kernel.num_warps == 2
    assert '"nvvm.reqntid"="64"' in kernel.asm["llir"]          # 2 warps of 32 threads


# ---- the llir stage through the pass manager ----------------------------------------------------

def test_llir_pipeline_runs_through_the_pass_manager():
    kernel = compile_kernel(fma_source(), NO_BINARIES, stop_after="llir",
                            pipelines={"llir": "convert-tritongpu-to-llvm,llvm-optimize{level=1}"})
    llir = [p for p in kernel.trace.passes if p.stage == "llir"]
    assert [p.name for p in llir] == ["convert-tritongpu-to-llvm", "llvm-optimize"]
    assert llir[1].options == {"level": 1} and llir[1].ir_after == kernel.asm["llir"]
    assert llir[0].op_counts["instructions"] > 0 and llir[0].doc


def test_llir_pipeline_from_the_environment_is_honoured(monkeypatch):
    monkeypatch.setenv("TILE_PIPELINE_LLIR", "convert-tritongpu-to-llvm")
    kernel = compile_kernel(fma_source(), NO_BINARIES, stop_after="llir")
    assert [p.name for p in kernel.trace.passes if p.stage == "llir"] == [
        "convert-tritongpu-to-llvm"]
    assert 'define ptx_kernel void @"fma_kernel"' in kernel.asm["llir"]   # not optimized


@pytest.mark.parametrize("pipeline,error,pattern", [
    ("llvm-optimize", PassFailure, "put convert-tritongpu-to-llvm before it"),
    ("", ValueError, "start it with convert-tritongpu-to-llvm"),
    ("inline", PipelineError, "pass 'inline' belongs to the ttir stage"),
])
def test_a_wrong_llir_pipeline_is_refused_with_a_message(pipeline, error, pattern):
    with pytest.raises(error, match=pattern):
        compile_kernel(fma_source(), NO_BINARIES, stop_after="llir", pipelines={"llir": pipeline})


def test_llir_passes_cannot_run_in_the_ttgir_pipeline():
    with pytest.raises(PipelineError, match="belongs to the llir stage"):
        PassManager("ttgir", "llvm-optimize")


# ---- kernel metadata --------------------------------------------------------------------------

def test_metadata_is_made_by_the_ttgir_stage_and_completed_by_the_lowering():
    kernel = compile_kernel(fma_source(), {**NO_BINARIES, "num_warps": 2}, stop_after="llir")
    meta = kernel.metadata
    assert (meta.name, meta.num_warps, meta.threads_per_warp, meta.num_ctas, meta.target_name) == \
        ("fma_kernel", 2, 32, 1, "cuda:90")
    assert (meta.target.backend, meta.target.arch) == ("cuda", 90)      # Triton's GPUTarget
    assert meta.arg_kinds == ("ptr<f32>",) * 4
    assert KernelMetadata.from_dict(meta.to_dict()) == meta
    assert meta["num_warps"] == 2 and meta.get("missing", 7) == 7


def test_modules_without_num_warps_are_refused_not_defaulted():
    ttir = compile_kernel(fma_source(), stop_after="ttir").ttir_module
    with pytest.raises(MetadataError, match="no 'ttg.num-warps'"):
        KernelMetadata.from_ttgir(ttir)
    with pytest.raises(LoweringError, match="run convert-triton-to-tritongpu before it"):
        lower_module(ttir)
    # the pass manager checks coalesce's declared requirements before it runs
    with pytest.raises(PassOrderError, match="'coalesce' needs ttgir.*convert-triton-to-tritongpu"):
        PassManager("ttgir", "coalesce").run(parse_module(compile_kernel(
            fma_source(), stop_after="ttir").asm["ttir"]))


def test_compile_starts_from_a_parsed_ttgir_module(reference_dir):
    module = parse_module((reference_dir / "add.ttgir").read_text())
    kernel = compile_kernel(module, {**NO_BINARIES, "snapshots": False}, stop_after="ptx")
    assert kernel.metadata.num_warps == 4 and ".entry add_kernel" in kernel.asm["ptx"]


# ---- one direction: runtime -> driver -> backend stages -> passes / codegen -------------------

def _imported_modules(path: Path) -> set:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def test_backend_stages_and_passes_never_import_the_driver():
    for folder in ("codegen", "passes"):
        for path in (ROOT / "compiler" / folder).glob("*.py"):
            assert "compiler.compiler" not in _imported_modules(path), path
    for name in ("stage_state.py", "metadata.py"):
        assert "compiler.compiler" not in _imported_modules(ROOT / "compiler" / name)
    assert not (ROOT / "compiler" / "codegen" / "compile.py").exists()


def test_the_backend_lists_its_stages_by_direct_reference():
    from compiler.codegen import nvidia_backend, nvidia_stages
    source = (ROOT / "compiler" / "codegen" / "nvidia_backend.py").read_text()
    assert "import_module" not in source and "importlib" not in source
    stages: dict = {}
    nvidia_backend.NvidiaBackend().add_stages(stages, None)
    assert list(stages.items()) == list(nvidia_stages.STAGES)
    backend_source = (ROOT / "compiler" / "codegen" / "backend.py").read_text()
    assert "load_binary" not in backend_source and "device_capability" not in backend_source


# ---- the default architecture: the present GPU's, as in Triton ---------------------------------
class _FakeDriver:
    """An active driver whose current device is an sm_`arch` GPU (no CUDA needed)."""

    def __init__(self, arch: int):
        self.arch = arch

    def get_current_target(self):
        from compiler.codegen.backend import GPUTarget
        return GPUTarget("cuda", self.arch, 32)


def _fake_gpu(monkeypatch, arch: int) -> None:
    from compiler.runtime import active_driver
    monkeypatch.setattr(active_driver, "active", lambda: _FakeDriver(arch))


def test_without_a_gpu_the_default_architecture_is_sm_90(monkeypatch):
    from compiler.runtime import active_driver
    monkeypatch.setattr(active_driver, "active", active_driver.InterpreterDriver)
    kernel = compile_kernel(fma_source(), NO_BINARIES, stop_after="ptx")
    assert kernel.metadata.target.arch == 90 and ".target sm_90" in kernel.asm["ptx"]


def test_a_present_gpus_capability_is_the_default_architecture(monkeypatch):
    _fake_gpu(monkeypatch, 80)
    kernel = compile_kernel(fma_source(), NO_BINARIES, stop_after="ptx")   # the jit's path
    assert kernel.metadata.target.arch == 80 and ".target sm_80" in kernel.asm["ptx"]
    ttir = compile_kernel(fma_source(), NO_BINARIES, stop_after="ttir").asm["ttir"]
    from_file = compile_kernel(parse_module(ttir), NO_BINARIES, stop_after="ptx")
    assert ".target sm_80" in from_file.asm["ptx"]


def test_an_explicit_architecture_wins_over_the_present_gpu(monkeypatch):
    from compiler.codegen.backend import GPUTarget
    _fake_gpu(monkeypatch, 80)
    assert ".target sm_90" in compile_kernel(fma_source(), {**NO_BINARIES, "arch": 90},
                                             stop_after="ptx").asm["ptx"]
    assert ".target sm_86" in compile_kernel(fma_source(), NO_BINARIES, stop_after="ptx",
                                             target=GPUTarget("cuda", 86, 32)).asm["ptx"]


def test_a_gpu_the_backend_cannot_target_is_named_in_the_error(monkeypatch):
    _fake_gpu(monkeypatch, 65)
    with pytest.raises(OptionError, match=r"the GPU present is sm_65.*pass arch="):
        compile_kernel(fma_source(), NO_BINARIES, stop_after="ttir")
