"""Shared pieces of the tensor-core (mma.sync) tests: a small dot kernel compiled to ttgir with a
chosen ttgir pipeline, the pipelines with and without accelerate-matmul, and a runner that
lowers a compiled kernel and executes it on the SIMT evaluator (tests/cpu/simt.py, which
implements ldmatrix and mma.sync m16n8k16 as the PTX ISA describes them)."""
from __future__ import annotations

import numpy as np

import compiler as triton
import compiler.language as tl
from compiler.codegen.lowering import LoweringOptions, lower_module
from compiler.compiler import CompileOptions, compile as compile_source
from compiler.runtime.jit import JITFunction, _selector
from compiler.runtime.specialization import ASTSource

from .simt import run_kernel

BEFORE_MMA = ("convert-triton-to-tritongpu,coalesce,remove-layout-conversions,"
              "optimize-thread-locality")
AFTER_MMA = ("remove-layout-conversions,reduce-data-duplication,reorder-instructions,"
             "allocate-shared-memory")
#: Triton's order: ... optimize-thread-locality, accelerate-matmul, remove-layout-conversions ...
WITH_MMA = f"{BEFORE_MMA},accelerate-matmul,{AFTER_MMA}"
#: these helpers test mma.sync (MMA v2): they compile for sm_80, where accelerate-matmul picks
#: it (on sm_90 it picks wgmma: tests/cpu/test_wgmma.py)
MMA_V2_TARGET = {"arch": 80}


@triton.jit
def tile_dot_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    """C = A @ B for one (M, K) x (K, N) tile, row-major, no masks."""
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    c = tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], c)


@triton.jit
def chained_dot_kernel(a_ptr, b_ptr, v_ptr, o_ptr, M: tl.constexpr, N: tl.constexpr,
                       K: tl.constexpr):
    """O = fp16(A @ B / 2) @ V, attention-style: the first dot's accumulator becomes the second
    dot's A operand (a conversion from #mma to #ttg.dot_op<{parent = #mma}>)."""
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    p = (tl.dot(a, b) * 0.5).to(tl.float16)
    v = tl.load(v_ptr + rn[:, None] * K + rk[None, :])
    tl.store(o_ptr + rm[:, None] * K + rk[None, :], tl.dot(p, v))


def tile_dot_source(element: str, m: int, n: int, k: int, acc: str = "fp32") -> ASTSource:
    """The tile dot kernel specialized for `element` operands (fp16, bf16, fp32, i8)."""
    return ASTSource(tile_dot_kernel, {"a_ptr": f"*{element}", "b_ptr": f"*{element}",
                                       "c_ptr": f"*{acc}"}, {"M": m, "N": n, "K": k},
                     {"divisibility_16": ["a_ptr", "b_ptr", "c_ptr"]})


def compile_source_ttgir(source, num_warps: int, pipeline: str):
    """Compile an ASTSource through ttgir with the given ttgir pipeline."""
    return compile_source(source, options={"num_warps": num_warps, **MMA_V2_TARGET},
                          pipelines={"ttgir": pipeline}, stop_after="ttgir")


def compile_jit(kernel, args: list, constexprs: dict, options: dict, pipeline: str | None,
                stop_after: str = "ttgir", target: dict | None = None):
    """Compile one specialization of a @jit kernel for `args` with a ttgir pipeline (None: the
    default) for `target`'s compile options (default: sm_80, mma.sync); returns (compiled,
    runtime arguments)."""
    fn = JITFunction(kernel.fn)
    bound, key = fn.bind(*args, **constexprs, **options)[:2]
    spec = fn._specialization(key, bound)
    compile_options = {k: v for k, v in fn.compile_options(key).items()
                       if k in CompileOptions.__dataclass_fields__}
    compile_options.update(MMA_V2_TARGET if target is None else target)
    pipelines = {"ttgir": pipeline} if pipeline is not None else None
    compiled = compile_source(fn.source_for(spec), options=compile_options, pipelines=pipelines,
                              stop_after=stop_after)
    select = _selector(spec.runtime_params, spec.descriptor_params)  # descriptors: their fields
    return compiled, list(select(bound))


def compile_attention_sm90(head_dim: int, block_m: int, block_n: int, warps: int,
                           causal: bool = False, shape: tuple | None = None,
                           stop_after: str | None = None):
    """sample_kernels/attention.py's kernel for sm_90a, 3 stages, specialized for contiguous
    fp16 tensors of `shape` (default: bench_attention.py's (4, 32, 4096, head_dim))."""
    from sample_kernels.attention import _strides, attention_kernel
    shape = shape or (4, 32, 4096, head_dim)
    q = np.zeros(shape, np.float16)
    compiled, _ = compile_jit(attention_kernel,
                              [q, q, q, q, 0.125, *(list(_strides(shape)) * 4), shape[1],
                               shape[2]],
                              {"HEAD_DIM": head_dim, "BLOCK_M": block_m, "BLOCK_N": block_n,
                               "CAUSAL": causal},
                              {"num_warps": warps, "num_stages": 3}, None,
                              stop_after=stop_after, target={"arch": 90})
    return compiled


def run_on_simt(compiled, grid: tuple, runtime_args: list, outputs: list,
                lowering: LoweringOptions | None = None) -> list:
    """Lower the compiled ttgir (unoptimized LLVM IR, with `lowering`'s options), run it on the
    SIMT evaluator and return the arrays `outputs` (objects among `runtime_args`) as the kernel
    left them."""
    lowered = lower_module(compiled.ttgir_module, lowering or LoweringOptions(optimize=False))
    memory = run_kernel(lowered, grid, runtime_args)
    arrays = [a for a in runtime_args if isinstance(a, np.ndarray)]
    out = []
    for array in outputs:
        index = next(i for i, a in enumerate(arrays) if a is array)
        out.append(memory.read(index, array))
    return out


def attention_accesses(ptx: str, block: tuple = (1, 1, 0)) -> list:
    """Every thread's memory accesses, sorted (kind, visit, tid, address, src-size), of one
    block of compile_attention_sm90(128, 64, 64, 4, shape=(1, 2, 128, 128))'s PTX (or another
    PTX of that kernel and launch: Triton's, a rewritten one), evaluated per thread by
    compiler.codegen.ptx_addresses: tensors 1 TB apart, the launch's strides, H 2, N_CTX 128."""
    from compiler.codegen.ptx_addresses import parse, run_block
    program = parse(ptx)
    strides = [2 * 128 * 128, 128 * 128, 128]
    params = dict(zip(program.params, [1 << 40, 2 << 40, 3 << 40, 4 << 40, None] +
                      strides * 4 + [2, 128]))
    accesses = run_block(program, 128, block, params)
    return sorted((kind, visit, tid, a.address, a.src_size)
                  for (kind, _, visit), lanes in accesses.items() for tid, a in lanes.items())
