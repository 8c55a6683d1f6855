"""IR texts to test the parser, printer and verifier on: the sample kernels' ttir (printed by our
front end), the hand-written ttir/ttgir kernels of the CPU tests, and Triton 3.6's reference
ttir/ttgir (when ../shared/reference is present). Used by the op-registry test and the IR
fuzzer (tests/cpu/test_fuzz_ir.py, scripts/fuzz_ir.py)."""
from __future__ import annotations

import functools
import inspect
import os
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]

SAMPLE_SIGNATURES = {
    "vector_add": ("add_kernel", {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32",
                                  "n_elements": "i32"}, {"BLOCK_SIZE": 128}),
    "softmax": ("softmax_kernel", {"output_ptr": "*fp32", "input_ptr": "*fp32",
                                   "input_row_stride": "i32", "output_row_stride": "i32",
                                   "n_cols": "i32"}, {"BLOCK_SIZE": 64}),
    "layernorm": ("layernorm_kernel", {"X": "*fp16", "Y": "*fp16", "W": "*fp16", "B": "*fp16",
                                       "stride": "i32", "N": "i32", "eps": "fp32"},
                  {"BLOCK_SIZE": 64}),
    "matmul": ("matmul_kernel", {**{p: "*fp16" for p in ("a_ptr", "b_ptr", "c_ptr")},
                                 **{p: "i32" for p in ("M", "N", "K", "stride_am", "stride_ak",
                                                       "stride_bk", "stride_bn", "stride_cm",
                                                       "stride_cn")}},
               {"BLOCK_SIZE_M": 32, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 4}),
}


def reference_dir() -> Path | None:
    """Triton 3.6's reference outputs, where the test tier finds them (None when absent)."""
    candidates = [os.environ.get("TILE_REFERENCE_DIR"),
                  PROJECT_ROOT.parent / "shared" / "reference" / "triton-3.6-h200",
                  PROJECT_ROOT / "carry" / "reference"]
    for c in candidates:
        if c and Path(c).is_dir():
            return Path(c)
    return None


def sample_kernel_ttir() -> dict[str, str]:
    """The printed ttir of the sample kernels, by name."""
    import importlib

    from compiler.frontend import generate_ttir
    from compiler.ir import print_module

    out = {}
    for name, (fn_name, signature, constexprs) in SAMPLE_SIGNATURES.items():
        kernel = getattr(importlib.import_module(f"sample_kernels.{name}"), fn_name)
        out[f"{name}.ttir"] = print_module(generate_ttir(kernel, signature, constexprs))
    return out


def test_kernel_texts() -> dict[str, str]:
    """The hand-written modules of the CPU tests (ttir samples, ttgir-pipeline kernels, codegen
    kernels), by a made-up file name."""
    from tests.cpu import codegen_kernels, ttgir_kernels, ttir_samples

    out = {}
    for key, value in vars(ttir_samples).items():
        if isinstance(value, str) and "module" in value and "tt.func" in value:
            out[f"ttir_samples.{key}.ttir"] = value
    for key, value in ttgir_kernels.KERNELS.items():
        out[f"ttgir_kernels.{key}.ttir"] = value
    for key, fn in vars(codegen_kernels).items():
        if inspect.isfunction(fn) and fn.__module__ == codegen_kernels.__name__ \
                and not key.startswith("_"):
            params = inspect.signature(fn).parameters.values()
            if all(p.default is not inspect.Parameter.empty for p in params):
                text = fn()
                if isinstance(text, str) and "tt.func" in text:
                    out[f"codegen_kernels.{key}.ttgir"] = text
    return out


def reference_texts() -> dict[str, str]:
    """Triton 3.6's own ttir/ttgir (and its `.source` stage), by file name."""
    ref = reference_dir()
    if ref is None:
        return {}
    return {p.name: p.read_text() for suffix in ("ttir", "ttgir", "source")
            for p in sorted(ref.glob(f"*.{suffix}"))}


def sample_kernel_ttgir() -> dict[str, str]:
    """The printed ttgir of the sample matmul compiled for sm_90 (Hopper's warp-group dot and
    its wait, NVMMA-shared buffers, async copies) with 64x64x32 tiles."""
    import importlib

    from compiler.compiler import compile
    from compiler.ir import print_module
    from compiler.runtime.specialization import ASTSource

    fn_name, signature, constexprs = SAMPLE_SIGNATURES["matmul"]
    kernel = getattr(importlib.import_module("sample_kernels.matmul"), fn_name)
    constexprs = {**constexprs, "BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64}
    compiled = compile(ASTSource(kernel, signature, constexprs), {"arch": 90, "num_warps": 4},
                       stop_after="ttgir")
    return {"matmul.sm90.ttgir": print_module(compiled.ttgir_module)}


def language_kernel_ttir() -> dict[str, str]:
    """The printed ttir of the tl.* library kernels of the zoo (tests/zoo/language.py: gather,
    histogram, round-toward-zero casts, ...) and of an inline-asm kernel, by name."""
    from compiler.compiler import compile
    from compiler.ir import print_module
    from compiler.stage_state import CompileOptions
    from tests.cpu.test_language_functions import inline_asm_kernel
    from tests.zoo.language import ENTRIES

    out = {}
    for entry in ENTRIES:
        case = entry.make(__import__("numpy").random.default_rng(0))
        fn = entry.kernel
        bound, key = fn.bind(*case.fresh_args(), **case.constexprs, **case.options)[:2]
        options = {k: v for k, v in fn.compile_options(key).items()
                   if k in CompileOptions.__dataclass_fields__}
        kernel = compile(fn.source_for(fn._specialization(key, bound)), options=options,
                         stop_after="ttir")
        out[f"zoo.{entry.name}.ttir"] = print_module(kernel.ttir_module)
    asm = inline_asm_kernel.warmup("*u32", "*u32", "*u32", BLOCK=128, grid=(1,))
    out["inline_asm.ttgir"] = asm.asm["ttgir"]
    return out


@functools.lru_cache(maxsize=1)
def tma_kernel_ir() -> dict[str, str]:
    """The descriptor matmul of tests/cpu/test_tma.py compiled with TMA for sm_90: its ttir
    (`tt.descriptor_load/store`), its pipelined ttgir (the TMA ring and its mbarriers) and its
    unpipelined ttgir (tma-lowering's in-place copies, barrier init/inval, the TMA store); and
    tests/cpu/test_device_tma.py's matmul over device-side descriptors (ttir and ttgir)."""
    import numpy as np

    from compiler.ir import print_module
    from compiler.tools.tensor_descriptor import TensorDescriptor
    from tests.cpu.mma_cases import compile_jit
    from tests.cpu.test_tma import _desc_matmul

    out = {}
    arrays = [np.zeros((128, 128), np.float16) for _ in range(3)]
    descs = [TensorDescriptor.from_tensor(x, [64, 64]) for x in arrays]
    for stages in (1, 3):
        compiled = compile_jit(_desc_matmul, [*descs, 128],
                               {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64},
                               {"num_warps": 4, "num_stages": stages}, None, stop_after="ttgir",
                               target={"arch": 90, "tma": True})[0]
        out[f"tma_matmul.s{stages}.ttir"] = print_module(compiled.ttir_module)
        out[f"tma_matmul.s{stages}.ttgir"] = print_module(compiled.ttgir_module)
    # device-side descriptors: tt.make_tensor_descriptor, and the tensor maps tma-lowering
    # builds in global scratch memory
    from tests.cpu.test_device_tma import _matmul
    device = _matmul("ttgir", 128, 128, 128, 64, 64, 64)
    out["device_tma_matmul.ttir"] = print_module(device.ttir_module)
    out["device_tma_matmul.ttgir"] = print_module(device.ttgir_module)
    return out


def corpus() -> dict[str, str]:
    """Every text above, by name; each parses and verifies."""
    return {**sample_kernel_ttir(), **sample_kernel_ttgir(), **language_kernel_ttir(),
            **test_kernel_texts(), **tma_kernel_ir(), **reference_texts()}


def verified_corpus() -> list[tuple[str, str]]:
    """(name, text) of the corpus texts that parse and verify (Triton files using encodings
    we do not implement are left out), by name."""
    from compiler.ir import parse_module, verify_module
    from compiler.ir.parser import ParseError
    from compiler.ir.verifier_errors import VerificationError

    out = []
    for name, text in sorted(corpus().items()):
        try:
            verify_module(parse_module(text, name))
        except (ParseError, VerificationError):
            continue
        out.append((name, text))
    return out
