"""Attention's main loop, ours against Triton 3.6, compiled here from the same source (no GPU).

    PYTHONPATH=.:TRITON_DIR python3 bench/attention_static_compare.py [--configs D,BM,BN,W ...]
                                                                    [--causal]

For each config (default: the brief's two, D128 64x64 4 warps and D64 128x64 8 warps,
non-causal) sample_kernels/attention.py is compiled by ours and by `triton.compile` for a
GPUTarget("cuda", 90, 32) (bench/attention_loops.py's specialization), both PTXs through the
same ptxas (sm_90a) and nvdisasm. It prints, per compiler:

1. the loop's SASS instruction mix (HGMMA by shape, WARPGROUP arrive/depbar, cp.async
   wait/commit, LDGSTS/LDS/STS/LDSM, BAR, MUFU.EX2, FMUL/FFMA/FADD/FMNMX/FSEL/F2FP, SHFL,
   predicated branches, integer and uniform ops), registers, spills, ptxas's stall cycles;
2. the loop's synchronization from the PTX: wgmma.wait_group depths, cp.async.wait_group depth
   and commit groups per iteration, whether p.v's A comes from registers, and the order of the
   loop's events (waits, the two dots, the exp2 span, the refill) as SASS positions;
3. the stall cycles of the loop's three regions (top to q.k's wait, softmax to p.v's arrive,
   p.v to the branch back);
4. the memory traffic of one block, by evaluating each PTX's integer code per thread
   (compiler.codegen.ptx_addresses): whether every thread loads and stores the same addresses
   in both, 32 B sectors per warp load (16 = coalesced) and shared wavefronts per warp store
   (4 = conflict-free);
5. how much of the PTX loop is the same opcode sequence (registers renamed) and where not.
"""
from __future__ import annotations

import argparse
import difflib
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.attention_loops import ours, triton_compiled  # noqa: E402
from compiler.codegen.loop_stats import (ptx_loop, sass_loop,  # noqa: E402
                                         sass_loop_controls)
from compiler.codegen.ptx_addresses import (global_sectors, parse, run_block,  # noqa: E402
                                            shared_wavefronts)

DEFAULT_CONFIGS = [(128, 64, 64, 4), (64, 128, 64, 8)]
_GUARD = re.compile(r"^@!?U?P\w+\s+")
# (column, predicate on the SASS opcode with modifiers)
MIX = [("HGMMA 64xNx16", lambda op: op.startswith("HGMMA")),
       ("WG.ARRIVE", lambda op: op == "WARPGROUP.ARRIVE"),
       ("WG.DEPBAR", lambda op: op.startswith("WARPGROUP.DEPBAR")),
       ("DEPBAR (cp.async wait)", lambda op: op.startswith("DEPBAR")),
       ("LDGDEPBAR (commit)", lambda op: op == "LDGDEPBAR"),
       ("LDGSTS", lambda op: op.startswith("LDGSTS")),
       ("LDS", lambda op: op.split(".")[0] == "LDS"),
       ("STS", lambda op: op.split(".")[0] == "STS"),
       ("LDSM", lambda op: op.startswith("LDSM")),
       ("BAR", lambda op: op.startswith("BAR")),
       ("MUFU.EX2", lambda op: op == "MUFU.EX2"),
       ("FMUL", lambda op: op.split(".")[0] == "FMUL"),
       ("FFMA", lambda op: op.split(".")[0] == "FFMA"),
       ("FADD", lambda op: op.split(".")[0] == "FADD"),
       ("FMNMX", lambda op: op.startswith("FMNMX")),
       ("FSEL", lambda op: op.startswith("FSEL")),
       ("F2FP", lambda op: op.startswith("F2FP")),
       ("SHFL", lambda op: op.startswith("SHFL")),
       ("integer (IMAD/LEA/IADD3/...)", lambda op: op.split(".")[0] in (
           "IMAD", "LEA", "IADD3", "VIADD", "ISETP", "SEL", "MOV", "SHF", "LOP3", "IABS")),
       ("uniform (U*)", lambda op: op.startswith("U"))]


def _opcode(text: str) -> str:
    return _GUARD.sub("", text).split()[0].rstrip(";")


def facts(head_dim, block_m, block_n, warps, causal, theirs: dict) -> dict:
    """{compiler: its facts} for one config: ours always, Triton's when it compiled."""
    found = {"ours": ours(head_dim, block_m, block_n, warps, causal)}
    key = (head_dim, block_m, block_n, warps, causal)
    if key in theirs:
        found["Triton"] = theirs[key]
    return found


def mix_row(name: str, fact: dict) -> list:
    """The loop's SASS instruction mix."""
    loop = sass_loop(fact["sass"])
    ops = [_opcode(t) for t in loop]
    shapes = sorted({re.search(r"HGMMA\.(\d+x\d+x\d+)", o).group(1) for o in ops
                     if o.startswith("HGMMA")})
    cells = [name, fact["registers"], fact["spills"], len(loop),
             sum(code.stall for _, code in sass_loop_controls(fact["sass_hex"]))]
    for column, test in MIX:
        count = sum(1 for o in ops if test(o))
        cells.append(f"{count} ({','.join(shapes)})" if column.startswith("HGMMA") else count)
    guarded_branches = sum(1 for t in loop if _GUARD.match(t) and _opcode(t) == "BRA")
    return cells + [guarded_branches]


def _events(loop: list) -> list:
    """(name, first, last, count) of the loop's landmark instructions, runs merged."""
    marks = {"DEPBAR": "cp.async wait", "BAR": "bar", "WARPGROUP.ARRIVE": "wg.arrive",
             "WARPGROUP.DEPBAR": "wg.wait", "HGMMA": "HGMMA", "MUFU.EX2": "ex2",
             "LDGSTS": "LDGSTS", "LDGDEPBAR": "commit", "LDS": "LDS"}
    out = []
    for i, text in enumerate(loop):
        op = _opcode(text)
        name = next((v for k, v in marks.items() if op == k or op.startswith(k + ".")), None)
        if name is None:
            continue
        if out and out[-1][0] == name and name in ("HGMMA", "ex2", "LDGSTS", "LDS"):
            out[-1][2], out[-1][3] = i, out[-1][3] + 1
        else:
            out.append([name, i, i, 1])
    return out


def skeleton(fact: dict) -> str:
    """The loop's landmarks in SASS order: name@position or name[first-last]xcount."""
    parts = []
    for name, first, last, count in _events(sass_loop(fact["sass"])):
        parts.append(f"{name}@{first}" if count == 1 else f"{name}[{first}-{last}]x{count}")
    return " ".join(parts)


def sync_row(name: str, fact: dict) -> list:
    """PTX synchronization facts of the loop."""
    ptx = ptx_loop(fact["ptx"])
    text = "\n".join(ptx)
    waits = re.findall(r"wgmma\.wait_group\.sync\.aligned (\d+)", text)
    cp_waits = re.findall(r"cp\.async\.wait_group\s+(\d+)", text)
    commits = text.count("cp.async.commit_group")
    dots = [line for line in ptx if line.startswith("wgmma.mma_async")]
    in_registers = sorted({re.search(r"\.(m\d+n\d+k\d+)", line).group(1) for line in dots
                           if re.search(r"\}, \{", line)})
    registers = sum(1 for line in dots if re.search(r"\}, \{", line))
    return [name, ",".join(waits) or "-", ",".join(cp_waits) or "-", commits,
            text.count("wgmma.commit_group"), text.count("bar.sync"),
            f"{registers} of {len(dots)} ({','.join(in_registers) or '-'})"]


def region_stalls(fact: dict) -> list:
    """Stall cycles of top..q.k's wait, ..p.v's arrive, ..the branch back."""
    controls = sass_loop_controls(fact["sass_hex"])
    ops = [_opcode(t) for t, _ in controls]
    wait = next(i for i, o in enumerate(ops) if o.startswith("WARPGROUP.DEPBAR"))
    arrive = max(i for i, o in enumerate(ops) if o == "WARPGROUP.ARRIVE")
    stalls = [code.stall for _, code in controls]
    mufu = sum(code.stall for (t, code) in controls if _opcode(t) == "MUFU.EX2")
    return [sum(stalls[:wait + 1]), sum(stalls[wait + 1:arrive]), sum(stalls[arrive:]), mufu]


def _params(program, head_dim: int) -> dict:
    """Parameter values of a (4, 32, 4096, head_dim) launch: tensors 1 TB apart, strides,
    H, N_CTX, and Triton's two scratch pointers at 0; sm_scale unknown (not an address)."""
    strides = [32 * 4096 * head_dim, 4096 * head_dim, head_dim]
    values = [1 << 40, 2 << 40, 3 << 40, 4 << 40, None] + strides * 4 + [32, 4096, 0, 0]
    return dict(zip(program.params, values))


def memory(fact: dict, head_dim: int, warps: int) -> dict:
    """Per-thread access sets and per-warp sector / wavefront averages of block (1, 7) over
    the prologue and the loop's first two iterations."""
    program = parse(fact["ptx"])
    block = run_block(program, warps * 32, (1, 7, 0), _params(program, head_dim))
    per_thread: dict = {}
    stats: dict = {}
    for (kind, _, visit), lanes in block.items():
        for tid, access in lanes.items():
            per_thread.setdefault((tid, kind, visit), []).append(access.address)
        for warp in range(warps):
            accesses = [lanes[t] for t in range(warp * 32, warp * 32 + 32) if t in lanes]
            if not accesses:
                continue
            addresses, size = [a.address for a in accesses], accesses[0].size
            where = "global" if kind.endswith("global") else "shared"
            tensor = "qkvo"[(addresses[0] >> 40) - 1] if where == "global" else "smem"
            key = f"{kind} {tensor}"
            cost = (global_sectors(addresses, size) if where == "global"
                    else shared_wavefronts(addresses, size))
            total = stats.setdefault(key, [0, 0])
            total[0] += 1
            total[1] += cost
    return {"threads": {k: sorted(v) for k, v in per_thread.items()},
            "stats": {k: (n, cost / n) for k, (n, cost) in stats.items()}}


def ptx_diff(ours_fact: dict, their_fact: dict) -> tuple:
    """(equal opcodes, ours' loop length, Triton's, [differing spans]) of the PTX loops with
    registers renamed."""
    def norm(line):
        line = re.sub(r"%(r|rd|f|p|rs)\d+", r"%\1", line)
        return re.sub(r"\s+", " ", re.sub(r"\{[^}]*\}", "{..}", line))
    a = [norm(x) for x in ptx_loop(ours_fact["ptx"])]
    b = [norm(x) for x in ptx_loop(their_fact["ptx"])]
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    spans = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            first = (a[i1:i2] or b[j1:j2])[0].split()[0]
            spans.append(f"{tag} ours[{i1}:{i2}] / Triton[{j1}:{j2}] ({first}...)")
    equal = sum(i2 - i1 for tag, i1, i2, _, _ in matcher.get_opcodes() if tag == "equal")
    return equal, len(a), len(b), spans


def rewritten(fact: dict, rewrite) -> dict:
    """`fact` with its PTX rewritten by `rewrite` and assembled again by our ptxas."""
    from compiler.codegen.cubin import assemble
    from compiler.codegen.sass import disassemble
    ptx = rewrite(fact["ptx"])
    cubin, info = assemble(ptx, "sm_90a", line_info=False)
    return {"ptx": ptx, "sass": disassemble(cubin, line_info=False) or "",
            "sass_hex": disassemble(cubin, line_info=False, hex_words=True) or "",
            "registers": info["registers"], "spills": info["spill_stores"]}


def schedule_row(name: str, fact: dict) -> list:
    """Registers, loop length, stall cycles (total and per region) and the issue spread of
    p.v's HGMMA chain (stall cycles from its first HGMMA to its last)."""
    controls = sass_loop_controls(fact["sass_hex"])
    ops = [_opcode(t) for t, _ in controls]
    arrive = max(i for i, o in enumerate(ops) if o == "WARPGROUP.ARRIVE")
    chain = [i for i, o in enumerate(ops) if o.startswith("HGMMA") and i > arrive]
    stalls = [code.stall for _, code in controls]
    return [name, fact["registers"], len(controls), sum(stalls),
            "/".join(str(x) for x in region_stalls(fact)[:3]),
            sum(stalls[chain[0]:chain[-1]])]


def _table(header: list, rows: list) -> None:
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for cells in rows:
        print("| " + " | ".join(str(c) for c in cells) + " |")
    print()


def report(config: tuple, causal: bool, theirs: dict) -> None:
    """Every table for one config."""
    head_dim, block_m, block_n, warps = config
    found = facts(head_dim, block_m, block_n, warps, causal, theirs)
    print(f"### D{head_dim} BLOCK_M {block_m} BLOCK_N {block_n} {warps} warps, 3 stages, "
          f"{'causal' if causal else 'non-causal'}\n")
    _table(["compiler", "regs", "spill B", "SASS/iter", "stall cycles", *[c for c, _ in MIX],
            "guarded BRA"], [mix_row(n, f) for n, f in found.items()])
    _table(["compiler", "wgmma waits", "cp.async waits", "cp.async commits", "wgmma commits",
            "bar.sync", "wgmmas with A in registers"], [sync_row(n, f) for n, f in found.items()])
    _table(["compiler", "stalls top..q.k wait", "softmax..p.v arrive", "p.v..branch",
            "of which on MUFU.EX2"], [[n, *region_stalls(f)] for n, f in found.items()])
    for name, fact in found.items():
        print(f"- {name} loop: {skeleton(fact)}")
    print()
    traffic = {n: memory(f, head_dim, warps) for n, f in found.items()}
    keys = sorted({k for t in traffic.values() for k in t["stats"]})
    _table(["access (per warp instruction)", *[f"{n} (count, sectors or wavefronts)"
                                              for n in traffic]],
           [[k, *[("%d, %.2f" % t["stats"][k]) if k in t["stats"] else "-"
                  for t in traffic.values()]] for k in keys])
    if "Triton" in found:
        mine, their = traffic["ours"]["threads"], traffic["Triton"]["threads"]
        kinds = sorted({key[1] for key in mine} | {key[1] for key in their})
        differ = [k for k in kinds if {x: v for x, v in mine.items() if x[1] == k} !=
                  {x: v for x, v in their.items() if x[1] == k}]
        print(f"- every thread's addresses (prologue + 2 iterations, and the epilogue when "
              f"the block reaches it) the same in both for: "
              f"{', '.join(k for k in kinds if k not in differ)}; different for: "
              f"{', '.join(differ) or 'none'}")
        equal, length, other, spans = ptx_diff(found["ours"], found["Triton"])
        print(f"- PTX loop: {equal} of ours {length} / Triton {other} instructions in equal "
              f"runs; {len(spans)} differing spans:")
        for span in spans:
            print(f"  - {span}")
        print()
        from bench.attention_ab import fuse_mad_wide, split_mad_wide
        _table(["PTX (our ptxas)", "regs", "SASS/iter", "stall cycles", "by region",
                "p.v HGMMA first..last stalls"],
               [schedule_row("ours", found["ours"]),
                schedule_row("ours, mul.wide+add fused to mad.wide",
                             rewritten(found["ours"], fuse_mad_wide)),
                schedule_row("Triton", found["Triton"]),
                schedule_row("Triton, mad.wide split to mul.wide+add",
                             rewritten(found["Triton"], split_mad_wide))])
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--configs", nargs="*", default=None,
                        help="HEAD_DIM,BLOCK_M,BLOCK_N,WARPS (default: the brief's two)")
    parser.add_argument("--causal", action="store_true")
    args = parser.parse_args()
    configs = ([tuple(int(x) for x in c.split(",")) for c in args.configs] if args.configs
               else DEFAULT_CONFIGS)
    try:
        theirs = triton_compiled(args.causal, configs)
    except ImportError as error:
        print(f"(no Triton rows: {error}; put Triton 3.6 on PYTHONPATH)\n")
        theirs = {}
    for config in configs:
        report(config, args.causal, theirs)


if __name__ == "__main__":
    main()
