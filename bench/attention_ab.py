"""Attention on the H200: is ours' gap to Triton in the kernel's code or in how it is launched?

Static comparison (bench/attention_loops.md, "attnperf3" section) finds ours' and Triton's main
loops alike for D128 (64, 64, 4 warps): 450 vs 448 SASS instructions, the same opcode mix, the
same wgmma/cp.async synchronization, the same registers (168) and shared bytes (112 KB); yet
the H200 measures 381 vs 427 TFLOP/s. This script takes the compilers' own launchers out of the
comparison. For each config, in one process and on the same tensors, it times:

  ours-jit           ours launched by its @jit (`kernel[grid](...)`), as bench_attention.py does
  triton-jit         Triton's launch
  ours-raw           ours' cubin through one raw cuLaunchKernel of this script, function
                     attributes as our driver sets them (dynamic shared limit = the kernel's
                     bytes, CU_FUNC_CACHE_PREFER_SHARED)
  ours-raw-optin     the same cubin, dynamic shared limit at the device's opt-in minus static
                     shared (what Triton's launcher sets)
  triton-raw         Triton's own cubin, the same raw launch (Triton's two scratch pointers null),
                     its launcher's shared limit; triton-raw-exact with ours'
  triton-ptx-ours-ptxas  Triton's PTX assembled by our ptxas (our toolchain, our flags)
  ours-ptx-triton-ptxas  our PTX assembled by the ptxas Triton ships (when found)
  ours-ptx-align16   our PTX with the extern shared declared `.align 16` as Triton's is
  ours-ptx-mad-wide  our PTX with its address pairs `mul.wide.s32 + add.s64` fused into
                     `mad.wide.s32`, as Triton's LLVM emits them (our ptxas)
  triton-ptx-mul-wide  Triton's PTX with each `mad.wide.s32` split into that pair, as our
                     llvmlite LLVM emits them (our ptxas): if it runs at ours' speed and
                     ours-ptx-mad-wide at Triton's, the address form is the gap

and for each cubin the residency test: one head's grid of k * SMs CTAs for k = 1, 2, 3 (every
CTA runs the whole key loop; rows past N_CTX are masked) -- t(2)/t(1) well under 2 means two
CTAs are resident per SM, about 2 means one.

Reading the result: ours-raw ~ ours-jit and triton-raw ~ triton-jit with ours-raw < triton-raw
puts the gap in the code (PTX or ptxas); ours-raw-optin > ours-raw puts it in the shared-memory
limit (then set it as Triton does in compiler/runtime/driver.py::set_dynamic_shared_memory);
triton-ptx-ours-ptxas < triton-raw puts it in our ptxas (version or flags); a residency ratio
near 2 for ours only says the driver holds one CTA per SM where the occupancy API says two.

Run on the H200 from the project root:
    PYTHONPATH=. python3 bench/attention_ab.py --out $OUT
(`--configs 128,64,64,4 64,64,64,4` picks configs as D,BLOCK_M,BLOCK_N,warps; 3 stages.)
"""
from __future__ import annotations

import argparse
import ctypes
import json
import re
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_attention import N_CTX, Z, H, _tensors, launch, load  # noqa: E402

#: D128 (64, 64, 4) first (the issue's gap), then D64 (64, 64, 4), D64 (128, 128, 8) and a
#: config where the two tie, D128 (128, 128, 8), as the control.
DEFAULT_CONFIGS = [(128, 64, 64, 4), (64, 64, 64, 4), (64, 128, 128, 8), (128, 128, 128, 8)]
STAGES = 3
ROUNDS = 3

_PARAM = re.compile(r"\.param\s+\.(u64|u32|s32|f32|b32|b64)\b[^,\n]*?(\w+_param_\d+)")
_FORMATS = {"u64": ctypes.c_uint64, "b64": ctypes.c_uint64, "u32": ctypes.c_uint32,
            "b32": ctypes.c_uint32, "s32": ctypes.c_int32, "f32": ctypes.c_float}


def ptx_param_types(ptx: str, entry: str = "attention_kernel") -> list[str]:
    """The PTX types of an entry's parameters, in order (e.g. ['u64', ..., 'f32', 'u32'])."""
    start = ptx.index(f".entry {entry}(")
    header = ptx[start:ptx.index(")", start)]
    return [kind for kind, _ in _PARAM.findall(header)]


class RawArgs:
    """A kernel parameter buffer for cuLaunchKernel: one ctypes value per PTX parameter; values
    past the given ones (Triton's scratch pointers) are 0."""

    def __init__(self, types: list[str], values: list):
        if len(values) > len(types):
            raise ValueError(f"{len(values)} values for {len(types)} parameters")
        values = list(values) + [0] * (len(types) - len(values))
        self.cells = [_FORMATS[t](v) for t, v in zip(types, values)]
        self.pointers = (ctypes.c_void_p * len(self.cells))(
            *[ctypes.addressof(c) for c in self.cells])

    @property
    def address(self) -> int:
        return ctypes.addressof(self.pointers)


def with_shared_align(ptx: str, align: int) -> str:
    """The PTX with its extern shared array declared at `align` bytes."""
    return re.sub(r"(\.extern \.shared \.align )\d+", rf"\g<1>{align}", ptx, count=1)


_MUL_ADD = re.compile(r"mul\.wide\.s32\s+(%rd\d+), (%r\d+), (-?\d+);(?P<gap>\n(?:\s*(?://.*|\.loc\b.*)\n)*)"
                      r"(?P<indent>\s*)add\.s64\s+(%rd\d+), (%rd\d+), (%rd\d+);")
_MAD = re.compile(r"mad\.wide\.s32\s+(%rd\d+), (%r\d+), (-?\d+), (%rd\d+);")


def fuse_mad_wide(ptx: str) -> str:
    """The PTX with each `mul.wide.s32 t, x, c` whose one use is the next instruction's
    `add.s64 d, y, t` fused into `mad.wide.s32 d, x, c, y`: the address form Triton 3.6's LLVM
    emits where llvmlite's emits the pair (bench/RESULTS.md, attnstat)."""
    def fuse(found: re.Match) -> str:
        temp, x, c = found.group(1), found.group(2), found.group(3)
        dest, a, b = found.group(6), found.group(7), found.group(8)
        if (a == temp) == (b == temp) or len(re.findall(re.escape(temp) + r"\b", ptx)) != 2:
            return found.group(0)
        other = b if a == temp else a
        return f"mad.wide.s32 \t{dest}, {x}, {c}, {other};"
    return _MUL_ADD.sub(fuse, ptx)


def split_mad_wide(ptx: str) -> str:
    """The PTX with each `mad.wide.s32 d, x, c, y` split into `mul.wide.s32 t, x, c` and
    `add.s64 d, y, t` (t a fresh %wide register): Triton's PTX in the address form our
    llvmlite LLVM emits."""
    count = [0]

    def split(found: re.Match) -> str:
        temp = f"%wide{count[0]}"
        count[0] += 1
        dest, x, c, y = found.groups()
        return f"mul.wide.s32 \t{temp}, {x}, {c};\n\tadd.s64 \t{dest}, {y}, {temp};"
    body = _MAD.sub(split, ptx)
    if not count[0]:
        return ptx
    entry = body.index("{", body.index(".entry"))
    return body[:entry + 1] + f"\n\t.reg .b64 \t%wide<{count[0]}>;" + body[entry + 1:]


def kernel_values(q, k, v, o, d: int) -> list:
    """The runtime parameters both compilers' attention_kernel take, in order: 4 pointers,
    sm_scale, the non-unit strides (the last stride of each tensor is 1, specialized away),
    H, N_CTX."""
    strides = []
    for t in (q, k, v, o):
        strides += list(t.stride()[:3])
    return [q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(), d ** -0.5, *strides,
            q.shape[1], q.shape[2]]


def _triton_ptxas() -> str | None:
    try:
        import triton
    except ImportError:
        return None
    path = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "ptxas"
    return str(path) if path.exists() else None


def assemble_with(ptxas: str, ptx: str) -> bytes:
    """cubin bytes of `ptx` by a given ptxas (sm_90a, -O3, line info: our flags)."""
    with tempfile.TemporaryDirectory() as tmp:
        src, out = Path(tmp) / "k.ptx", Path(tmp) / "k.cubin"
        src.write_text(ptx)
        subprocess.run([ptxas, "-lineinfo", "-arch=sm_90a", "-O3", str(src), "-o", str(out)],
                       check=True, capture_output=True, text=True)
        return out.read_bytes()


class RawKernel:
    """A cubin loaded by the driver, launched by cuLaunchKernel with this script's arguments."""

    def __init__(self, cubin: bytes, shared: int, warps: int, limit: str):
        from compiler.runtime import driver
        self.driver, self.cu = driver, driver.bindings()
        self.module = driver.load_module(cubin)
        self.function = driver.get_function(self.module, "attention_kernel")
        self.shared, self.warps = shared, warps
        cu = self.cu
        static = driver.function_attribute(self.function, "SHARED_SIZE_BYTES")
        optin = driver.device_attribute("MAX_SHARED_MEMORY_PER_BLOCK_OPTIN")
        driver.check(cu.cuFuncSetCacheConfig(self.function,
                                              cu.CUfunc_cache.CU_FUNC_CACHE_PREFER_SHARED),
                     "cuFuncSetCacheConfig")
        maximum = shared if limit == "exact" else optin - static
        attr = cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        driver.check(cu.cuFuncSetAttribute(self.function, attr, maximum), "cuFuncSetAttribute")
        self.facts = {"regs": driver.function_attribute(self.function, "NUM_REGS"),
                      "static_shared": static, "dynamic_limit": maximum,
                      "occupancy_api_ctas": driver.check(
                          cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(
                              self.function, 32 * warps, shared), "cuOccupancy")}

    def __call__(self, grid, args: RawArgs) -> None:
        err, = self.cu.cuLaunchKernel(self.function, grid[0], grid[1], 1, 32 * self.warps, 1, 1,
                                      self.shared, None, args.address, 0)
        if err:
            self.driver.raise_cuda_error("cuLaunchKernel", err)


def _ours_compiled(ours, q, k, v, o, config):
    """Launch ours once (compiling it) and return the CompiledKernel the launch used."""
    fn = ours.attention_kernel
    before = set(fn._compiled)
    launch(ours, q, k, v, o, False, config)
    new = [key for key in fn._compiled if key not in before]
    if len(new) != 1:
        raise RuntimeError(f"expected one new compile for {config}, got {len(new)}")
    return fn._compiled[new[0]]


def _triton_compiled(theirs, q, k, v, o, d, config):
    bm, bn, warps, stages = config
    return theirs.attention_kernel.warmup(
        q, k, v, o, d ** -0.5, *q.stride(), *k.stride(), *v.stride(), *o.stride(), H, N_CTX,
        HEAD_DIM=d, BLOCK_M=bm, BLOCK_N=bn, CAUSAL=False, num_warps=warps, num_stages=stages,
        grid=(1,))


def measure(config4, ours, theirs, torch, do_bench) -> dict:
    """Every variant of one config (D, BLOCK_M, BLOCK_N, warps): TFLOP/s (median of ROUNDS
    interleaved rounds), max error against SDPA, driver facts, residency ratios."""
    from compiler.codegen.cubin import assemble
    d, bm, bn, warps = config4
    config = (bm, bn, warps, STAGES)
    q, k, v, o = _tensors(torch, N_CTX, d)
    ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, scale=d ** -0.5).float()
    flop = 4 * Z * H * N_CTX * N_CTX * d / 1e12
    grid = ((N_CTX + bm - 1) // bm, Z * H)
    mine = _ours_compiled(ours, q, k, v, o, config)
    theirs_c = _triton_compiled(theirs, q, k, v, o, d, config)
    shared = mine.metadata.shared
    variants: dict = {
        "ours-jit": lambda: launch(ours, q, k, v, o, False, config),
        "triton-jit": lambda: launch(theirs, q, k, v, o, False, config)}
    facts = {"ours_shared": shared, "triton_shared": theirs_c.metadata.shared}
    cubins = {"ours-raw": (mine.asm["cubin"], ptx_param_types(mine.asm["ptx"]), shared, "exact"),
              "ours-raw-optin": (mine.asm["cubin"], ptx_param_types(mine.asm["ptx"]), shared,
                                 "optin"),
              "triton-raw": (theirs_c.asm["cubin"], ptx_param_types(theirs_c.asm["ptx"]),
                             theirs_c.metadata.shared, "optin"),
              "triton-raw-exact": (theirs_c.asm["cubin"], ptx_param_types(theirs_c.asm["ptx"]),
                                   theirs_c.metadata.shared, "exact")}
    try:
        cubins["triton-ptx-ours-ptxas"] = (assemble(theirs_c.asm["ptx"], "sm_90a")[0],
                                           ptx_param_types(theirs_c.asm["ptx"]),
                                           theirs_c.metadata.shared, "optin")
        cubins["ours-ptx-align16"] = (assemble(with_shared_align(mine.asm["ptx"], 16),
                                               "sm_90a")[0],
                                      ptx_param_types(mine.asm["ptx"]), shared, "exact")
        cubins["ours-ptx-mad-wide"] = (assemble(fuse_mad_wide(mine.asm["ptx"]), "sm_90a")[0],
                                       ptx_param_types(mine.asm["ptx"]), shared, "exact")
        cubins["triton-ptx-mul-wide"] = (assemble(split_mad_wide(theirs_c.asm["ptx"]),
                                                  "sm_90a")[0],
                                         ptx_param_types(theirs_c.asm["ptx"]),
                                         theirs_c.metadata.shared, "optin")
        other = _triton_ptxas()
        if other:
            cubins["ours-ptx-triton-ptxas"] = (assemble_with(other, mine.asm["ptx"]),
                                               ptx_param_types(mine.asm["ptx"]), shared,
                                               "exact")
    except Exception:  # noqa: BLE001 - the row says what broke
        facts["assemble_error"] = traceback.format_exc()[-600:]
    values = kernel_values(q, k, v, o, d)
    raw = {}
    for name, (cubin, types, nbytes, limit) in cubins.items():
        kernel = RawKernel(cubin, nbytes, warps, limit)
        args = RawArgs(types, values)
        raw[name] = (kernel, args)
        facts[name] = kernel.facts
        variants[name] = (lambda kernel=kernel, args=args: kernel(grid, args))
    row = {"config": config4, "facts": facts, "tflops": {}, "max_abs_err": {}, "residency": {}}
    for name, run in variants.items():
        o.zero_()
        run()
        torch.cuda.synchronize()
        row["max_abs_err"][name] = (o.float() - ref).abs().max().item()
    times: dict = {name: [] for name in variants}
    for _ in range(ROUNDS):                         # interleaved: clock drift hits all alike
        for name, run in variants.items():
            times[name].append(do_bench(run, warmup=25, rep=200, return_mode="median"))
    for name, ts in times.items():
        row["tflops"][name] = flop / (sorted(ts)[len(ts) // 2] * 1e-3)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for name, (kernel, args) in raw.items():
        t = [do_bench(lambda c=c: kernel((c * sms, 1), args), warmup=10, rep=100,
                      return_mode="median") for c in (1, 2, 3)]
        row["residency"][name] = {"t1_ms": t[0], "t2/t1": t[1] / t[0], "t3/t1": t[2] / t[0]}
    return row


def table(rows: list) -> str:
    """Markdown: one line per config and variant."""
    lines = ["| config (D, BM, BN, warps) | variant | TFLOP/s | max err | regs | occupancy API "
             "CTAs | t(2 waves)/t(1) | t(3)/t(1) |", "|---|---|---|---|---|---|---|---|"]
    for row in rows:
        if "error" in row:
            lines.append(f"| {row['config']} | error | {row['error'][-200:]!r} |||||")
            continue
        for name, tflops in row["tflops"].items():
            facts = row["facts"].get(name, {})
            res = row["residency"].get(name, {})
            lines.append(
                f"| {tuple(row['config'])} | {name} | {tflops:.0f} | "
                f"{row['max_abs_err'][name]:.1e} | {facts.get('regs', '-')} | "
                f"{facts.get('occupancy_api_ctas', '-')} | "
                f"{res.get('t2/t1', float('nan')):.2f} | {res.get('t3/t1', float('nan')):.2f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--configs", nargs="*", default=None,
                        help="D,BLOCK_M,BLOCK_N,warps (default: the four of DEFAULT_CONFIGS)")
    args = parser.parse_args()
    configs = ([tuple(int(x) for x in c.split(",")) for c in args.configs] if args.configs
               else DEFAULT_CONFIGS)
    import torch
    import triton
    from triton.testing import do_bench
    ours, theirs = load(True), load(False)
    rows = []
    args.out.mkdir(parents=True, exist_ok=True)
    for config in configs:
        try:
            rows.append(measure(config, ours, theirs, torch, do_bench))
        except Exception:  # noqa: BLE001
            rows.append({"config": config, "error": traceback.format_exc()[-1500:]})
        print(json.dumps(rows[-1], default=str), flush=True)
        (args.out / "attention_ab.json").write_text(json.dumps(rows, indent=1, default=str))
    text = table(rows)
    (args.out / "attention_ab.md").write_text(text + "\n")
    print(text)
    print("triton", triton.__version__)


if __name__ == "__main__":
    main()
