"""IR-in / IR-out tests of each ttgir pass, with cases where the pass must fire and where it
must leave the IR alone."""
from __future__ import annotations

import textwrap

from compiler.ir import parse_module, print_module
from tests.cpu.filecheck import filecheck
from tests.cpu.pass_helpers import patterns_fired, run_pipeline

ATTRS = ('attributes {"ttg.num-ctas" = 1 : i32, "ttg.num-warps" = 4 : i32, '
         'ttg.target = "cuda:90", "ttg.threads-per-warp" = 32 : i32}')
B1 = "#ttg.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>"
B4 = "#ttg.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>"
ARG16 = "{tt.divisibility = 16 : i32}"


def ttgir(body: str, args: str, aliases: dict) -> str:
    """A ttgir module (4 warps) with layout aliases and one function."""
    head = "".join(f"#{name} = {text}\n" for name, text in aliases.items())
    lines = textwrap.indent(textwrap.dedent(body).strip(), "    ")
    return f"{head}module {ATTRS} {{\n  tt.func public @k({args}) {{\n{lines}\n    tt.return\n  }}\n}}\n"


def run(ir: str, pipeline: str):
    text, trace = run_pipeline(ir, pipeline, stage="ttgir")
    return text, patterns_fired(trace)


def unchanged(ir: str, pipeline: str) -> dict:
    """Run `pipeline`; assert the IR printed the same before and after; return the patterns."""
    before = print_module(parse_module(textwrap.dedent(ir)))
    after, fired = run(ir, pipeline)
    assert after == before
    return fired


# ---- convert-triton-to-tritongpu ------------------------------------------------------------
DOT_TTIR = f"""
module {{
  tt.func public @k(%p: !tt.ptr<f32> {ARG16}) {{
    %a = arith.constant dense<1.000000e+00> : tensor<16x16xf32>
    %r = tt.make_range {{end = 16 : i32, start = 0 : i32}} : tensor<16xi32>
    %rp = tt.splat %p : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
    %ptr = tt.addptr %rp, %r : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    %v = tt.load %ptr : tensor<16x!tt.ptr<f32>>
    %v2 = tt.expand_dims %v {{axis = 0 : i32}} : tensor<16xf32> -> tensor<1x16xf32>
    %b = tt.broadcast %v2 : tensor<1x16xf32> -> tensor<16x16xf32>
    %z = arith.constant dense<0.000000e+00> : tensor<16x16xf32>
    %d = tt.dot %a, %b, %z, inputPrecision = ieee : tensor<16x16xf32> * tensor<16x16xf32> -> tensor<16x16xf32>
    %s = "tt.reduce"(%d) <{{axis = 1 : i32}}> ({{
    ^bb0(%x: f32, %y: f32):
      %t = arith.addf %x, %y : f32
      tt.reduce.return %t : f32
    }}) : (tensor<16x16xf32>) -> tensor<16xf32>
    tt.store %ptr, %s : tensor<16x!tt.ptr<f32>>
    tt.return
  }}
}}
"""


def test_convert_assigns_default_layouts_slices_and_dot_operands():
    text, fired = run(DOT_TTIR, "convert-triton-to-tritongpu{num-warps=4}")
    filecheck(text, """
        CHECK: #[[B2:blocked]] = #ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [2, 16], warpsPerCTA = [4, 1], order = [1, 0]}>
        CHECK: #[[B1:blocked1]] = #ttg.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
        CHECK: #[[S0:slice]] = #ttg.slice<{dim = 0, parent = #[[B2]]}>
        CHECK: #[[A:dot_op]] = #ttg.dot_op<{opIdx = 0, parent = #[[B2]]}>
        CHECK: #[[B:dot_op1]] = #ttg.dot_op<{opIdx = 1, parent = #[[B2]]}>
        CHECK: #[[S1:slice1]] = #ttg.slice<{dim = 1, parent = #[[B2]]}>
        CHECK: module attributes {"ttg.num-ctas" = 1 : i32, "ttg.num-warps" = 4 : i32, ttg.target = "cuda:90", "ttg.threads-per-warp" = 32 : i32}
        CHECK: %v = tt.load %ptr : tensor<16x!tt.ptr<f32>, #[[B1]]>
        CHECK-NEXT: ttg.convert_layout %v : tensor<16xf32, #[[B1]]> -> tensor<16xf32, #[[S0]]>
        CHECK-NEXT: tt.expand_dims {{.*}} -> tensor<1x16xf32, #[[B2]]>
        CHECK-NEXT: tt.broadcast %v2 : tensor<1x16xf32, #[[B2]]> -> tensor<16x16xf32, #[[B2]]>
        CHECK: ttg.convert_layout %a : {{.*}} -> tensor<16x16xf32, #[[A]]>
        CHECK-NEXT: ttg.convert_layout %b : {{.*}} -> tensor<16x16xf32, #[[B]]>
        CHECK-NEXT: tt.dot {{.*}} -> tensor<16x16xf32, #[[B2]]>
        CHECK: (tensor<16x16xf32, #[[B2]]>) -> tensor<16xf32, #[[S1]]>
        CHECK-NEXT: ttg.convert_layout %s : tensor<16xf32, #[[S1]]> -> tensor<16xf32, #[[B1]]>
    """)
    assert fired["convert operand of tt.dot"] == 2


def test_convert_leaves_scalar_kernels_without_layouts():
    ir = f"""
    module {{
      tt.func public @k(%p: !tt.ptr<f32> {ARG16}, %n: i32) {{
        %c = arith.constant 2 : i32
        %m = arith.muli %n, %c : i32
        %q = tt.addptr %p, %m : !tt.ptr<f32>, i32
        %v = tt.load %q : !tt.ptr<f32>
        tt.store %p, %v : !tt.ptr<f32>
        tt.return
      }}
    }}
    """
    text, fired = run(ir, "convert-triton-to-tritongpu{num-warps=8}")
    assert "#ttg" not in text and fired == {}
    filecheck(text, 'CHECK: module attributes {{.*}}"ttg.num-warps" = 8 : i32')


# ---- coalesce ----------------------------------------------------------------------------------
def vector_kernel(elem: str = "f32", div: str = ARG16, offsets: str = "direct",
                  n: int = 512) -> str:
    """A 1-D copy of `n` elements in the default layout; `offsets="gather"` reads the offsets
    from memory first (nothing is known about them)."""
    offs = (f"%offs = arith.addi %s, %r : tensor<{n}xi32, #b1>" if offsets == "direct" else
            f"%ip = tt.splat %idx : !tt.ptr<i32> -> tensor<{n}x!tt.ptr<i32>, #b1>\n"
            f"%ipp = tt.addptr %ip, %r : tensor<{n}x!tt.ptr<i32>, #b1>, tensor<{n}xi32, #b1>\n"
            f"%offs = tt.load %ipp : tensor<{n}x!tt.ptr<i32>, #b1>")
    body = f"""
    %pid = tt.get_program_id x : i32
    %cn = arith.constant {n} : i32
    %start = arith.muli %pid, %cn : i32
    %r = tt.make_range {{end = {n} : i32, start = 0 : i32}} : tensor<{n}xi32, #b1>
    %s = tt.splat %start : i32 -> tensor<{n}xi32, #b1>
    {offs}
    %base = tt.splat %x : !tt.ptr<{elem}> -> tensor<{n}x!tt.ptr<{elem}>, #b1>
    %ptrs = tt.addptr %base, %offs : tensor<{n}x!tt.ptr<{elem}>, #b1>, tensor<{n}xi32, #b1>
    %v = tt.load %ptrs : tensor<{n}x!tt.ptr<{elem}>, #b1>
    %obase = tt.splat %y : !tt.ptr<{elem}> -> tensor<{n}x!tt.ptr<{elem}>, #b1>
    %optrs = tt.addptr %obase, %offs : tensor<{n}x!tt.ptr<{elem}>, #b1>, tensor<{n}xi32, #b1>
    tt.store %optrs, %v : tensor<{n}x!tt.ptr<{elem}>, #b1>
    """
    args = (f"%x: !tt.ptr<{elem}> {div}, %y: !tt.ptr<{elem}> {div}, "
            f"%idx: !tt.ptr<i32> {ARG16}")
    return ttgir(body, args, {"b1": B1})


def test_coalesce_gives_16_byte_accesses():
    text, fired = run(vector_kernel(), "coalesce")
    filecheck(text, """
        CHECK: #[[W:blocked1]] = #ttg.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
        CHECK: %[[P:.*]] = ttg.convert_layout %ptrs : {{.*}} -> tensor<512x!tt.ptr<f32>, #[[W]]>
        CHECK-NEXT: %[[V:.*]] = tt.load %[[P]] : tensor<512x!tt.ptr<f32>, #[[W]]>
        CHECK-NEXT: ttg.convert_layout %[[V]] : tensor<512xf32, #[[W]]> -> tensor<512xf32, #blocked>
        CHECK: tt.store {{.*}} : tensor<512x!tt.ptr<f32>, #[[W]]>
    """)
    assert fired == {"coalesce tt.load": 1, "coalesce tt.store": 1}


def test_coalesce_fp16_is_eight_wide():
    text, _ = run(vector_kernel("f16", n=1024), "coalesce")
    filecheck(text, "CHECK: = #ttg.blocked<{sizePerThread = [8], threadsPerWarp = [32]")
    # with 512 elements there are only 4 per thread
    text, _ = run(vector_kernel("f16"), "coalesce")
    filecheck(text, "CHECK: = #ttg.blocked<{sizePerThread = [4], threadsPerWarp = [32]")


def test_coalesce_keeps_layout_without_contiguity_or_alignment():
    # gathered offsets: nothing is known about the gathered addresses. As in Triton, the
    # gathering load takes the width of the contiguous load of the offsets it depends on (one
    # layout for both, no conversion between them; loads may have gaps, L1 absorbs them), but
    # the scattering store, which writes, keeps the one element per access it can do.
    text, fired = run(vector_kernel(offsets="gather"), "coalesce")
    assert fired == {"coalesce tt.load": 2, "keep layout of tt.store": 1}
    filecheck(text, """
        CHECK: #blocked = #ttg.blocked<{sizePerThread = [1]
        CHECK: #[[W:blocked1]] = #ttg.blocked<{sizePerThread = [4]
        CHECK: %offs = tt.load {{.*}} : tensor<512x!tt.ptr<i32>, #[[W]]>
        CHECK: %v = tt.load {{.*}} : tensor<512x!tt.ptr<f32>, #[[W]]>
        CHECK: tt.store %optrs, {{.*}} : tensor<512x!tt.ptr<f32>, #blocked>
    """)
    # contiguous but not known to be aligned: no wider access is safe
    fired = unchanged(vector_kernel(div=""), "coalesce")
    assert "coalesce tt.load" not in fired


def test_coalesce_orders_dims_by_contiguity():
    # a column-major tile: contiguous down dim 0, strided along dim 1
    body = """
    %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #s1>
    %c = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32, #s0>
    %r2 = tt.expand_dims %r {axis = 1 : i32} : tensor<64xi32, #s1> -> tensor<64x1xi32, #b2>
    %c2 = tt.expand_dims %c {axis = 0 : i32} : tensor<16xi32, #s0> -> tensor<1x16xi32, #b2>
    %ld = tt.splat %ldm : i32 -> tensor<1x16xi32, #b2>
    %co = arith.muli %c2, %ld : tensor<1x16xi32, #b2>
    %rb = tt.broadcast %r2 : tensor<64x1xi32, #b2> -> tensor<64x16xi32, #b2>
    %cb = tt.broadcast %co : tensor<1x16xi32, #b2> -> tensor<64x16xi32, #b2>
    %off = arith.addi %rb, %cb : tensor<64x16xi32, #b2>
    %base = tt.splat %x : !tt.ptr<f32> -> tensor<64x16x!tt.ptr<f32>, #b2>
    %ptrs = tt.addptr %base, %off : tensor<64x16x!tt.ptr<f32>, #b2>, tensor<64x16xi32, #b2>
    %v = tt.load %ptrs : tensor<64x16x!tt.ptr<f32>, #b2>
    tt.store %ptrs, %v : tensor<64x16x!tt.ptr<f32>, #b2>
    """
    b2 = ("#ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [2, 16], "
          "warpsPerCTA = [4, 1], order = [1, 0]}>")
    ir = ttgir(body, f"%x: !tt.ptr<f32> {ARG16}, %ldm: i32 {ARG16}",
               {"b2": b2, "s0": "#ttg.slice<{dim = 0, parent = #b2}>",
                "s1": "#ttg.slice<{dim = 1, parent = #b2}>"})
    text, _ = run(ir, "coalesce")
    # 16-byte aligned runs of 4 down each column; lanes go down the columns first
    filecheck(text, "CHECK: #blocked1 = #ttg.blocked<{sizePerThread = [4, 1], "
                    "threadsPerWarp = [16, 2], warpsPerCTA = [1, 4], order = [0, 1]}>")


# ---- remove-layout-conversions ------------------------------------------------------------------
# %ptrs: 512 consecutive f32 pointers from %x, in the 4-wide layout #b4 (a coalesced load's)
PTRS4 = """
    %r = tt.make_range {end = 512 : i32, start = 0 : i32} : tensor<512xi32, #b4>
    %base = tt.splat %x : !tt.ptr<f32> -> tensor<512x!tt.ptr<f32>, #b4>
    %ptrs = tt.addptr %base, %r : tensor<512x!tt.ptr<f32>, #b4>, tensor<512xi32, #b4>
"""
LOOP_BOUNDS = """
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
"""


def remove_conversions(body: str, args: str):
    """(text, patterns fired) of remove-layout-conversions on `body` in layouts #b1 / #b4."""
    return run(ttgir(body, args, {"b1": B1, "b4": B4}), "remove-layout-conversions")


def test_remove_conversions_after_coalesce():
    text, fired = run(vector_kernel(), "coalesce,remove-layout-conversions")
    filecheck(text, f"""
        CHECK: #blocked = {B4}
        CHECK-NOT: #blocked1
        CHECK-NOT: ttg.convert_layout
        CHECK: tt.make_range {{{{.*}}}} : tensor<512xi32, #blocked>
        CHECK: tt.load %{{{{.*}}}} : tensor<512x!tt.ptr<f32>, #blocked>
        CHECK: tt.store %{{{{.*}}}} : tensor<512x!tt.ptr<f32>, #blocked>
    """)
    assert fired["rematerialize backward"] >= 1


def test_remove_conversions_propagates_forward_through_elementwise_and_reduce():
    body = """
    %r = tt.make_range {end = 512 : i32, start = 0 : i32} : tensor<512xi32, #b1>
    %base = tt.splat %x : !tt.ptr<f32> -> tensor<512x!tt.ptr<f32>, #b4>
    %r4 = ttg.convert_layout %r : tensor<512xi32, #b1> -> tensor<512xi32, #b4>
    %ptrs = tt.addptr %base, %r4 : tensor<512x!tt.ptr<f32>, #b4>, tensor<512xi32, #b4>
    %v4 = tt.load %ptrs : tensor<512x!tt.ptr<f32>, #b4>
    %v = ttg.convert_layout %v4 : tensor<512xf32, #b4> -> tensor<512xf32, #b1>
    %e = math.exp %v : tensor<512xf32, #b1>
    %m = "tt.reduce"(%e) <{axis = 0 : i32}> ({
    ^bb0(%a: f32, %b: f32):
      %t = arith.maxnumf %a, %b : f32
      tt.reduce.return %t : f32
    }) : (tensor<512xf32, #b1>) -> f32
    %ms = tt.splat %m : f32 -> tensor<512xf32, #b1>
    %d = arith.subf %e, %ms : tensor<512xf32, #b1>
    %d4 = ttg.convert_layout %d : tensor<512xf32, #b1> -> tensor<512xf32, #b4>
    tt.store %ptrs, %d4 : tensor<512x!tt.ptr<f32>, #b4>
    """
    text, fired = remove_conversions(body, f"%x: !tt.ptr<f32> {ARG16}")
    filecheck(text, f"""
        CHECK: #blocked = {B4}
        CHECK-NOT: ttg.convert_layout
        CHECK: math.exp %{{{{.*}}}} : tensor<512xf32, #blocked>
        CHECK: (tensor<512xf32, #blocked>) -> f32
        CHECK: tt.splat %{{{{.*}}}} : f32 -> tensor<512xf32, #blocked>
        CHECK: arith.subf %{{{{.*}}}} : tensor<512xf32, #blocked>
    """)
    assert fired["forward-propagate layout into tt.reduce"] == 1


def test_remove_conversions_propagates_forward_through_an_if_yield():
    # tutorial 05's backward: both branches yield values computed from coalesced loads, and
    # the store after the if wants them back in the load layout; the if carries them in it
    body = PTRS4 + """
    %v4 = tt.load %ptrs : tensor<512x!tt.ptr<f32>, #b4>
    %v = ttg.convert_layout %v4 : tensor<512xf32, #b4> -> tensor<512xf32, #b1>
    %e = math.exp %v : tensor<512xf32, #b1>
    %y = scf.if %c -> (tensor<512xf32, #b1>) {
      scf.yield %e : tensor<512xf32, #b1>
    } else {
      %w4 = tt.load %ptrs : tensor<512x!tt.ptr<f32>, #b4>
      %w = ttg.convert_layout %w4 : tensor<512xf32, #b4> -> tensor<512xf32, #b1>
      %s = arith.addf %e, %w : tensor<512xf32, #b1>
      scf.yield %s : tensor<512xf32, #b1>
    }
    %t = arith.mulf %y, %y : tensor<512xf32, #b1>
    %t4 = ttg.convert_layout %t : tensor<512xf32, #b1> -> tensor<512xf32, #b4>
    tt.store %ptrs, %t4 : tensor<512x!tt.ptr<f32>, #b4>
    """
    text, fired = remove_conversions(body, f"%x: !tt.ptr<f32> {ARG16}, %c: i1")
    filecheck(text, f"""
        CHECK: #blocked = {B4}
        CHECK-NOT: #blocked1
        CHECK-NOT: ttg.convert_layout
        CHECK: scf.if %c -> (tensor<512xf32, #blocked>)
        CHECK: scf.yield %e : tensor<512xf32, #blocked>
        CHECK: arith.addf %e, %{{{{.*}}}} : tensor<512xf32, #blocked>
        CHECK: arith.mulf %{{{{.*}}}} : tensor<512xf32, #blocked>
    """)
    assert fired["forward-propagate layout through scf.if"] == 1


def test_remove_conversions_propagates_forward_through_a_loop_into_its_reduction():
    # tutorial 05's forward: a loop sums loaded rows and a reduction to a scalar follows; the
    # loop carries the sum in the load layout and the reduction takes it without conversion
    body = LOOP_BOUNDS + PTRS4 + """
    %z = arith.constant dense<0.000000e+00> : tensor<512xf32, #b1>
    %acc = scf.for %i = %c0 to %n step %c1 iter_args(%a = %z) -> (tensor<512xf32, #b1>) : i32 {
      %v4 = tt.load %ptrs : tensor<512x!tt.ptr<f32>, #b4>
      %v = ttg.convert_layout %v4 : tensor<512xf32, #b4> -> tensor<512xf32, #b1>
      %s = arith.addf %a, %v : tensor<512xf32, #b1>
      scf.yield %s : tensor<512xf32, #b1>
    }
    %m = "tt.reduce"(%acc) <{axis = 0 : i32}> ({
    ^bb0(%p: f32, %q: f32):
      %t = arith.addf %p, %q : f32
      tt.reduce.return %t : f32
    }) : (tensor<512xf32, #b1>) -> f32
    tt.store %x, %m : !tt.ptr<f32>
    """
    text, fired = remove_conversions(body, f"%x: !tt.ptr<f32> {ARG16}, %n: i32")
    filecheck(text, f"""
        CHECK: #blocked = {B4}
        CHECK-NOT: #blocked1
        CHECK-NOT: ttg.convert_layout
        CHECK: scf.for {{{{.*}}}} -> (tensor<512xf32, #blocked>)
        CHECK: arith.addf %a, %{{{{.*}}}} : tensor<512xf32, #blocked>
        CHECK: (tensor<512xf32, #blocked>) -> f32
    """)
    assert fired["forward-propagate layout through scf.for"] == 1


def test_remove_conversions_keeps_dot_operand_conversions():
    body = """
    %r = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32, #s0>
    %r2 = tt.expand_dims %r {axis = 0 : i32} : tensor<16xi32, #s0> -> tensor<1x16xi32, #b2>
    %rb = tt.broadcast %r2 : tensor<1x16xi32, #b2> -> tensor<16x16xi32, #b2>
    %base = tt.splat %x : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>, #b2>
    %ptrs = tt.addptr %base, %rb : tensor<16x16x!tt.ptr<f32>, #b2>, tensor<16x16xi32, #b2>
    %v = tt.load %ptrs : tensor<16x16x!tt.ptr<f32>, #b2>
    %a = ttg.convert_layout %v : tensor<16x16xf32, #b2> -> tensor<16x16xf32, #dot_op>
    %b = ttg.convert_layout %v : tensor<16x16xf32, #b2> -> tensor<16x16xf32, #dot_op1>
    %z = arith.constant dense<0.000000e+00> : tensor<16x16xf32, #b2>
    %d = tt.dot %a, %b, %z, inputPrecision = ieee : tensor<16x16xf32, #dot_op> * tensor<16x16xf32, #dot_op1> -> tensor<16x16xf32, #b2>
    tt.store %ptrs, %d : tensor<16x16x!tt.ptr<f32>, #b2>
    """
    b2 = ("#ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [2, 16], "
          "warpsPerCTA = [4, 1], order = [1, 0]}>")
    ir = ttgir(body, f"%x: !tt.ptr<f32> {ARG16}",
               {"b2": b2, "s0": "#ttg.slice<{dim = 0, parent = #b2}>",
                "dot_op": "#ttg.dot_op<{opIdx = 0, parent = #b2}>",
                "dot_op1": "#ttg.dot_op<{opIdx = 1, parent = #b2}>"})
    fired = unchanged(ir, "remove-layout-conversions")
    assert not any("rematerialize" in p or "forward" in p for p in fired)


def test_remove_conversions_does_not_duplicate_a_shared_load():
    # The loaded value is stored in two layouts: moving the load would duplicate it, so the
    # second store moves into the load's (wider, same-order) layout instead; one load stays.
    body = PTRS4 + """
    %v = tt.load %ptrs : tensor<512x!tt.ptr<f32>, #b4>
    tt.store %ptrs, %v : tensor<512x!tt.ptr<f32>, #b4>
    %r1 = tt.make_range {end = 512 : i32, start = 0 : i32} : tensor<512xi32, #b1>
    %ybase = tt.splat %y : !tt.ptr<f32> -> tensor<512x!tt.ptr<f32>, #b1>
    %yptrs = tt.addptr %ybase, %r1 : tensor<512x!tt.ptr<f32>, #b1>, tensor<512xi32, #b1>
    %v1 = ttg.convert_layout %v : tensor<512xf32, #b4> -> tensor<512xf32, #b1>
    tt.store %yptrs, %v1 : tensor<512x!tt.ptr<f32>, #b1>
    """
    ir = ttgir(body, f"%x: !tt.ptr<f32> {ARG16}, %y: !tt.ptr<f32> {ARG16}",
               {"b1": B1, "b4": B4})
    text, fired = run(ir, "remove-layout-conversions")
    assert fired.get("move tt.store into its value's layout") == 1
    assert text.count("tt.load ") == 1 and "ttg.convert_layout" not in text
    filecheck(text, """
        CHECK: %v = tt.load %ptrs : tensor<512x!tt.ptr<f32>, #[[W:blocked]]>
        CHECK: tt.store %ptrs, %v : tensor<512x!tt.ptr<f32>, #[[W]]>
        CHECK: tt.addptr {{.*}} : tensor<512x!tt.ptr<f32>, #[[W]]>, tensor<512xi32, #[[W]]>
        CHECK-NEXT: tt.store {{.*}}, %v : tensor<512x!tt.ptr<f32>, #[[W]]>
    """)


ROW_1D = ("#ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [32, 1], warpsPerCTA = [4, 1], "
          "order = [1, 0]}>")
MMA_16 = ("#ttg.nvidia_mma<{versionMajor = 3, versionMinor = 0, warpsPerCTA = [4, 1], "
          "instrShape = [16, 16, 16]}>")
NVMMA_SHARED = ("#ttg.nvmma_shared<{swizzlingByteWidth = 128, transposed = false, "
                "elementBitWidth = 16}>")


def test_remove_conversions_converts_a_broadcast_row_before_the_broadcast():
    # Tutorial 06's dQ step: a row of M, loaded once and used elsewhere too (so the load
    # stays), is broadcast over the scores' tile and converted into the wgmma layout. The
    # conversion moves to the 128x1 row and the broadcast happens in #mma (each thread keeps
    # one value per row, not one per element of the 128x16 tile).
    body = """
    %r = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32, #s>
    %mp = tt.splat %m : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>, #s>
    %mptrs = tt.addptr %mp, %r : tensor<128x!tt.ptr<f32>, #s>, tensor<128xi32, #s>
    %row = tt.load %mptrs : tensor<128x!tt.ptr<f32>, #s>
    tt.store %mptrs, %row : tensor<128x!tt.ptr<f32>, #s>
    %col = tt.expand_dims %row {axis = 1 : i32} : tensor<128xf32, #s> -> tensor<128x1xf32, #row>
    %wide = tt.broadcast %col : tensor<128x1xf32, #row> -> tensor<128x16xf32, #row>
    %wm = ttg.convert_layout %wide : tensor<128x16xf32, #row> -> tensor<128x16xf32, #mma>
    %zero = arith.constant dense<0.000000e+00> : tensor<128x16xf32, #mma>
    %d = ttng.warp_group_dot %a, %b, %zero {isAsync = false} : !ttg.memdesc<128x64xf16, #shared, #smem> * !ttg.memdesc<64x16xf16, #shared, #smem> -> tensor<128x16xf32, #mma>
    %dw = ttng.warp_group_dot_wait %d {pendings = 0 : i32} : tensor<128x16xf32, #mma>
    %p = arith.subf %dw, %wm : tensor<128x16xf32, #mma>
    %ones = arith.constant dense<1.000000e+00> : tensor<128x16xf32, #mma>
    %e = arith.addf %p, %ones : tensor<128x16xf32, #mma>
    %wp = tt.splat %m : !tt.ptr<f32> -> tensor<128x16x!tt.ptr<f32>, #mma>
    tt.store %wp, %e : tensor<128x16x!tt.ptr<f32>, #mma>
    """
    memdesc = "!ttg.memdesc<{}xf16, #shared, #smem>"
    ir = ttgir(body, f"%m: !tt.ptr<f32> {ARG16}, %a: {memdesc.format('128x64')}, "
               f"%b: {memdesc.format('64x16')}",
               {"row": ROW_1D, "s": "#ttg.slice<{dim = 1, parent = #row}>", "mma": MMA_16,
                "shared": NVMMA_SHARED, "smem": "#ttg.shared_memory"})
    text, fired = run(ir, "remove-layout-conversions")
    assert fired.get("rematerialize backward to a broadcast's operand") == 1
    assert text.count("tt.load ") == 1 and text.count("ttg.convert_layout") == 1
    filecheck(text, """
        CHECK: %col = tt.expand_dims %row {axis = 1 : i32} : {{.*}} -> tensor<128x1xf32, #[[R:blocked]]>
        CHECK-NEXT: [[C:%[0-9a-z_]+]] = ttg.convert_layout %col : tensor<128x1xf32, #[[R]]> -> tensor<128x1xf32, #[[M:mma]]>
        CHECK-NEXT: %wide = tt.broadcast [[C]] : tensor<128x1xf32, #[[M]]> -> tensor<128x16xf32, #[[M]]>
        CHECK: arith.subf %dw, %wide : tensor<128x16xf32, #[[M]]>
    """)


# ---- optimize-thread-locality -------------------------------------------------------------------
ROWS = ("#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [2, 16], warpsPerCTA = [4, 1], "
        "order = [1, 0]}>")
COLS_SPLIT = ("#ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [1, 32], "
              "warpsPerCTA = [1, 4], order = [1, 0]}>")


def reduce_rows_ttgir(converted: bool) -> str:
    src = "%vc" if converted else "%v"
    layout = "#w" if converted else "#l"
    body = f"""
    %c = tt.make_range {{end = 256 : i32, start = 0 : i32}} : tensor<256xi32, #sl>
    %c2 = tt.expand_dims %c {{axis = 0 : i32}} : tensor<256xi32, #sl> -> tensor<1x256xi32, #l>
    %cb = tt.broadcast %c2 : tensor<1x256xi32, #l> -> tensor<32x256xi32, #l>
    %base = tt.splat %x : !tt.ptr<f32> -> tensor<32x256x!tt.ptr<f32>, #l>
    %ptrs = tt.addptr %base, %cb : tensor<32x256x!tt.ptr<f32>, #l>, tensor<32x256xi32, #l>
    %v = tt.load %ptrs : tensor<32x256x!tt.ptr<f32>, #l>
    %vc = ttg.convert_layout %v : tensor<32x256xf32, #l> -> tensor<32x256xf32, #w>
    %s = "tt.reduce"({src}) <{{axis = 1 : i32}}> ({{
    ^bb0(%a: f32, %b: f32):
      %t = arith.addf %a, %b : f32
      tt.reduce.return %t : f32
    }}) : (tensor<32x256xf32, {layout}>) -> tensor<32xf32, #ttg.slice<{{dim = 1, parent = {layout}}}>>
    """
    return ttgir(body, f"%x: !tt.ptr<f32> {ARG16}",
                 {"l": ROWS, "w": COLS_SPLIT, "sl": "#ttg.slice<{dim = 0, parent = #l}>"})


def test_thread_locality_moves_warps_off_the_reduced_axis():
    text, fired = run(reduce_rows_ttgir(converted=True), "optimize-thread-locality")
    filecheck(text, """
        CHECK: #[[GOOD:blocked[0-9]*]] = #ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [1, 32], warpsPerCTA = [4, 1], order = [1, 0]}>
        CHECK: %[[V:.*]] = ttg.convert_layout %v : {{.*}} -> tensor<32x256xf32, #[[GOOD]]>
        CHECK-NEXT: "tt.reduce"(%[[V]])
        CHECK: (tensor<32x256xf32, #[[GOOD]]>) -> tensor<32xf32, #{{slice[0-9]*}}>
    """)
    assert fired == {"keep reduction within warps": 1}


def test_thread_locality_is_a_no_op_without_a_paid_conversion():
    fired = unchanged(reduce_rows_ttgir(converted=False), "optimize-thread-locality")
    assert fired == {}


def loop_reduction_ttgir(update: str = "arith.addf %acc, %s", init: str = "%zero") -> str:
    """A loop adding each iteration's row sums of a loaded 32x256 tile into a carried value
    (#l repeats 4 times along the rows: each thread holds 4 runs of 4 elements of a row)."""
    body = f"""
    %zero = arith.constant dense<0.000000e+00> : tensor<32xf32, #r>
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c4 = arith.constant 4 : i32
    %c = tt.make_range {{end = 256 : i32, start = 0 : i32}} : tensor<256xi32, #sl>
    %c2 = tt.expand_dims %c {{axis = 0 : i32}} : tensor<256xi32, #sl> -> tensor<1x256xi32, #l>
    %cb = tt.broadcast %c2 : tensor<1x256xi32, #l> -> tensor<32x256xi32, #l>
    %base = tt.splat %x : !tt.ptr<f32> -> tensor<32x256x!tt.ptr<f32>, #l>
    %ptrs = tt.addptr %base, %cb : tensor<32x256x!tt.ptr<f32>, #l>, tensor<32x256xi32, #l>
    %out = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = {init}) -> (tensor<32xf32, #r>) : i32 {{
      %v = tt.load %ptrs : tensor<32x256x!tt.ptr<f32>, #l>
      %s = "tt.reduce"(%v) <{{axis = 1 : i32}}> ({{
      ^bb0(%a: f32, %b: f32):
        %t = arith.addf %a, %b : f32
        tt.reduce.return %t : f32
      }}) : (tensor<32x256xf32, #l>) -> tensor<32xf32, #r>
      %next = {update} : tensor<32xf32, #r>
      scf.yield %next : tensor<32xf32, #r>
    }}
    %rows = tt.make_range {{end = 32 : i32, start = 0 : i32}} : tensor<32xi32, #r>
    %yb = tt.splat %y : !tt.ptr<f32> -> tensor<32x!tt.ptr<f32>, #r>
    %yp = tt.addptr %yb, %rows : tensor<32x!tt.ptr<f32>, #r>, tensor<32xi32, #r>
    tt.store %yp, %out : tensor<32x!tt.ptr<f32>, #r>
    """
    return ttgir(body, f"%x: !tt.ptr<f32> {ARG16}, %y: !tt.ptr<f32> {ARG16}",
                 {"l": ROWS, "sl": "#ttg.slice<{dim = 0, parent = #l}>",
                  "r": "#ttg.slice<{dim = 1, parent = #l}>"})


def test_thread_locality_carries_a_loop_reduction_as_thread_local_partials():
    text, fired = run(loop_reduction_ttgir(), "optimize-thread-locality")
    filecheck(text, """
        CHECK: #[[B3:blocked[0-9]*]] = #ttg.blocked<{sizePerThread = [1, 1, 16], threadsPerWarp = [2, 16, 1], warpsPerCTA = [4, 1, 1], order = [2, 1, 0]}>
        CHECK: %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : tensor<32xf32, #[[R:slice[0-9]*]]>
        CHECK: %[[PART0:.*]] = arith.constant dense<0.000000e+00> : tensor<32x16xf32, #[[P:slice[0-9]*]]>
        CHECK: %[[LOOP:.*]]:2 = scf.for {{.*}} iter_args(%[[ACC:[^ ]*]] = %[[ZERO]], %[[PART:[^ ]*]] = %[[PART0]])
        CHECK: %[[V:.*]] = tt.load
        CHECK-NEXT: %[[V4:.*]] = tt.reshape %[[V]] : tensor<32x256xf32, #{{blocked[0-9]*}}> -> tensor<32x4x16x4xf32, #{{blocked[0-9]*}}>
        CHECK-NEXT: %[[T4:.*]] = tt.trans %[[V4]] {order = array<i32: 0, 2, 1, 3>} : {{.*}} -> tensor<32x16x4x4xf32, #{{blocked[0-9]*}}>
        CHECK-NEXT: %[[V3:.*]] = tt.reshape %[[T4]] : {{.*}} -> tensor<32x16x16xf32, #[[B3]]>
        CHECK-NEXT: %[[LOCAL:.*]] = "tt.reduce"(%[[V3]]) <{axis = 2 : i32}>
        CHECK: (tensor<32x16x16xf32, #[[B3]]>) -> tensor<32x16xf32, #[[P]]>
        CHECK-NEXT: %[[NEXT:.*]] = arith.addf %[[PART]], %[[LOCAL]] : tensor<32x16xf32, #[[P]]>
        CHECK-NEXT: scf.yield %[[ACC]], %[[NEXT]]
        CHECK: %[[TOTAL:.*]] = "tt.reduce"(%[[LOOP]]#1) <{axis = 1 : i32}>
        CHECK: ttg.convert_layout %[[TOTAL]] : {{.*}} -> tensor<32xf32, #[[R]]>
        CHECK-NEXT: %[[FINAL:.*]] = arith.addf %[[ZERO]], %{{.*}} : tensor<32xf32, #[[R]]>
        CHECK: tt.store %{{.*}}, %[[FINAL]]
    """)
    assert text.count('"tt.reduce"') == 2
    assert fired == {"carry thread-local partials through the loop": 1}


def test_thread_locality_leaves_a_loop_whose_update_is_another_op():
    fired = unchanged(loop_reduction_ttgir(update="arith.maxnumf %acc, %s"),
                      "optimize-thread-locality")
    assert fired == {}


def test_thread_locality_leaves_a_loop_whose_initial_value_is_not_a_constant():
    ir = loop_reduction_ttgir(init="%zz").replace(
        "%c0 = arith.constant 0 : i32",
        "%c0 = arith.constant 0 : i32\n    %zz = arith.addf %zero, %zero : tensor<32xf32, #r>")
    fired = unchanged(ir, "optimize-thread-locality")
    assert fired == {}


# ---- reduce-data-duplication --------------------------------------------------------------------
def test_dot_operands_are_staged_through_shared_memory():
    text, fired = run(DOT_TTIR, "convert-triton-to-tritongpu{num-warps=4},"
                                "reduce-data-duplication")
    filecheck(text, """
        CHECK: #[[SH:shared]] = #ttg.swizzled_shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [1, 0]}>
        CHECK: %[[M:.*]] = ttg.local_alloc %a : (tensor<16x16xf32, #blocked>) -> !ttg.memdesc<16x16xf32, #[[SH]], #smem>
        CHECK-NEXT: %[[A:.*]] = ttg.local_load %[[M]] : {{.*}} -> tensor<16x16xf32, #dot_op>
        CHECK: ttg.local_alloc %b
        CHECK-NEXT: ttg.local_load
        CHECK-NEXT: tt.dot %[[A]]
        CHECK: ttg.convert_layout %s
    """)
    assert fired["stage dot operand through shared memory"] == 2


def test_data_duplication_leaves_ordinary_conversions():
    fired = unchanged(reduce_rows_ttgir(converted=True), "reduce-data-duplication")
    assert fired == {}


# ---- reorder-instructions -----------------------------------------------------------------------
def test_reorder_sinks_conversions_and_hoists_allocs():
    body = """
    %r = tt.make_range {end = 512 : i32, start = 0 : i32} : tensor<512xi32, #b1>
    %early = ttg.convert_layout %r : tensor<512xi32, #b1> -> tensor<512xi32, #b4>
    %base = tt.splat %x : !tt.ptr<i32> -> tensor<512x!tt.ptr<i32>, #b4>
    %c = arith.constant dense<1> : tensor<512xi32, #b4>
    %ptrs = tt.addptr %base, %early : tensor<512x!tt.ptr<i32>, #b4>, tensor<512xi32, #b4>
    %v = arith.addi %r, %r : tensor<512xi32, #b1>
    %w = arith.muli %v, %v : tensor<512xi32, #b1>
    %m = ttg.local_alloc %v : (tensor<512xi32, #b1>) -> !ttg.memdesc<512xi32, #sh, #smem>
    %back = ttg.local_load %m : !ttg.memdesc<512xi32, #sh, #smem> -> tensor<512xi32, #b4>
    tt.store %ptrs, %back : tensor<512x!tt.ptr<i32>, #b4>
    """
    ir = ttgir(body, f"%x: !tt.ptr<i32> {ARG16}",
               {"b1": B1, "b4": B4,
                "sh": "#ttg.swizzled_shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [0]}>"})
    text, fired = run(ir, "reorder-instructions")
    filecheck(text, """
        CHECK: tt.splat %x
        CHECK-NEXT: arith.constant
        CHECK-NEXT: %early = ttg.convert_layout %r
        CHECK-NEXT: tt.addptr %base, %early
        CHECK-NEXT: %v = arith.addi
        CHECK-NEXT: %m = ttg.local_alloc %v
        CHECK-NEXT: %w = arith.muli
        CHECK-NEXT: %back = ttg.local_load %m
        CHECK-NEXT: tt.store
    """)
    assert fired == {"sink ttg.convert_layout to its first user": 1,
                     "hoist ttg.local_alloc next to its operand": 1}


def test_reorder_leaves_ops_in_place_when_moving_is_pointless_or_unsafe():
    # the conversion already sits right before its user; the local_load may not move past the
    # local_store that overwrites its buffer; an alloc without a value has nothing to follow
    body = """
    %r = tt.make_range {end = 512 : i32, start = 0 : i32} : tensor<512xi32, #b1>
    %m = ttg.local_alloc : () -> !ttg.memdesc<512xi32, #sh, #smem, mutable>
    ttg.local_store %r, %m : tensor<512xi32, #b1> -> !ttg.memdesc<512xi32, #sh, #smem, mutable>
    %back = ttg.local_load %m : !ttg.memdesc<512xi32, #sh, #smem, mutable> -> tensor<512xi32, #b4>
    ttg.local_store %r, %m : tensor<512xi32, #b1> -> !ttg.memdesc<512xi32, #sh, #smem, mutable>
    %base = tt.splat %x : !tt.ptr<i32> -> tensor<512x!tt.ptr<i32>, #b4>
    %conv = ttg.convert_layout %r : tensor<512xi32, #b1> -> tensor<512xi32, #b4>
    %ptrs = tt.addptr %base, %conv : tensor<512x!tt.ptr<i32>, #b4>, tensor<512xi32, #b4>
    tt.store %ptrs, %back : tensor<512x!tt.ptr<i32>, #b4>
    """
    ir = ttgir(body, f"%x: !tt.ptr<i32> {ARG16}",
               {"b1": B1, "b4": B4,
                "sh": "#ttg.swizzled_shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [0]}>"})
    fired = unchanged(ir, "reorder-instructions")
    assert fired == {}


# ---- allocate-shared-memory ---------------------------------------------------------------------
def test_allocation_reuses_memory_of_dead_buffers_and_separates_live_ones():
    body = """
    %r = tt.make_range {end = 512 : i32, start = 0 : i32} : tensor<512xi32, #b1>
    %m = ttg.local_alloc %r : (tensor<512xi32, #b1>) -> !ttg.memdesc<512xi32, #sh, #smem>
    %c1 = ttg.convert_layout %r : tensor<512xi32, #b1> -> tensor<512xi32, #b4>
    %c2 = ttg.convert_layout %c1 : tensor<512xi32, #b4> -> tensor<512xi32, #b1>
    %back = ttg.local_load %m : !ttg.memdesc<512xi32, #sh, #smem> -> tensor<512xi32, #b1>
    %s = arith.addi %back, %c2 : tensor<512xi32, #b1>
    %base = tt.splat %x : !tt.ptr<i32> -> tensor<512x!tt.ptr<i32>, #b1>
    %ptrs = tt.addptr %base, %r : tensor<512x!tt.ptr<i32>, #b1>, tensor<512xi32, #b1>
    tt.store %ptrs, %s : tensor<512x!tt.ptr<i32>, #b1>
    """
    ir = ttgir(body, f"%x: !tt.ptr<i32> {ARG16}",
               {"b1": B1, "b4": B4,
                "sh": "#ttg.swizzled_shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [0]}>"})
    text, fired = run(ir, "allocate-shared-memory")
    # the buffer lives across both conversions; the conversions' scratch areas do not overlap
    # in time, so they share the bytes after it
    filecheck(text, """
        CHECK: ttg.shared = 4096 : i32
        CHECK: ttg.local_alloc %r {allocation.offset = 0 : i32}
        CHECK-NEXT: ttg.convert_layout %r {allocation.offset = 2048 : i32}
        CHECK-NEXT: ttg.convert_layout %c1 {allocation.offset = 2048 : i32}
        CHECK-NEXT: ttg.local_load %m :
    """)
    assert fired == {"allocate explicit for ttg.local_alloc": 1,
                     "allocate scratch for ttg.convert_layout": 2}


def test_allocation_keeps_buffers_used_in_a_loop_alive_for_the_whole_loop():
    body = """
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %r = tt.make_range {end = 512 : i32, start = 0 : i32} : tensor<512xi32, #b1>
    %m = ttg.local_alloc %r : (tensor<512xi32, #b1>) -> !ttg.memdesc<512xi32, #sh, #smem>
    %base = tt.splat %x : !tt.ptr<i32> -> tensor<512x!tt.ptr<i32>, #b1>
    %ptrs = tt.addptr %base, %r : tensor<512x!tt.ptr<i32>, #b1>, tensor<512xi32, #b1>
    scf.for %i = %c0 to %n step %c1 : i32 {
      %back = ttg.local_load %m : !ttg.memdesc<512xi32, #sh, #smem> -> tensor<512xi32, #b1>
      %c = ttg.convert_layout %back : tensor<512xi32, #b1> -> tensor<512xi32, #b4>
      %d = ttg.convert_layout %c : tensor<512xi32, #b4> -> tensor<512xi32, #b1>
      tt.store %ptrs, %d : tensor<512x!tt.ptr<i32>, #b1>
      scf.yield
    }
    """
    ir = ttgir(body, f"%x: !tt.ptr<i32> {ARG16}, %n: i32",
               {"b1": B1, "b4": B4,
                "sh": "#ttg.swizzled_shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [0]}>"})
    text, _ = run(ir, "allocate-shared-memory")
    filecheck(text, """
        CHECK: ttg.shared = 4096 : i32
        CHECK: ttg.local_alloc %r {allocation.offset = 0 : i32}
        CHECK: ttg.convert_layout %back {allocation.offset = 2048 : i32}
    """)


def test_allocation_without_buffers_sets_zero():
    text, fired = run(vector_kernel(), "allocate-shared-memory")
    assert "allocation.offset" not in text and fired == {}
    filecheck(text, "CHECK: ttg.shared = 0 : i32")


def test_remove_conversions_hoists_a_needed_conversion_out_of_its_loop():
    # the load cannot move into the narrower layout, and the store cannot move into the
    # load's layout (its scattered pointers come from a load that is used twice), so the
    # conversion stays, but once
    body = LOOP_BOUNDS + PTRS4 + """
    %v = tt.load %ptrs : tensor<512x!tt.ptr<f32>, #b4>
    %r1 = tt.make_range {end = 512 : i32, start = 0 : i32} : tensor<512xi32, #b1>
    %ibase = tt.splat %idx : !tt.ptr<i32> -> tensor<512x!tt.ptr<i32>, #b1>
    %iptrs = tt.addptr %ibase, %r1 : tensor<512x!tt.ptr<i32>, #b1>, tensor<512xi32, #b1>
    %offs = tt.load %iptrs : tensor<512x!tt.ptr<i32>, #b1>
    tt.store %iptrs, %offs : tensor<512x!tt.ptr<i32>, #b1>
    %ybase = tt.splat %y : !tt.ptr<f32> -> tensor<512x!tt.ptr<f32>, #b1>
    %yptrs = tt.addptr %ybase, %offs : tensor<512x!tt.ptr<f32>, #b1>, tensor<512xi32, #b1>
    scf.for %i = %c0 to %n step %c1 : i32 {
      %v1 = ttg.convert_layout %v : tensor<512xf32, #b4> -> tensor<512xf32, #b1>
      tt.store %yptrs, %v1 : tensor<512x!tt.ptr<f32>, #b1>
      scf.yield
    }
    """
    ir = ttgir(body, f"%x: !tt.ptr<f32> {ARG16}, %y: !tt.ptr<f32> {ARG16}, "
               f"%idx: !tt.ptr<i32> {ARG16}, %n: i32", {"b1": B1, "b4": B4})
    text, fired = run(ir, "remove-layout-conversions")
    filecheck(text, """
        CHECK: %v1 = ttg.convert_layout %v
        CHECK-NEXT: scf.for
        CHECK-NEXT: tt.store %yptrs, %v1
    """)
    assert fired == {"hoist loop-invariant convert_layout": 1}
