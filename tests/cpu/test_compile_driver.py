"""The compile driver: stages in order, the disk cache, starting from and overriding stages."""
from __future__ import annotations

import pytest

import compiler as triton
import compiler.language as tl
from compiler.compiler import CompileOptions, compile as compile_kernel
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
    assert kernel.metadata["arg_kinds"] == ["ptr<f32>", "ptr<f32>", "i32", "f32"]


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
    with pytest.raises(ValueError, match="num_warps must be a power of two"):
        CompileOptions.from_env({"num_warps": 3}, environ={})


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
