"""Tutorial 05's (layer norm) kernels compiled for sm_90 by ours and by a real Triton 3.6, side by
side: the facts that decide its backward benchmark, read off the ttgir, the PTX, ptxas and (when
nvdisasm is installed) the SASS. No GPU needed: Triton compiles for a `GPUTarget("cuda", 90, 32)`.

    PYTHONPATH=. python bench/tutorial05_compile.py TUTORIAL [--triton-path DIR] [--deps-path DIR-WITH-TORCH]

TUTORIAL is Triton's 05-layer-norm.py (reference data, never part of this repository; its
top-level test and benchmark calls are skipped, only its definitions are run); DIR a folder where
`import triton` finds the real Triton (e.g. its wheel unpacked with
`pip install --no-deps --target DIR triton==3.6.0`); without it only ours is listed. Each compiler
runs in its own process (ours aliases `triton`); both PTX go through the same ptxas. The launches
are the ones `LayerNorm.forward/backward` make for the benchmark (M=4096, fp16): BLOCK_SIZE_N the
next power of two of N, num_warps min(max(BLOCK // 256, 1), 8), GROUP_SIZE_M by N, dwdb with
32x128 blocks, every pointer 16-byte aligned and every int divisible by 16, as Triton's launcher
specializes them.
"""
from __future__ import annotations

import ast
import collections
import re
import subprocess
import sys
import tempfile
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import side_by_side  # noqa: E402 - bench/ is put on the path just above

M = 4096
DX_SIGNATURE = {"DX": "*fp16", "DY": "*fp16", "DW": "*fp16", "DB": "*fp16", "X": "*fp16",
                "W": "*fp16", "Mean": "*fp32", "Rstd": "*fp32", "Lock": "*i32", "stride": "i32",
                "N": "i32"}
DWDB_SIGNATURE = {"DW": "*fp16", "DB": "*fp16", "FINAL_DW": "*fp16", "FINAL_DB": "*fp16",
                  "M": "i32", "N": "i32"}
FWD_SIGNATURE = {"X": "*fp16", "Y": "*fp16", "W": "*fp16", "B": "*fp16", "Mean": "*fp32",
                 "Rstd": "*fp32", "stride": "i32", "N": "i32", "eps": "fp32"}


def cases() -> list:
    """(label, kernel name, signature, constexprs, num_warps) of the benchmark's launches."""
    found = []
    for n in (15872, 4096):
        block = 1 << (n - 1).bit_length()
        warps = min(max(block // 256, 1), 8)
        group = 64 if n > 8192 else 96 if n > 4096 else 128 if n > 1024 else 256
        found += [
            (f"bwd dx N={n}", "_layer_norm_bwd_dx_fused", DX_SIGNATURE,
             {"GROUP_SIZE_M": group, "BLOCK_SIZE_N": block}, warps),
            (f"bwd dwdb N={n}", "_layer_norm_bwd_dwdb", DWDB_SIGNATURE,
             {"BLOCK_SIZE_M": 32, "BLOCK_SIZE_N": 128}, 4),
            (f"fwd N={n}", "_layer_norm_fwd_fused", FWD_SIGNATURE, {"BLOCK_SIZE": block}, warps),
        ]
    return found


def divisible(kind: str) -> bool:
    """Whether Triton's launcher marks an argument of this type 16-divisible here (pointers
    from torch are 16-aligned; N, stride and M are multiples of 16 in these launches)."""
    return kind.startswith("*") or kind == "i32"


def load_definitions(path: str, alias: bool):
    """The tutorial's module with its top-level calls (test, benchmark) left out; with `alias`,
    `import triton` in it gets this compiler."""
    if alias:
        from compiler import triton_alias
        triton_alias.install()
    tree = ast.parse(Path(path).read_text(), filename=path)
    tree.body = [node for node in tree.body if not isinstance(node, ast.Expr)
                 or isinstance(node.value, ast.Constant)]
    module = types.ModuleType("tutorial05")
    module.__file__ = path
    sys.modules["tutorial05"] = module
    exec(compile(tree, path, "exec"), module.__dict__)     # noqa: S102 - the tutorial's own code
    return module


def facts(ttgir: str, ptx: str, shared: int) -> dict:
    """What the table shows of one compiled kernel."""
    from compiler.codegen.toolchain import find_tool
    found = {"shared": shared, "converts": ttgir.count("ttg.convert_layout"),
             "layouts": sorted(set(re.findall(r"sizePerThread = \[([\d, ]+)\]", ttgir)))}
    for space in ("ld.global", "st.global"):
        widths = collections.Counter(
            m.group(1) or "b" + m.group(2)
            for m in re.finditer(rf"\b{re.escape(space)}(?:\.[a-z]+)*?\.(?:(v[248])\.)?b(\d+)\b",
                                 ptx))
        found[space] = dict(sorted(widths.items()))
    for name, pattern in (("shfl", r"\bshfl\.sync"), ("bar", r"\bbar\.sync"),
                          ("smem", r"\b(?:ld|st)\.shared"), ("atom", r"\batom\.")):
        found[name] = len(re.findall(pattern, ptx))
    with tempfile.TemporaryDirectory() as tmp:
        cubin = Path(tmp) / "k.cubin"
        report = side_by_side.ptxas_report(ptx, cubin)
        found["registers"], found["spills"] = report["registers"], report["spills"]
        found["sass"] = _sass_count(find_tool("nvdisasm"), cubin) if cubin.exists() else None
    return found


def _sass_count(nvdisasm: str | None, cubin: Path) -> int | None:
    """SASS instructions in the cubin, when nvdisasm is installed."""
    if nvdisasm is None:
        return None
    run = subprocess.run([nvdisasm, "-c", str(cubin)], capture_output=True, text=True)
    return len(re.findall(r"^\s+/\*[0-9a-f]{4}\*/\s+\S", run.stdout, re.MULTILINE)) or None


def ours(path: str) -> dict:
    """{label: facts} compiled by this compiler."""
    import torch
    torch.cuda.get_device_capability = lambda *args, **kwargs: (9, 0)
    tutorial = load_definitions(path, alias=True)
    found = {}
    for label, name, signature, constants, warps in cases():
        args = [kind + (":16" if divisible(kind) else "") for kind in signature.values()]
        kernel = getattr(tutorial, name).warmup(*args, **constants, num_warps=warps, grid=(1,))
        found[label] = facts(kernel.asm["ttgir"], kernel.asm["ptx"], kernel.metadata.shared)
    return found


def triton(path: str) -> dict:
    """{label: facts} compiled by the real Triton (run in a process of its own)."""
    import triton as real
    target = side_by_side.cpu_target()
    tutorial = load_definitions(path, alias=False)
    found = {}
    for label, name, signature, constants, warps in cases():
        fn = getattr(tutorial, name)
        full = {**signature, **{key: "constexpr" for key in constants}}
        full = {arg: full[arg] for arg in fn.arg_names}
        attrs = {(i,): [["tt.divisibility", 16]] for i, arg in enumerate(fn.arg_names)
                 if arg in signature and divisible(signature[arg])}
        kernel = real.compile(real.compiler.ASTSource(fn, full, constants, attrs),
                              target=target, options={"num_warps": warps})
        found[label] = facts(kernel.asm["ttgir"], kernel.asm["ptx"], kernel.metadata.shared)
    return found


COLUMNS = ("regs", "spill B", "smem B", "converts", "sizePerThread", "ld.global", "st.global",
           "shfl", "bar.sync", "ld/st.shared", "atom", "SASS")


def _row(label: str, who: str, f: dict) -> str:
    def widths(counts: dict) -> str:
        return " ".join(f"{n}x{w}" for w, n in counts.items()) or "-"
    cells = [f["registers"], f["spills"], f["shared"], f["converts"],
             " / ".join(f"[{s}]" for s in f["layouts"]) or "-", widths(f["ld.global"]),
             widths(f["st.global"]), f["shfl"], f["bar"], f["smem"], f["atom"],
             f["sass"] if f["sass"] is not None else "-"]
    return f"| {label} | {who} | " + " | ".join(str(c) for c in cells) + " |"


def table(results: dict) -> None:
    """The markdown table: one row per kernel and compiler."""
    print("| kernel | compiler | " + " | ".join(COLUMNS) + " |")
    print("|---|---|" + "---|" * len(COLUMNS))
    for label in results["ours"]:
        for who, found in results.items():
            print(_row(label, who, found[label]))


if __name__ == "__main__":
    sys.exit(side_by_side.main(__file__, __doc__.splitlines()[0], ours, triton, table))
