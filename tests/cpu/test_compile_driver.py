"""The compile driver: stages in order, the disk cache, starting from and overriding stages."""
from __future__ import annotations

from dataclasses import fields

import pytest

import compiler as triton
import compiler.language as tl
from compiler.codegen.backend import GPUTarget
from compiler.codegen.nvidia_backend import NvidiaBackend, NvidiaOptions
from compiler.compiler import CompileOptions, backend_stages, compile as compile_kernel
from compiler.runtime.specialization import ASTSource


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, factor, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * factor, mask=mask)


def source(block=256) -> ASTSource:
    return ASTSource(scale_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32",
                                    "factor": "fp32"}, {"BLOCK": block},
                     {"divisibility_16": ["x_ptr", "out_ptr"]})


def test_every_stage_is_built_and_traced():
    kernel = compile_kernel(source(), {"num_warps": 2})
    for stage in ("source", "ttir", "ttgir", "llir", "ptx"):
        assert kernel.asm[stage], stage
    assert [p.stage for p in kernel.trace.passes][-2:] == ["llir", "llir"]
    assert '"ttg.num-warps" = 2 : i32' in kernel.asm["ttgir"]
    assert ".entry scale_kernel" in kernel.asm["ptx"]
    assert kernel.metadata["arg_kinds"] == ("ptr<f32>", "ptr<f32>", "i32", "f32")


def test_disk_cache_hit_and_bypass(tmp_path, monkeypatch):
    monkeypatch.setenv("TILE_CACHE_DIR", str(tmp_path))
    first = compile_kernel(source(128))
    second = compile_kernel(source(128))
    assert not first.from_disk_cache and second.from_disk_cache
    assert second.asm["ptx"] == first.asm["ptx"]
    assert len(second.trace.passes) == len(first.trace.passes)
    assert second.ttir_module.ops[0].attributes["sym_name"].value == "scale_kernel"
    other = compile_kernel(source(128), {"num_warps": 8})
    assert not other.from_disk_cache
    monkeypatch.setenv("TILE_ALWAYS_COMPILE", "1")
    assert not compile_kernel(source(128)).from_disk_cache


def test_compile_starts_from_a_ttgir_file(reference_dir, tmp_path):
    kernel = compile_kernel(reference_dir / "add.ttgir")
    assert kernel.name == "add_kernel"
    assert kernel.trace.overrides["ttgir"].endswith("add.ttgir")
    assert "ld.global.v4.b32" in kernel.asm["ptx"]


def test_override_dir_replaces_a_stage(tmp_path, monkeypatch):
    ttir = compile_kernel(source(64), stop_after="ttir").asm["ttir"]
    edited = ttir.replace("arith.mulf", "arith.addf")
    (tmp_path / "scale_kernel.ttir").write_text(edited)
    kernel = compile_kernel(source(64), {"override_dir": str(tmp_path)})
    assert kernel.trace.overrides["ttir"] == str(tmp_path / "scale_kernel.ttir")
    assert "arith.addf" in kernel.asm["ttgir"] and "arith.mulf" not in kernel.asm["ttgir"]


def test_bad_options_are_named():
    with pytest.raises(ValueError, match="unknown compile option"):
        CompileOptions.from_env({"num_wraps": 4}, environ={})
    with pytest.raises(ValueError, match="did you mean 'num_warps'"):
        CompileOptions.from_env({"num_wraps": 4}, environ={})
    with pytest.raises(ValueError, match="num_warps' = 3 is not allowed.*power of 2"):
        CompileOptions.from_env({"num_warps": 3}, environ={})
    with pytest.raises(ValueError, match="maxnreg' = '64' is not allowed.*16 to 255"):
        CompileOptions.from_env({"maxnreg": "64"}, environ={})
    with pytest.raises(ValueError, match="snapshots' takes True or False"):
        CompileOptions.from_env({"snapshots": 1}, environ={})
    with pytest.raises(ValueError, match="num_ctas' = 2 is not allowed"):
        CompileOptions.from_env({"num_ctas": 2}, environ={})


def test_backend_options_are_the_one_source_of_target_options():
    """CompileOptions derives from the backend's options class: the backend owns (and checks)
    the target options, the driver adds only its own fields."""
    backend_names = {f.name for f in fields(NvidiaOptions)}
    driver_names = set(CompileOptions.driver_option_names())
    assert driver_names == {"pipelines", "snapshots", "verify_each", "build_cubin",
                            "build_sass", "override_dir", "dump_dir", "stage_timeout_s",
                            "allow_non_constexpr_globals"}
    assert set(CompileOptions.__dataclass_fields__) == backend_names | driver_names
    assert set(CompileOptions.backend_option_names()) == backend_names
    opts = CompileOptions.from_env({"num_warps": 8, "arch": "sm_80", "maxnreg": 128,
                                    "build_sass": False}, environ={})
    parsed = NvidiaBackend(GPUTarget("nvidia", 90, 32)).parse_options(
        {"num_warps": 8, "arch": "sm_80", "maxnreg": 128})
    assert opts.backend_options == parsed and type(opts.backend_options) is NvidiaOptions
    assert (opts.arch, opts.ptx_arch, opts.build_sass) == (80, "sm_80", False)
    assert CompileOptions.from_env({}, environ={}).arch == 90


def test_key_parts_follow_every_code_changing_option():
    base = CompileOptions.from_env({}, environ={})
    parts = base.key_parts()
    assert {"num_warps", "maxnreg", "arch", "line_info", "pipelines", "build_sass"} <= set(parts)
    assert "dump_dir" not in parts and "snapshots" not in parts
    for change in ({"maxnreg": 64}, {"num_stages": 2}, {"default_dot_input_precision": "ieee"},
                   {"pipelines": {"ttir": "cse"}}):
        assert CompileOptions.from_env(change, environ={}).key_parts() != parts, change
    assert CompileOptions.from_env({"dump_dir": "x"}, environ={}).key_parts() == parts


def test_jit_launch_options_are_compile_options():
    from compiler.runtime.jit import LAUNCH_OPTIONS
    assert set(LAUNCH_OPTIONS) <= set(CompileOptions.__dataclass_fields__)


def test_backend_stages_get_the_parsed_backend_options(monkeypatch):
    seen = []
    original = NvidiaBackend.add_stages

    def spy(self, stages, options):
        seen.append(options)
        original(self, stages, options)

    monkeypatch.setattr(NvidiaBackend, "add_stages", spy)
    opts = CompileOptions.from_env({"num_warps": 2, "arch": 80, "maxnreg": 40}, environ={})
    assert list(backend_stages(opts)) == ["ttir", "ttgir", "llir", "ptx", "cubin", "sass"]
    assert seen == [opts.backend_options]
    assert (seen[0].num_warps, seen[0].arch, seen[0].maxnreg) == (2, 80, 40)


def test_maxnreg_reaches_ptx_and_ptxas(reference_dir, monkeypatch):
    """maxnreg caps the registers: `.maxnreg` in the PTX (ptxas ignores its --maxrregcount
    flag for a `.reqntid` kernel) and the flag on the ptxas command line."""
    import subprocess

    import compiler.codegen.cubin as cubin
    from compiler.codegen.toolchain import find_tool
    if find_tool("ptxas") is None:
        pytest.skip("ptxas is not installed")
    commands = []
    real_run = subprocess.run

    def run(cmd, *args, **kwargs):
        commands.append(cmd)
        return real_run(cmd, *args, **kwargs)

    monkeypatch.setattr(cubin.subprocess, "run", run)
    free = compile_kernel(reference_dir / "layernorm.ttgir", {"build_sass": False})
    capped = compile_kernel(reference_dir / "layernorm.ttgir",
                            {"maxnreg": 32, "build_sass": False})
    assert free.trace.cubin_info["registers"] > 32
    assert capped.trace.cubin_info["registers"] <= 32
    assert ".maxnreg 32" in capped.asm["ptx"] and ".maxnreg" not in free.asm["ptx"]
    assert "--maxrregcount=32" in commands[-1]
    assert not any(arg.startswith("--maxrregcount") for arg in commands[0])


def test_pipelines_from_the_environment(monkeypatch):
    opts = CompileOptions.from_env({}, environ={"TILE_PIPELINE_TTIR": "cse,dce"})
    assert opts.pipelines == {"ttir": "cse,dce"}
    kernel = compile_kernel(source(32), {"pipelines": {"ttir": "cse,dce"}}, stop_after="ttir")
    assert [p.name for p in kernel.trace.passes] == ["cse", "dce"]


def test_python_lines_map_to_their_ops():
    kernel = compile_kernel(source(64), stop_after="ttgir")
    store_line = scale_kernel.fn.__code__.co_firstlineno + 4     # the tl.store line
    lines = kernel.trace.python_to_ops[str(store_line)]
    for stage in ("ttir", "ttgir"):
        text = kernel.asm[stage].splitlines()
        names = [text[n - 1] for n in lines[stage]]
        assert any("tt.store" in line for line in names), names


def test_kernel_dump_env_writes_every_stage_even_through_the_interpreter(tmp_path):
    import subprocess
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parents[2]
    env = {"TILE_KERNEL_DUMP": "1", "TILE_DUMP_DIR": str(tmp_path / "dump"),
           "TILE_INTERPRET": "1", "TILE_CACHE_DIR": str(tmp_path / "cache"),
           "PATH": __import__("os").environ["PATH"], "PYTHONPATH": str(root)}
    subprocess.run([sys.executable, str(root / "sample_kernels" / "vector_add.py")], env=env,
                   check=True, capture_output=True)
    files = sorted(p.name for p in (tmp_path / "dump" / "add_kernel").iterdir())
    assert files[0] == "00-source.py" and any(f.endswith("-ttgir-coalesce.mlir") for f in files)
    assert "trace.json" in files


def test_launch_num_warps_fills_only_options_the_pipeline_left_out():
    ttgir = "convert-triton-to-tritongpu{num-warps=8},coalesce"
    given = compile_kernel(source(256), {"num_warps": 2}, pipelines={"ttgir": ttgir},
                           stop_after="ttgir")
    assert '"ttg.num-warps" = 8 : i32' in given.asm["ttgir"]
    defaulted = compile_kernel(source(256), {"num_warps": 2},
                               pipelines={"ttgir": "convert-triton-to-tritongpu,coalesce"},
                               stop_after="ttgir")
    assert '"ttg.num-warps" = 2 : i32' in defaulted.asm["ttgir"]
