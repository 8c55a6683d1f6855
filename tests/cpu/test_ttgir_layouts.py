"""Fewer conversions, one coalesced layout: IR-in / IR-out tests of coalesce grouping the memory
ops whose data meets, of remove-layout-conversions moving stores into their value's layout
(never duplicating a load), and of conversions folded into reshape/trans; each with a case
where the rewrite must not fire, and the interpreter computing the same numbers afterwards."""
from __future__ import annotations

import numpy as np
import pytest

from compiler.ir import parse_module, print_module
from compiler.passes.base import PassContext
from compiler.passes.ttgir_rewrite import fold_converts
from compiler.passes.manager import DEFAULT_PIPELINES
from tests.cpu.filecheck import filecheck
from tests.cpu.pass_helpers import patterns_fired, run_pipeline

interpreter = pytest.importorskip("compiler.runtime.interpreter")

ARG16 = "{tt.divisibility = 16 : i32}"
FULL = DEFAULT_PIPELINES["ttgir"].replace("convert-triton-to-tritongpu",
                                          "convert-triton-to-tritongpu{num-warps=4}")
COALESCE = "convert-triton-to-tritongpu{num-warps=4},coalesce"


def row_kernel(stride_div: str = "", shared: bool = True) -> str:
    """Layer norm's memory pattern on 1024 f16 columns of row `program_id`: X and Y rows start
    at `row * stride` (aligned only if `stride_div`), W is aligned. With `shared`, y = x * w
    (the loads of X and W meet in one value, and share the mask); else X is copied to Y and
    W, through its own offsets and no mask, to Z: the two copies never meet."""
    value = ("%y = arith.mulf %x, %w : tensor<1024xf16>" if shared else
             "%y = arith.addf %x, %x : tensor<1024xf16>")
    w_load = ("""
    %ws = tt.splat %W : !tt.ptr<f16> -> tensor<1024x!tt.ptr<f16>>
    %wp = tt.addptr %ws, %cols : tensor<1024x!tt.ptr<f16>>, tensor<1024xi32>
    %w = tt.load %wp, %mask : tensor<1024x!tt.ptr<f16>>""" if shared else """
    %wcols = tt.make_range {end = 1024 : i32, start = 0 : i32} : tensor<1024xi32>
    %ws = tt.splat %W : !tt.ptr<f16> -> tensor<1024x!tt.ptr<f16>>
    %wp = tt.addptr %ws, %wcols : tensor<1024x!tt.ptr<f16>>, tensor<1024xi32>
    %w = tt.load %wp : tensor<1024x!tt.ptr<f16>>
    %zs = tt.splat %Z : !tt.ptr<f16> -> tensor<1024x!tt.ptr<f16>>
    %zp = tt.addptr %zs, %wcols : tensor<1024x!tt.ptr<f16>>, tensor<1024xi32>
    tt.store %zp, %w : tensor<1024x!tt.ptr<f16>>""")
    return f"""module {{
  tt.func public @row(%X: !tt.ptr<f16> {ARG16}, %Y: !tt.ptr<f16> {ARG16},
                      %W: !tt.ptr<f16> {ARG16}, %Z: !tt.ptr<f16> {ARG16},
                      %stride: i32 {stride_div}, %N: i32) {{
    %row = tt.get_program_id x : i32
    %cols = tt.make_range {{end = 1024 : i32, start = 0 : i32}} : tensor<1024xi32>
    %n = tt.splat %N : i32 -> tensor<1024xi32>
    %mask = arith.cmpi slt, %cols, %n : tensor<1024xi32>
    %off = arith.muli %row, %stride : i32
    %xrow = tt.addptr %X, %off : !tt.ptr<f16>, i32
    %xs = tt.splat %xrow : !tt.ptr<f16> -> tensor<1024x!tt.ptr<f16>>
    %xp = tt.addptr %xs, %cols : tensor<1024x!tt.ptr<f16>>, tensor<1024xi32>
    %x = tt.load %xp, %mask : tensor<1024x!tt.ptr<f16>>{w_load}
    {value}
    %yrow = tt.addptr %Y, %off : !tt.ptr<f16>, i32
    %ys = tt.splat %yrow : !tt.ptr<f16> -> tensor<1024x!tt.ptr<f16>>
    %yp = tt.addptr %ys, %cols : tensor<1024x!tt.ptr<f16>>, tensor<1024xi32>
    tt.store %yp, %y, %mask : tensor<1024x!tt.ptr<f16>>
    tt.return
  }}
}}
"""


# ---- coalesce: one width for the memory ops whose data meets -------------------------------------
def test_coalesce_gives_loads_that_meet_the_widest_width():
    # X's rows are not known to be aligned (1 element per access alone), W is (8): both loads
    # take 8 per thread so x * w needs no conversion; the store of Y writes, so it keeps the
    # one element per access it can do.
    text, fired = run_pipeline(row_kernel(), COALESCE, stage="ttgir")
    filecheck(text, """
        CHECK: #blocked = #ttg.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
        CHECK: #[[W:blocked1]] = #ttg.blocked<{sizePerThread = [8], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
        CHECK: %x = tt.load {{.*}} : tensor<1024x!tt.ptr<f16>, #[[W]]>
        CHECK: %w = tt.load {{.*}} : tensor<1024x!tt.ptr<f16>, #[[W]]>
        CHECK: tt.store {{.*}} : tensor<1024x!tt.ptr<f16>, #blocked>
    """)
    coalesce = {k: v for k, v in patterns_fired(fired).items() if "assign layout" not in k}
    assert coalesce == {"coalesce tt.load": 2, "keep layout of tt.store": 1}


def test_coalesce_leaves_unrelated_accesses_their_own_width():
    # must not fire: X -> Y and W -> Z never meet, so X's load keeps one element per access
    text, _ = run_pipeline(row_kernel(shared=False), COALESCE, stage="ttgir")
    filecheck(text, """
        CHECK: #[[W:blocked1]] = #ttg.blocked<{sizePerThread = [8]
        CHECK: %x = tt.load {{.*}} : tensor<1024x!tt.ptr<f16>, #blocked>
        CHECK: %w = tt.load {{.*}} : tensor<1024x!tt.ptr<f16>, #[[W]]>
        CHECK: tt.store {{.*}} : tensor<1024x!tt.ptr<f16>, #[[W]]>
        CHECK: %y = arith.addf %x, %x
        CHECK: tt.store {{.*}} : tensor<1024x!tt.ptr<f16>, #blocked>
    """)


@pytest.mark.parametrize("stride_div", ["", ARG16])
def test_row_kernel_ends_without_conversions_or_duplicated_loads(stride_div):
    # the brief's layer norm case: one layout for X, W and Y, the store moved into it
    text, trace = run_pipeline(row_kernel(stride_div), FULL, stage="ttgir")
    assert "ttg.convert_layout" not in text
    assert text.count("tt.load ") == 2
    filecheck(text, """
        CHECK: #[[W:blocked]] = #ttg.blocked<{sizePerThread = [8], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
        CHECK-NOT: #blocked1
        CHECK: tt.store {{.*}} : tensor<1024x!tt.ptr<f16>, #[[W]]>
    """)
    if not stride_div:
        assert patterns_fired(trace)["move tt.store into its value's layout"] == 1
    _same_numbers(row_kernel(stride_div), text, stride=1000)


def _same_numbers(ttir: str, ttgir: str, stride: int) -> None:
    """The interpreter gives bit-identical outputs for the ttir and the final ttgir."""
    def run(text):
        rng = np.random.default_rng(5)
        args = [rng.standard_normal(3 * stride + 1024).astype(np.float16),
                np.zeros(3 * stride + 1024, np.float16),
                rng.standard_normal(1024).astype(np.float16), np.zeros(1024, np.float16),
                stride, 1000]
        interpreter.interpret(parse_module(text), (3,), args)
        return args[1], args[3]
    before, after = run(ttir), run(ttgir)
    for x, y in zip(before, after):
        np.testing.assert_array_equal(x, y)
    assert np.any(before[0] != 0)


# ---- remove-layout-conversions: stores move, loads never duplicate ----------------------------
TILE_ROWS = ("#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], "
             "order = [1, 0]}>")
TILE_COLS = ("#ttg.blocked<{sizePerThread = [4, 1], threadsPerWarp = [8, 4], warpsPerCTA = [1, 4], "
             "order = [0, 1]}>")
ATTRS = ('attributes {"ttg.num-ctas" = 1 : i32, "ttg.num-warps" = 4 : i32, '
         'ttg.target = "cuda:90", "ttg.threads-per-warp" = 32 : i32}')


def tile_store_kernel(value_layout: str) -> str:
    """A 32x32 f32 tile loaded in `value_layout` and stored row-major (contiguous along dim 1)
    in TILE_ROWS through a conversion."""
    return f"""#rows = {TILE_ROWS}
#src = {value_layout}
#rs = #ttg.slice<{{dim = 0, parent = #rows}}>
#ss = #ttg.slice<{{dim = 0, parent = #src}}>
module {ATTRS} {{
  tt.func public @tile(%x: !tt.ptr<f32> {ARG16}, %y: !tt.ptr<f32> {ARG16}) {{
    %c = tt.make_range {{end = 32 : i32, start = 0 : i32}} : tensor<32xi32, #ss>
    %c2 = tt.expand_dims %c {{axis = 0 : i32}} : tensor<32xi32, #ss> -> tensor<1x32xi32, #src>
    %cb = tt.broadcast %c2 : tensor<1x32xi32, #src> -> tensor<32x32xi32, #src>
    %xs = tt.splat %x : !tt.ptr<f32> -> tensor<32x32x!tt.ptr<f32>, #src>
    %xp = tt.addptr %xs, %cb : tensor<32x32x!tt.ptr<f32>, #src>, tensor<32x32xi32, #src>
    %v = tt.load %xp : tensor<32x32x!tt.ptr<f32>, #src>
    tt.store %xp, %v : tensor<32x32x!tt.ptr<f32>, #src>
    %d = tt.make_range {{end = 32 : i32, start = 0 : i32}} : tensor<32xi32, #rs>
    %d2 = tt.expand_dims %d {{axis = 0 : i32}} : tensor<32xi32, #rs> -> tensor<1x32xi32, #rows>
    %db = tt.broadcast %d2 : tensor<1x32xi32, #rows> -> tensor<32x32xi32, #rows>
    %ys = tt.splat %y : !tt.ptr<f32> -> tensor<32x32x!tt.ptr<f32>, #rows>
    %yp = tt.addptr %ys, %db : tensor<32x32x!tt.ptr<f32>, #rows>, tensor<32x32xi32, #rows>
    %vc = ttg.convert_layout %v : tensor<32x32xf32, #src> -> tensor<32x32xf32, #rows>
    tt.store %yp, %vc : tensor<32x32x!tt.ptr<f32>, #rows>
    tt.return
  }}
}}
"""


def test_store_moves_into_a_same_order_value_layout():
    wide = ("#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [2, 16], "
            "warpsPerCTA = [4, 1], order = [1, 0]}>")
    text, trace = run_pipeline(tile_store_kernel(wide), "remove-layout-conversions",
                               stage="ttgir")
    assert "ttg.convert_layout" not in text and text.count("tt.load ") == 1
    filecheck(text, """
        CHECK: %v = tt.load %xp : tensor<32x32x!tt.ptr<f32>, #[[S:blocked]]>
        CHECK: tt.store {{.*}}, %v : tensor<32x32x!tt.ptr<f32>, #[[S]]>
    """)
    assert patterns_fired(trace)["move tt.store into its value's layout"] == 1


def test_store_keeps_its_conversion_from_a_transposed_layout():
    # must not fire: the value runs along dim 0, the store's pointers along dim 1; storing from
    # the value's layout would make every access narrow, and the load cannot move either
    text, trace = run_pipeline(tile_store_kernel(TILE_COLS), "remove-layout-conversions",
                               stage="ttgir")
    filecheck(text, """
        CHECK: #blocked = #ttg.blocked<{sizePerThread = [4, 1]
        CHECK: #blocked1 = #ttg.blocked<{sizePerThread = [1, 4]
        CHECK: %vc = ttg.convert_layout %v : tensor<32x32xf32, #blocked> -> tensor<32x32xf32, #blocked1>
        CHECK-NEXT: tt.store %yp, %vc : tensor<32x32x!tt.ptr<f32>, #blocked1>
    """)
    assert "move tt.store into its value's layout" not in patterns_fired(trace)
    assert text.count("tt.load ") == 1


# ---- conversions folded into reshape / trans ----------------------------------------------------
B4 = "#ttg.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>"
B1 = "#ttg.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>"
B2D = ("#ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [2, 16], warpsPerCTA = [4, 1], "
       "order = [1, 0]}>")


def reshape_kernel(second_user: bool) -> str:
    """A 512-element row loaded 4 wide, converted to 1 wide, reshaped to 16x32 and back, and
    stored; with `second_user` the converted value is also negated and stored."""
    extra = ("""
    %neg = arith.negf %vc : tensor<512xf32, #b1>
    %yp1 = ttg.convert_layout %yp : tensor<512x!tt.ptr<f32>, #b4> -> tensor<512x!tt.ptr<f32>, #b1>
    tt.store %yp1, %neg : tensor<512x!tt.ptr<f32>, #b1>""" if second_user else "")
    return f"""#b4 = {B4}
#b1 = {B1}
#b2 = {B2D}
module {ATTRS} {{
  tt.func public @re(%x: !tt.ptr<f32> {ARG16}, %y: !tt.ptr<f32> {ARG16}) {{
    %r = tt.make_range {{end = 512 : i32, start = 0 : i32}} : tensor<512xi32, #b4>
    %xs = tt.splat %x : !tt.ptr<f32> -> tensor<512x!tt.ptr<f32>, #b4>
    %xp = tt.addptr %xs, %r : tensor<512x!tt.ptr<f32>, #b4>, tensor<512xi32, #b4>
    %ys = tt.splat %y : !tt.ptr<f32> -> tensor<512x!tt.ptr<f32>, #b4>
    %yp = tt.addptr %ys, %r : tensor<512x!tt.ptr<f32>, #b4>, tensor<512xi32, #b4>
    %v = tt.load %xp : tensor<512x!tt.ptr<f32>, #b4>
    %vc = ttg.convert_layout %v : tensor<512xf32, #b4> -> tensor<512xf32, #b1>
    %t = tt.reshape %vc : tensor<512xf32, #b1> -> tensor<16x32xf32, #b2>
    %u = tt.reshape %t : tensor<16x32xf32, #b2> -> tensor<512xf32, #b4>
    tt.store %xp, %u : tensor<512x!tt.ptr<f32>, #b4>{extra}
    tt.return
  }}
}}
"""


def test_conversion_feeding_a_reshape_moves_after_it_and_cancels():
    """The conversion in front of a reshape goes after it (the reshape then keeps every
    element in its thread, as Triton's); behind the second reshape back it converts into the
    layout the load had, so it disappears: the round trip moves no data at all."""
    text, trace = run_pipeline(reshape_kernel(False), "remove-layout-conversions",
                               stage="ttgir")
    filecheck(text, """
        CHECK: %v = tt.load
        CHECK-NOT: ttg.convert_layout
        CHECK: tt.reshape %v : tensor<512xf32, #blocked> -> tensor<16x32xf32, #linear>
        CHECK-NEXT: tt.reshape %t : tensor<16x32xf32, #linear> -> tensor<512xf32, #blocked>
        CHECK-NOT: ttg.convert_layout
        CHECK: tt.store
    """)
    assert patterns_fired(trace)["move convert_layout after the reshape/trans (which then "
                                 "keeps every element in its thread)"] == 2


def test_conversion_with_other_users_is_not_folded_into_a_reshape():
    # must not fire: the converted value also feeds a negation, which needs the conversion
    module = parse_module(reshape_kernel(True))
    ctx = PassContext()
    fold_converts(module, ctx)
    assert "fold convert_layout into the reshape/trans that moves its data" not in ctx.patterns
    filecheck(print_module(module), """
        CHECK: %vc = ttg.convert_layout %v
        CHECK-NEXT: tt.reshape %vc
    """)


B8 = "#ttg.blocked<{sizePerThread = [8], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>"


def test_a_load_whose_chain_stays_alive_is_never_rebuilt():
    # The layer norm bug: x is loaded 1 wide and extended; the extension feeds a reduction
    # (so it stays) and, converted to 8 wide, a product with w. Rebuilding the chain in the
    # wide layout would load X twice: the conversion must stay and X be loaded once.
    ir = f"""#b1 = {B1}
#b8 = {B8}
module {ATTRS} {{
  tt.func public @k(%x: !tt.ptr<f16> {ARG16}, %w: !tt.ptr<f32> {ARG16}, %y: !tt.ptr<f32> {ARG16}, %s: !tt.ptr<f32>) {{
    %r = tt.make_range {{end = 1024 : i32, start = 0 : i32}} : tensor<1024xi32, #b1>
    %xs = tt.splat %x : !tt.ptr<f16> -> tensor<1024x!tt.ptr<f16>, #b1>
    %xp = tt.addptr %xs, %r : tensor<1024x!tt.ptr<f16>, #b1>, tensor<1024xi32, #b1>
    %v = tt.load %xp : tensor<1024x!tt.ptr<f16>, #b1>
    %e = arith.extf %v : tensor<1024xf16, #b1> to tensor<1024xf32, #b1>
    %sum = "tt.reduce"(%e) <{{axis = 0 : i32}}> ({{
    ^bb0(%a: f32, %b: f32):
      %c = arith.addf %a, %b : f32
      tt.reduce.return %c : f32
    }}) : (tensor<1024xf32, #b1>) -> f32
    tt.store %s, %sum : !tt.ptr<f32>
    %ec = ttg.convert_layout %e : tensor<1024xf32, #b1> -> tensor<1024xf32, #b8>
    %r8 = tt.make_range {{end = 1024 : i32, start = 0 : i32}} : tensor<1024xi32, #b8>
    %ws = tt.splat %w : !tt.ptr<f32> -> tensor<1024x!tt.ptr<f32>, #b8>
    %wp = tt.addptr %ws, %r8 : tensor<1024x!tt.ptr<f32>, #b8>, tensor<1024xi32, #b8>
    %wv = tt.load %wp : tensor<1024x!tt.ptr<f32>, #b8>
    %prod = arith.mulf %ec, %wv : tensor<1024xf32, #b8>
    %ys = tt.splat %y : !tt.ptr<f32> -> tensor<1024x!tt.ptr<f32>, #b8>
    %yp = tt.addptr %ys, %r8 : tensor<1024x!tt.ptr<f32>, #b8>, tensor<1024xi32, #b8>
    tt.store %yp, %prod : tensor<1024x!tt.ptr<f32>, #b8>
    tt.return
  }}
}}
"""
    text, trace = run_pipeline(ir, "remove-layout-conversions", stage="ttgir")
    assert text.count("tt.load ") == 2
    filecheck(text, """
        CHECK: %v = tt.load %xp : tensor<1024x!tt.ptr<f16>, #blocked>
        CHECK-NOT: tt.load %xp
        CHECK: ttg.convert_layout {{.*}} : tensor<1024xf32, #blocked> -> tensor<1024xf32, #blocked1>
    """)
    assert "rematerialize backward" not in patterns_fired(trace)


# ---- the sample kernels with sizes and strides not known to be multiples of 16 ---------------
SAMPLES = {
    # name: (module, kernel, signature, constexprs, num_warps, size per thread of the loads)
    "layernorm_unaligned_stride": ("layernorm", "layernorm_kernel",
                                   ("*fp16:16",) * 4 + ("i32", "i32", "fp32"), 1024, 4, 8),
    "layernorm_unaligned_pointers": ("layernorm", "layernorm_kernel",
                                     ("*fp16",) * 4 + ("i32", "i32", "fp32"), 1024, 4, 1),
    "softmax_unaligned_stride": ("softmax", "softmax_kernel",
                                 ("*fp32:16", "*fp32:16", "i32", "i32", "i32"), 1024, 8, 1),
    "softmax_aligned": ("softmax", "softmax_kernel",
                        ("*fp32:16", "*fp32:16", "i32:16", "i32:16", "i32"), 1024, 4, 4),
}


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_sample_kernels_end_without_conversions(name):
    # layer norm with unaligned rows still loads X, W and B 8 wide in one layout (W and B are
    # aligned); without any alignment every access is scalar, but in one layout all the same
    import importlib

    from compiler.compiler import CompileOptions, compile as compile_source
    module_name, kernel_name, signature, block, warps, width = SAMPLES[name]
    fn = getattr(importlib.import_module(f"sample_kernels.{module_name}"), kernel_name)
    bound, key = fn.bind(*signature, BLOCK_SIZE=block, num_warps=warps)[:2]
    known = CompileOptions.__dataclass_fields__
    options = {k: v for k, v in fn.compile_options(key).items() if k in known}
    compiled = compile_source(fn.source_for(fn._specialization(key, bound)), options=options,
                              stop_after="ttgir")
    ttir, ttgir = compiled.asm["ttir"], compiled.asm["ttgir"]
    assert "ttg.convert_layout" not in ttgir
    assert ttgir.count("tt.load ") == ttir.count("tt.load ")
    module = parse_module(ttgir)
    layouts = {str(op.operands[0].type.encoding) for op in module.walk()
               if op.name in ("tt.load", "tt.store")}
    assert len(layouts) == 1, layouts
    assert f"sizePerThread = [{width}]" in layouts.pop()
