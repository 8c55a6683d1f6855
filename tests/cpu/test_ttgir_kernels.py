"""The whole ttgir pipeline on a wide set of small kernels: it verifies, round-trips, keeps only
the conversions that are needed, and gives every global access its golden vector width."""
from __future__ import annotations

import shutil

import pytest

import compiler.dialects  # noqa: F401
from compiler.analysis.axis_info import analyze, vector_width
from compiler.analysis.layout_propagation import warps_along
from compiler.dialects.tt import StoreOp, TransOp
from compiler.dialects.ttg import BlockedEncoding, ConvertLayoutOp
from compiler.ir.parser import parse_module
from compiler.passes.manager import DEFAULT_PIPELINES
from compiler.analysis.layout_propagation import permute_blocked
from tests.cpu.pass_helpers import patterns_fired, run_pipeline
from tests.cpu.ttgir_kernels import KERNELS

PIPELINE = DEFAULT_PIPELINES["ttgir"].replace("convert-triton-to-tritongpu",
                                              "convert-triton-to-tritongpu{num-warps=4}")

# kernel -> (conversions left, vector width of every load and store)
GOLDEN = {
    "reduce_axis0": (0, 4),     # the reduced row is stored from its slice layout
    "reduce_axis1": (0, 4),
    "row_softmax": (0, 4),
    "masked_2d": (0, 4),        # the mask is constant over 16 columns (N is a multiple of 16)
    "transpose": (1, 4),        # loaded rows become columns in one conversion after tt.trans
    "int_ops": (0, 2),          # 256 elements over 128 threads: 2 each
    "half": (0, 8),             # 16-bit elements: 8 per 16-byte access
    "scan": (0, 4),
    "argmax": (0, 4),
    "loop": (0, 4),             # loop-carried pointers are carried in the coalesced layout
    "if_else": (0, 4),          # so is the scf.if result
}


def compile_kernel(name: str):
    text, trace = run_pipeline(KERNELS[name], PIPELINE, stage="ttgir")
    return parse_module(text), text, trace


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_kernel_layouts_and_vector_widths(name):
    module, text, _ = compile_kernel(name)
    converts, width = GOLDEN[name]
    assert text.count("ttg.convert_layout ") == converts
    func = module.functions()[0]
    info = analyze(func)
    accesses = [op for op in func.walk() if op.name in ("tt.load", "tt.store")]
    assert accesses
    for op in accesses:
        mask_index = 1 if op.name == "tt.load" else 2
        mask = op.operands[mask_index] if len(op.operands) > mask_index else None
        if op.name == "tt.store" and op.operands[0].type.shape != accesses[0].operands[0].type.shape:
            continue                 # the reduced results: fewer elements than threads
        assert vector_width(op.operands[0], info, mask=mask) == width, op.name


def test_reductions_along_each_axis_use_the_load_layout():
    for axis in (0, 1):
        module, _, _ = compile_kernel(f"reduce_axis{axis}")
        load = next(op for op in module.walk() if op.name == "tt.load")
        reduce = next(op for op in module.walk() if op.name == "tt.reduce")
        assert reduce.operands[0] is load.results[0]
        assert reduce.results[0].type.encoding.dim == axis
    # along dim 0 the 4 warps split the reduced axis: scratch for one value per warp per column
    module, _, _ = compile_kernel("reduce_axis0")
    reduce = next(op for op in module.walk() if op.name == "tt.reduce")
    assert warps_along(reduce.operands[0].type.encoding, 0) == 4
    assert module.attributes["ttg.shared"].value >= 4 * 64 * 4


def test_transpose_moves_its_data_once_after_the_trans():
    # as in Triton, tt.trans keeps every element in its thread (its result is the load's
    # layout permuted) and one convert_layout after it brings the tile into the store's
    # coalesced layout: rows are loaded coalesced along dim 1, the transposed tile is stored
    # coalesced along its dim 1, and the data crosses shared memory once.
    module, _, trace = compile_kernel("transpose")
    trans = next(op for op in module.walk() if isinstance(op, TransOp))
    store = next(op for op in module.walk() if isinstance(op, StoreOp))
    converts = [op for op in module.walk() if isinstance(op, ConvertLayoutOp)]
    src, dst = trans.operands[0].type.encoding, trans.results[0].type.encoding
    assert isinstance(src, BlockedEncoding) and src.order == (1, 0)
    assert dst == permute_blocked(src, (1, 0))              # the same threads, dims renamed
    assert len(converts) == 1 and converts[0].operands[0] is trans.results[0]
    assert store.operands[1] is converts[0].results[0]
    assert store.operands[0].type.encoding.order == (1, 0)
    assert "allocation.offset" not in trans.attributes
    assert module.attributes["ttg.shared"].value == 32 * 64 * 4


def test_loop_carried_pointers_are_retyped():
    module, _, trace = compile_kernel("loop")
    loop = next(op for op in module.walk() if op.name == "scf.for")
    load = next(op for op in loop.walk() if op.name == "tt.load")
    pointers, acc = loop.regions[0].blocks[0].args[1:]
    assert load.operands[0] is pointers
    assert acc.type.encoding == load.results[0].type.encoding   # the sum follows the loads
    fired = patterns_fired(trace)
    # the pointers are carried in the layout their conversion wants; the sum follows the
    # loads through the loop's yield, by one of the two yield rules (whichever fires first)
    assert fired["carry scf.for value in its converted layout"] == 1
    assert fired.get("carry scf.for value in its yielded layout", 0) + \
        fired.get("forward-propagate layout through scf.for", 0) == 1


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas is not on the PATH")
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_kernel_compiles_to_a_cubin(name, tmp_path):
    """End to end on the CPU: the pipeline's ttgir lowers to PTX that ptxas -arch=sm_90 takes."""
    from compiler.compiler import compile as compile_kernel_file
    path = tmp_path / f"{name}.ttir"
    path.write_text(KERNELS[name])
    kernel = compile_kernel_file(path, {"num_warps": 4, "build_sass": False})
    stages = kernel.trace.stages
    assert "ttg.num-warps" in stages["ttgir"]
    assert stages["ptx"].count(".entry") == 1
    assert "cubin" in stages
