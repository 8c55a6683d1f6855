"""The main loop of sample_kernels/attention.py on sm_90, instruction by instruction: ours for
every config of bench/bench_attention.py, and Triton's where a TRITON_KERNEL_DUMP folder holds
its PTX for the same config (ptxas + nvdisasm make its SASS here). No GPU needed.

    PYTHONPATH=. python3 bench/attention_loops.py [--triton-dump DIR | --triton-compile]
                                                  [--causal] [--occupancy]

--triton-compile compiles the same source with Triton (when `triton` is importable; no GPU
needed: `triton.compile` for a GPUTarget sm_90) for every config, specialized as a launch on
bench_attention.py's torch tensors would be (16-aligned pointers, integers divisible by 16
marked so, strides of 1 constant), so every row gets its Triton line.

One row per config: registers and spill bytes (ptxas), then per loop iteration the SASS
instruction count, the sum of ptxas's stall counts (the control code of each instruction: the
loop's issue time in cycles for one warp that never waits on a scoreboard), HGMMA, WARPGROUP.ARRIVE / WARPGROUP.DEPBAR (one each per dot when the wgmma
chains are unbroken; one per HGMMA when ptxas serialized them), MUFU.EX2, FSETP (the denormal
wrapper of a non-ftz ex2), ISETP, BAR.SYNC, LDGSTS, and the PTX's bar.sync and wgmma waits.
With --occupancy: registers, shared memory and resident CTAs per SM (what limits them) for
ours and Triton's instead.
"""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from compiler.codegen.loop_stats import (opcodes, ptx_loop, sass_loop,  # noqa: E402
                                         sass_loop_controls)
from compiler.codegen.occupancy import ctas_per_sm  # noqa: E402
from compiler.codegen.sass import disassemble  # noqa: E402
from compiler.codegen.toolchain import find_tool  # noqa: E402

CONFIGS = [(64, 64, 64, 4), (64, 128, 64, 4), (64, 128, 64, 8), (64, 128, 128, 8),
           (128, 64, 64, 4), (128, 128, 64, 4), (128, 128, 64, 8), (128, 128, 128, 8)]
SASS_COLUMNS = ["HGMMA", "WARPGROUP.ARRIVE", "WARPGROUP.DEPBAR.LE", "MUFU.EX2", "FSETP",
                "ISETP", "BAR.SYNC", "LDGSTS"]


def ours(head_dim, block_m, block_n, warps, causal) -> dict:
    """Our PTX, SASS and ptxas facts for one config."""
    from tests.cpu.mma_cases import compile_attention_sm90
    compiled = compile_attention_sm90(head_dim, block_m, block_n, warps, causal)
    info = compiled.trace.cubin_info
    return {"ptx": compiled.asm["ptx"], "sass": compiled.asm.get("sass") or "",
            "sass_hex": disassemble(compiled.asm["cubin"], line_info=False,
                                    hex_words=True) or "",
            "registers": info["registers"], "spills": info["spill_stores"],
            "shared": compiled.metadata.shared,
            "warnings": sorted(set(re.findall(r"\((C75\d\d)\)", info["report"])))}


def _triton_config(ttgir: str) -> tuple | None:
    """(HEAD_DIM, BLOCK_M, BLOCK_N, warps, causal) of a dumped Triton attention ttgir."""
    warps = re.search(r'"ttg.num-warps" = (\d+)', ttgir)
    q = re.search(r"%q_\d+ = ttg\.local_alloc .*?memdesc<(\d+)x(\d+)x", ttgir)
    k = re.search(r"memdesc<\d+x(\d+)x(\d+)xf16, #shared1", ttgir)
    if not (warps and q and k):
        return None
    block_n = int(k.group(2)) if int(k.group(1)) == int(q.group(2)) else int(k.group(1))
    return (int(q.group(2)), int(q.group(1)), block_n, int(warps.group(1)),
            "arith.minsi" in ttgir)


_ALLOC = re.compile(r"= ttg\.local_alloc\b.*?-> !ttg\.memdesc<([0-9x]+)x(f16|bf16|f32|i8)")
_BYTES = {"f16": 2, "bf16": 2, "f32": 4, "i8": 1}


def _triton_shared(ttgir: str) -> int:
    """The bytes of the shared buffers a Triton ttgir allocates (local_alloc results; its
    layout-conversion scratch reuses that space or is smaller in these kernels)."""
    total = 0
    for shape, element in _ALLOC.findall(ttgir):
        total += int(np.prod([int(d) for d in shape.split("x")])) * _BYTES[element]
    return total


def triton(dump: Path) -> dict:
    """Triton's PTX and SASS per config, from a TRITON_KERNEL_DUMP folder."""
    found = {}
    ptxas = find_tool("ptxas")
    for ptx_path in dump.glob("*/attention_kernel.ptx"):
        ttgir = ptx_path.with_suffix(".ttgir")
        config = _triton_config(ttgir.read_text()) if ttgir.exists() else None
        if config is None or ptxas is None:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            cubin = Path(tmp) / "k.cubin"
            run = subprocess.run([ptxas, "-arch=sm_90a", "-v", str(ptx_path), "-o", str(cubin)],
                                 capture_output=True, text=True)
            sass = disassemble(cubin.read_bytes(), line_info=False) if cubin.exists() else ""
            sass_hex = (disassemble(cubin.read_bytes(), line_info=False, hex_words=True)
                        if cubin.exists() else "")
        registers = re.search(r"Used (\d+) registers", run.stderr)
        spills = re.search(r"(\d+) bytes spill stores", run.stderr)
        found[config] = {"ptx": ptx_path.read_text(), "sass": sass or "",
                         "sass_hex": sass_hex or "",
                         "shared": _triton_shared(ttgir.read_text()),
                         "registers": int(registers.group(1)) if registers else -1,
                         "spills": int(spills.group(1)) if spills else -1,
                         "warnings": sorted(set(re.findall(r"\((C75\d\d)\)", run.stderr)))}
    return found


def _triton_specialization(fn, values: dict) -> tuple:
    """(signature, constexprs, attrs) of Triton's ASTSource for a launch with `values`
    (parameter name -> Python value): pointers are 16-aligned, an int of 1 becomes the constant
    1 and an int divisible by 16 is marked so, as Triton's launcher specializes them."""
    signature, constexprs, attrs = {}, {}, {}
    for index, name in enumerate(fn.arg_names):
        value = values[name]
        if isinstance(value, str):                      # a pointer's element type
            signature[name] = value
            attrs[(index,)] = [["tt.divisibility", 16]]
        elif index in fn.constexprs:
            signature[name], constexprs[(index,)] = "constexpr", value
        elif isinstance(value, float):
            signature[name] = "fp32"
        elif value == 1:
            signature[name], constexprs[(index,)] = "constexpr", 1
        else:
            signature[name] = "i32"
            if value % 16 == 0:
                attrs[(index,)] = [["tt.divisibility", 16]]
    return signature, constexprs, attrs


def triton_compiled(causal: bool, configs: list = CONFIGS) -> dict:
    """Triton's PTX and SASS per config (of `configs`), compiled here by `triton.compile` for
    sm_90 (no GPU), in the form `triton()` reads from a dump."""
    import triton as real_triton
    from triton.backends.compiler import GPUTarget
    from bench.bench_attention import load
    from sample_kernels.attention import _strides
    fn = load(ours=False).attention_kernel
    with tempfile.TemporaryDirectory() as tmp:
        for head_dim, block_m, block_n, warps in configs:
            shape = (4, 32, 4096, head_dim)
            values = dict(zip(fn.arg_names, ["*fp16"] * 4 + [0.125] + list(_strides(shape)) * 4
                              + [32, 4096, head_dim, block_m, block_n, causal]))
            source = real_triton.compiler.ASTSource(fn, *_triton_specialization(fn, values))
            kernel = real_triton.compile(source, target=GPUTarget("cuda", 90, 32),
                                    options={"num_warps": warps, "num_stages": 3})
            out = Path(tmp) / f"{head_dim}_{block_m}_{block_n}_{warps}"
            out.mkdir()
            for stage in ("ttgir", "ptx"):
                (out / f"attention_kernel.{stage}").write_text(kernel.asm[stage])
        return triton(Path(tmp))


def row(name: str, facts: dict) -> str:
    """One markdown row of loop facts."""
    sass = sass_loop(facts["sass"])
    counts = opcodes(sass)
    grouped = [sum(n for op, n in counts.items() if op.startswith(col)) for col in SASS_COLUMNS]
    ptx = ptx_loop(facts["ptx"])
    waits = re.findall(r"wgmma\.wait_group\.sync\.aligned (\d+)", "\n".join(ptx))
    stalls = sum(code.stall for _, code in sass_loop_controls(facts["sass_hex"]))
    cells = [name, facts["registers"], facts["spills"], len(sass), stalls, *grouped,
             opcodes(ptx)["bar.sync"], ",".join(waits) or "-", ",".join(facts["warnings"]) or "-"]
    return "| " + " | ".join(str(c) for c in cells) + " |"


def occupancy_cells(facts: dict | None, warps: int) -> list:
    """Registers, shared KB, CTAs/SM (and the resources that limit it), warps/SM."""
    if facts is None or facts["registers"] <= 0:
        return ["-"] * 4
    occ = ctas_per_sm(facts["registers"], warps, facts["shared"])
    return [facts["registers"], f"{facts['shared'] / 1024:g}",
            f"{occ['ctas_per_sm']} ({'+'.join(occ['limited_by'])})", occ["warps_per_sm"]]


def occupancy_table(theirs: dict, causal: bool) -> None:
    """Resident CTAs per SM of ours and Triton's per config (compiler.codegen.occupancy)."""
    header = ["config (D, BM, BN, warps)", "ours regs", "ours smem KB", "ours CTAs/SM",
              "ours warps/SM", "Triton regs", "Triton smem KB", "Triton CTAs/SM",
              "Triton warps/SM"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for config in CONFIGS:
        cells = [config, *occupancy_cells(ours(*config, causal), config[3]),
                 *occupancy_cells(theirs.get(config + (causal,)), config[3])]
        print("| " + " | ".join(str(c) for c in cells) + " |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--triton-dump", type=Path, help="a TRITON_KERNEL_DUMP folder")
    parser.add_argument("--triton-compile", action="store_true",
                        help="compile Triton's rows here with triton.compile (sm_90, no GPU)")
    parser.add_argument("--causal", action="store_true")
    parser.add_argument("--occupancy", action="store_true",
                        help="print resident CTAs per SM per config instead of loop counts")
    args = parser.parse_args()
    theirs = (triton_compiled(args.causal) if args.triton_compile else
              triton(args.triton_dump) if args.triton_dump else {})
    if args.occupancy:
        occupancy_table(theirs, args.causal)
        return
    header = ["config (D, BM, BN, warps)", "regs", "spill B", "SASS/iter", "stall cycles/iter",
              *SASS_COLUMNS,
              "PTX bar.sync", "wgmma waits", "ptxas warnings"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for config in CONFIGS:
        print(row(f"ours {config}", ours(*config, args.causal)), flush=True)
        key = config + (args.causal,)
        if key in theirs:
            print(row(f"Triton {config}", theirs[key]), flush=True)


if __name__ == "__main__":
    main()
