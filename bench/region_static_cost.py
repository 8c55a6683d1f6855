"""The static cost of in-kernel region instrumentation, without a GPU: for each kernel of
`bench/region_overhead.py` (and the GPU tier's `heavy_loop`), a digest of the plain kernel's
PTX (instrumentation must leave it byte-identical) and, per instrumentation mode, the
instrumented variant's registers (ptxas) and SASS instruction count (nvdisasm). Run it on two
trees to compare them:

    PYTHONPATH=. python bench/region_static_cost.py
"""
from __future__ import annotations

import hashlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.region_overhead import MODES, fma_loop, streaming_loop  # noqa: E402
from compiler.compiler import compile as compile_kernel  # noqa: E402
from compiler.passes.manager import DEFAULT_PIPELINES  # noqa: E402
from compiler.profiler.instrument import pass_text  # noqa: E402
from compiler.runtime.specialization import ASTSource  # noqa: E402
from tests.gpu.test_regions_gpu import heavy_loop  # noqa: E402


def cases() -> list:
    """(name, ASTSource) of each kernel."""
    return [("fma_loop", ASTSource(fma_loop, {"out": "*fp32", "iters": "i32"},
                                   {"BLOCK": 256}, {})),
            ("streaming_loop", ASTSource(streaming_loop, {"x": "*fp32", "out": "*fp32",
                                                          "n_tiles": "i32"}, {"BLOCK": 256}, {})),
            ("heavy_loop", ASTSource(heavy_loop, {"out": "*fp32", "iters": "i32"},
                                     {"BLOCK": 128}, {}))]


def sass_instructions(sass: str) -> int:
    """Instructions in an nvdisasm listing."""
    return sum(1 for line in sass.splitlines() if "/*" in line and "*/" in line and ";" in line)


def main() -> None:
    for name, source in cases():
        plain = compile_kernel(source, {"num_warps": 4})
        digest = hashlib.sha256(plain.asm["ptx"].encode()).hexdigest()[:12]
        print(f"{name:<16} plain PTX sha256 {digest}")
        for mode in MODES:
            pipeline = DEFAULT_PIPELINES["ttgir"] + "," + pass_text(mode)
            kernel = compile_kernel(source, {"num_warps": 4, "build_sass": True,
                                             "pipelines": {"ttgir": pipeline}})
            if not kernel.asm.get("sass"):
                print(f"  {mode:<52} no SASS: " + "; ".join(kernel.trace.notes))
                continue
            print(f"  {mode:<52} registers {kernel.trace.cubin_info['registers']:>3}  "
                  f"SASS instructions {sass_instructions(kernel.asm['sass']):>5}")


if __name__ == "__main__":
    main()
