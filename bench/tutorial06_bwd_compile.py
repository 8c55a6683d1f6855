"""Tutorial 06's backward kernel `_attn_bwd` (the config its backward() launches: 4 warps,
5 stages, BLOCK_M1 32, BLOCK_N1 128, BLOCK_M2 128, BLOCK_N2 32, BLK_SLICE_FACTOR 2, fp16,
HEAD_DIM 64 and 128) compiled for sm_90 by ours and by a real Triton 3.6, side by side: the
dots' lowering, what the loops load synchronously, shared-memory staging inside the loops,
registers and spills, and the SASS instruction mix. No GPU needed.

    PYTHONPATH=. python bench/tutorial06_bwd_compile.py TUTORIAL [--triton-path DIR] [--deps-path DIR-WITH-TORCH]

TUTORIAL is Triton's 06-fused-attention.py (reference data, never part of this repository);
DIR a folder where `import triton` finds the real Triton (its wheel unpacked with
`pip install --no-deps --target DIR triton==3.6.0`); without it only ours is listed. Each
compiler runs in its own process and hands back its ttgir and PTX; this process assembles
both PTX files with the same `ptxas -arch=sm_90a -v` and disassembles them with the same
nvdisasm, and counts the two compilers' text the same way.
"""
from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

HEAD_DIMS = (64, 128)
CONSTANTS = {"BLOCK_M1": 32, "BLOCK_N1": 128, "BLOCK_M2": 128, "BLOCK_N2": 32,
             "BLK_SLICE_FACTOR": 2}
OPTIONS = {"num_warps": 4, "num_stages": 5}
Z, H, N_CTX = 4, 32, 1024

#: ttgir ops counted inside the loops (scf.for bodies)
LOOP_OPS = ("tt.load", "ttg.async_copy_global_to_local", "ttg.async_wait", "ttg.local_alloc",
            "ttg.local_load", "ttg.convert_layout", "ttg.memdesc_trans",
            "ttng.warp_group_dot", "ttng.warp_group_dot_wait", "tt.dot")
#: SASS opcodes counted (the part before the first '.')
SASS_OPS = ("HGMMA", "HMMA", "LDGSTS", "LDG", "LDS", "LDSM", "STS", "LDL", "STL", "BAR",
            "DEPBAR")
#: SASS opcodes also counted inside the loops
LOOP_SASS_OPS = ("HGMMA", "LDGSTS", "LDG", "LDS", "STS", "LDL", "STL", "BAR")


def ours(path: str) -> dict:
    """{HEAD_DIM: {"ttgir", "ptx"}} of the tutorial at `path` compiled by this compiler
    (`triton` aliased to it)."""
    import attn_tutorial_compile
    tutorial = attn_tutorial_compile.load_tutorial(path)
    import torch
    found = {}
    for head_dim in HEAD_DIMS:
        q = torch.empty((Z, H, N_CTX, head_dim), dtype=torch.float16)
        m = torch.empty((Z, H, N_CTX), dtype=torch.float32)
        kernel = tutorial._attn_bwd.warmup(q, q, q, 0.5, q, q, q, q, m, m, *q.stride(), H, N_CTX,
                                           HEAD_DIM=head_dim, grid=(1,), **CONSTANTS, **OPTIONS)
        found[head_dim] = {"ttgir": kernel.asm["ttgir"], "ptx": kernel.asm["ptx"]}
    return found


def triton(path: str) -> dict:
    """{HEAD_DIM: {"ttgir", "ptx"}} compiled by the real Triton 3.6 for GPUTarget(cuda, 90),
    specialized as its JIT would for contiguous tensors (pointers and the strides but the last
    divisible by 16, stride_d equal to 1)."""
    import triton as real
    from tutorial06_registers import real_tutorial
    tutorial, target = real_tutorial(path)
    fn = tutorial._attn_bwd
    pointers = {"Q": "*fp16", "K": "*fp16", "V": "*fp16", "DO": "*fp16", "DQ": "*fp16",
                "DK": "*fp16", "DV": "*fp16", "M": "*fp32", "D": "*fp32"}
    divisible = set(pointers) | {"stride_z", "stride_h", "stride_tok", "N_CTX"}
    found = {}
    for head_dim in HEAD_DIMS:
        constants = dict(CONSTANTS, HEAD_DIM=head_dim, stride_d=1)
        signature = {name: "constexpr" if name in constants else
                     pointers.get(name, "fp32" if name == "sm_scale" else "i32")
                     for name in fn.arg_names}
        attrs = {(i,): [["tt.divisibility", 16]] for i, name in enumerate(fn.arg_names)
                 if name in divisible}
        kernel = real.compile(real.compiler.ASTSource(fn, signature, constants, attrs),
                              target=target, options=dict(OPTIONS))
        found[head_dim] = {"ttgir": kernel.asm["ttgir"], "ptx": kernel.asm["ptx"]}
    return found


def loop_op_counts(ttgir: str) -> dict:
    """How often each of LOOP_OPS appears inside scf.for bodies of a ttgir listing (both
    compilers print one op per line and close a region with a line starting with `}`)."""
    counts = dict.fromkeys(LOOP_OPS, 0)
    stack = []                                    # per open region: opened by scf.for?
    for line in ttgir.splitlines():
        text = line.strip()
        if text.startswith("}"):
            if stack:
                stack.pop()
            continue
        if any(stack):
            op = re.search(r"(?:=\s*)?([a-z_]+\.[a-z_]+)\b", text)
            if op and op.group(1) in counts:
                counts[op.group(1)] += 1
        if text.endswith("{"):
            stack.append("scf.for" in text)
    return counts


def ptx_facts(ptx: str) -> dict:
    """The PTX's dot and copy instructions, by kind."""
    return {"wgmma": len(re.findall(r"wgmma\.mma_async", ptx)),
            "mma.sync": len(re.findall(r"\bmma\.sync", ptx)),
            "cp.async": len(re.findall(r"cp\.async\.c[ag]\.shared", ptx)),
            "ldmatrix": len(re.findall(r"\bldmatrix", ptx))}


def machine_facts(ptx: str) -> dict:
    """Registers and spill bytes (`ptxas -arch=sm_90a -v`) and the SASS_OPS counts."""
    from compiler.codegen.toolchain import find_tool
    with tempfile.TemporaryDirectory() as tmp:
        src, cubin = Path(tmp) / "k.ptx", Path(tmp) / "k.cubin"
        src.write_text(ptx)
        run = subprocess.run([find_tool("ptxas"), "-arch=sm_90a", "-v", str(src), "-o",
                              str(cubin)], capture_output=True, text=True)
        registers = re.search(r"Used (\d+) registers", run.stderr)
        spills = re.search(r"(\d+) bytes spill stores", run.stderr)
        sass = subprocess.run([find_tool("nvdisasm"), "-c", str(cubin)], capture_output=True,
                              text=True).stdout
    instructions, in_loops = sass_instructions(sass)
    opcodes = [op for _, op in instructions]
    facts = {"registers": int(registers.group(1)) if registers else None,
             "spill bytes": int(spills.group(1)) if spills else None}
    facts.update({name: opcodes.count(name) for name in SASS_OPS})
    facts["in loops"] = len(in_loops)
    facts.update({f"in loops {name}": in_loops.count(name) for name in LOOP_SASS_OPS})
    return facts


def sass_instructions(sass: str) -> tuple[list, list]:
    """(address, opcode) of every instruction of an `nvdisasm -c` listing, and the opcodes
    inside loops: from a label to a branch back to it, whichever loop they are in."""
    instructions, labels, waiting = [], {}, []
    for line in sass.splitlines():
        label = re.match(r"^\s*\.(L_x_\d+):", line)
        if label:
            waiting.append(label.group(1))
            continue
        found = re.match(r"^\s+/\*([0-9a-f]+)\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9]*)(.*)", line)
        if not found:
            continue
        address = int(found.group(1), 16)
        labels.update((name, address) for name in waiting)
        waiting = []
        instructions.append((address, found.group(2), found.group(3)))
    inside = set()
    for address, opcode, rest in instructions:
        target = re.search(r"\(\.(L_x_\d+)\)", rest) if opcode == "BRA" else None
        start = labels.get(target.group(1)) if target else None
        if start is not None and start <= address:
            inside.update(a for a, _, _ in instructions if start <= a <= address)
    return ([(a, op) for a, op, _ in instructions],
            [op for a, op, _ in instructions if a in inside])


def table(results: dict) -> str:
    """The markdown comparison: one row per fact, columns ours / Triton per HEAD_DIM."""
    who = list(results)
    header = "| fact | " + " | ".join(f"{w} D{d}" for d in HEAD_DIMS for w in who) + " |"
    lines = [header, "|---" * (1 + len(who) * len(HEAD_DIMS)) + "|"]
    facts = {w: {d: summarize(results[w][str(d)]) for d in HEAD_DIMS} for w in who}
    for key in facts[who[0]][HEAD_DIMS[0]]:
        cells = [str(facts[w][d][key]) for d in HEAD_DIMS for w in who]
        lines.append(f"| {key} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def summarize(compiled: dict) -> dict:
    """Every fact of one compiled kernel, in table order."""
    facts = {f"in loops: {k}": v for k, v in loop_op_counts(compiled["ttgir"]).items()}
    facts.update({f"PTX {k}": v for k, v in ptx_facts(compiled["ptx"]).items()})
    facts.update({(k if k in ("registers", "spill bytes") else f"SASS {k}"): v
                  for k, v in machine_facts(compiled["ptx"]).items()})
    return facts


def main() -> int:
    import side_by_side
    return side_by_side.main(__file__, __doc__.splitlines()[0], ours, triton,
                             lambda results: print(table(results)))


if __name__ == "__main__":
    sys.exit(main())
