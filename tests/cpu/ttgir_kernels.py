"""A small, wide set of ttir kernels for the ttgir pipeline tests: reductions along each axis of
2-D tensors, 2-D masks, a transpose whose layouts disagree, integer ops, fp16/bf16, a scan,
an argmax (two-operand reduce), a loop with loop-carried pointers and an scf.if."""
from __future__ import annotations

ARG16 = "{tt.divisibility = 16 : i32}"


def _func(name: str, args: str, body: str) -> str:
    return f"module {{\n  tt.func public @{name}({args}) {{\n{body}    tt.return\n  }}\n}}\n"


def _tile_ptrs(prefix: str, base: str, rows: int, cols: int, elem: str, stride: str) -> str:
    """Ops computing `%{prefix}ptrs`: base + r * stride + c over a rows x cols tile."""
    p = prefix
    return f"""    %{p}r = tt.make_range {{end = {rows} : i32, start = 0 : i32}} : tensor<{rows}xi32>
    %{p}c = tt.make_range {{end = {cols} : i32, start = 0 : i32}} : tensor<{cols}xi32>
    %{p}r2 = tt.expand_dims %{p}r {{axis = 1 : i32}} : tensor<{rows}xi32> -> tensor<{rows}x1xi32>
    %{p}st = tt.splat {stride} : i32 -> tensor<{rows}x1xi32>
    %{p}ro = arith.muli %{p}r2, %{p}st : tensor<{rows}x1xi32>
    %{p}c2 = tt.expand_dims %{p}c {{axis = 0 : i32}} : tensor<{cols}xi32> -> tensor<1x{cols}xi32>
    %{p}rb = tt.broadcast %{p}ro : tensor<{rows}x1xi32> -> tensor<{rows}x{cols}xi32>
    %{p}cb = tt.broadcast %{p}c2 : tensor<1x{cols}xi32> -> tensor<{rows}x{cols}xi32>
    %{p}off = arith.addi %{p}rb, %{p}cb : tensor<{rows}x{cols}xi32>
    %{p}base = tt.splat {base} : !tt.ptr<{elem}> -> tensor<{rows}x{cols}x!tt.ptr<{elem}>>
    %{p}ptrs = tt.addptr %{p}base, %{p}off : tensor<{rows}x{cols}x!tt.ptr<{elem}>>, tensor<{rows}x{cols}xi32>
"""


def _sum(value: str, axis: int, src: str, dst: str, elem: str = "f32", op: str = "arith.addf") -> str:
    return f"""    %sum = "tt.reduce"({value}) <{{axis = {axis} : i32}}> ({{
    ^bb0(%a: {elem}, %b: {elem}):
      %t = {op} %a, %b : {elem}
      tt.reduce.return %t : {elem}
    }}) : ({src}) -> {dst}
"""


def reduce_kernel(axis: int) -> str:
    """Load a 32x64 f32 tile, sum it along `axis`, store the 1-D result."""
    n = 32 if axis == 1 else 64
    out_range = "%xr" if axis == 1 else "%xc"
    body = (_tile_ptrs("x", "%in", 32, 64, "f32", "%stride")
            + "    %x = tt.load %xptrs : tensor<32x64x!tt.ptr<f32>>\n"
            + _sum("%x", axis, "tensor<32x64xf32>", f"tensor<{n}xf32>")
            + f"""    %ob = tt.splat %out : !tt.ptr<f32> -> tensor<{n}x!tt.ptr<f32>>
    %op = tt.addptr %ob, {out_range} : tensor<{n}x!tt.ptr<f32>>, tensor<{n}xi32>
    tt.store %op, %sum : tensor<{n}x!tt.ptr<f32>>
""")
    args = f"%in: !tt.ptr<f32> {ARG16}, %out: !tt.ptr<f32> {ARG16}, %stride: i32 {ARG16}"
    return _func(f"reduce_axis{axis}", args, body)


def row_softmax_kernel() -> str:
    """A 2-D softmax along rows: max, subtract (expand_dims + broadcast), exp, sum, divide."""
    body = (_tile_ptrs("x", "%in", 16, 128, "f32", "%stride")
            + "    %x = tt.load %xptrs : tensor<16x128x!tt.ptr<f32>>\n"
            + _sum("%x", 1, "tensor<16x128xf32>", "tensor<16xf32>", op="arith.maxnumf")
            + """    %m2 = tt.expand_dims %sum {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
    %mb = tt.broadcast %m2 : tensor<16x1xf32> -> tensor<16x128xf32>
    %d = arith.subf %x, %mb : tensor<16x128xf32>
    %e = math.exp %d : tensor<16x128xf32>
    %obase = tt.splat %out : !tt.ptr<f32> -> tensor<16x128x!tt.ptr<f32>>
    %optrs = tt.addptr %obase, %xoff : tensor<16x128x!tt.ptr<f32>>, tensor<16x128xi32>
    tt.store %optrs, %e : tensor<16x128x!tt.ptr<f32>>
""")
    args = f"%in: !tt.ptr<f32> {ARG16}, %out: !tt.ptr<f32> {ARG16}, %stride: i32 {ARG16}"
    return _func("row_softmax", args, body)


def masked_2d_kernel() -> str:
    """Copy a 64x64 tile with a mask `row < M and col < N` built from two broadcast halves."""
    body = (_tile_ptrs("x", "%in", 64, 64, "f32", "%stride")
            + """    %mm = tt.splat %M : i32 -> tensor<64x1xi32>
    %mr = arith.cmpi slt, %xr2, %mm : tensor<64x1xi32>
    %nn = tt.splat %N : i32 -> tensor<1x64xi32>
    %mc = arith.cmpi slt, %xc2, %nn : tensor<1x64xi32>
    %mrb = tt.broadcast %mr : tensor<64x1xi1> -> tensor<64x64xi1>
    %mcb = tt.broadcast %mc : tensor<1x64xi1> -> tensor<64x64xi1>
    %mask = arith.andi %mrb, %mcb : tensor<64x64xi1>
    %zero = arith.constant dense<0.000000e+00> : tensor<64x64xf32>
    %x = tt.load %xptrs, %mask, %zero : tensor<64x64x!tt.ptr<f32>>
    %obase = tt.splat %out : !tt.ptr<f32> -> tensor<64x64x!tt.ptr<f32>>
    %optrs = tt.addptr %obase, %xoff : tensor<64x64x!tt.ptr<f32>>, tensor<64x64xi32>
    tt.store %optrs, %x, %mask : tensor<64x64x!tt.ptr<f32>>
""")
    args = (f"%in: !tt.ptr<f32> {ARG16}, %out: !tt.ptr<f32> {ARG16}, %stride: i32 {ARG16}, "
            f"%M: i32, %N: i32 {ARG16}")
    return _func("masked_2d", args, body)


def transpose_kernel() -> str:
    """Load a 64x32 tile row-major, tt.trans it, store it row-major as 32x64: the loaded and the
    stored layouts disagree, so data must move between threads once."""
    body = (_tile_ptrs("x", "%in", 64, 32, "f32", "%sin")
            + "    %x = tt.load %xptrs : tensor<64x32x!tt.ptr<f32>>\n"
            + "    %t = tt.trans %x {order = array<i32: 1, 0>} : tensor<64x32xf32> -> tensor<32x64xf32>\n"
            + _tile_ptrs("o", "%out", 32, 64, "f32", "%sout")
            + "    tt.store %optrs, %t : tensor<32x64x!tt.ptr<f32>>\n")
    args = (f"%in: !tt.ptr<f32> {ARG16}, %out: !tt.ptr<f32> {ARG16}, %sin: i32 {ARG16}, "
            f"%sout: i32 {ARG16}")
    return _func("transpose", args, body)


def int_ops_kernel() -> str:
    """i32 arithmetic on a 1-D block: mul, signed div/rem, shifts, logic, max."""
    body = """    %pid = tt.get_program_id x : i32
    %c256 = arith.constant 256 : i32
    %start = arith.muli %pid, %c256 : i32
    %r = tt.make_range {end = 256 : i32, start = 0 : i32} : tensor<256xi32>
    %s = tt.splat %start : i32 -> tensor<256xi32>
    %offs = arith.addi %s, %r : tensor<256xi32>
    %base = tt.splat %in : !tt.ptr<i32> -> tensor<256x!tt.ptr<i32>>
    %ptrs = tt.addptr %base, %offs : tensor<256x!tt.ptr<i32>>, tensor<256xi32>
    %x = tt.load %ptrs : tensor<256x!tt.ptr<i32>>
    %c3 = arith.constant dense<3> : tensor<256xi32>
    %c2 = arith.constant dense<2> : tensor<256xi32>
    %a = arith.muli %x, %c3 : tensor<256xi32>
    %b = arith.divsi %a, %c2 : tensor<256xi32>
    %c = arith.remsi %x, %c3 : tensor<256xi32>
    %d = arith.shli %b, %c2 : tensor<256xi32>
    %e = arith.xori %d, %c : tensor<256xi32>
    %f = arith.andi %e, %x : tensor<256xi32>
    %g = arith.maxsi %f, %c : tensor<256xi32>
    %obase = tt.splat %out : !tt.ptr<i32> -> tensor<256x!tt.ptr<i32>>
    %optrs = tt.addptr %obase, %offs : tensor<256x!tt.ptr<i32>>, tensor<256xi32>
    tt.store %optrs, %g : tensor<256x!tt.ptr<i32>>
"""
    return _func("int_ops", f"%in: !tt.ptr<i32> {ARG16}, %out: !tt.ptr<i32> {ARG16}", body)


def half_kernel() -> str:
    """fp16 in, math in f32, bf16 out (16-bit loads and stores vectorize 8 wide)."""
    body = """    %pid = tt.get_program_id x : i32
    %c1024 = arith.constant 1024 : i32
    %start = arith.muli %pid, %c1024 : i32
    %r = tt.make_range {end = 1024 : i32, start = 0 : i32} : tensor<1024xi32>
    %s = tt.splat %start : i32 -> tensor<1024xi32>
    %offs = arith.addi %s, %r : tensor<1024xi32>
    %nn = tt.splat %n : i32 -> tensor<1024xi32>
    %mask = arith.cmpi slt, %offs, %nn : tensor<1024xi32>
    %base = tt.splat %in : !tt.ptr<f16> -> tensor<1024x!tt.ptr<f16>>
    %ptrs = tt.addptr %base, %offs : tensor<1024x!tt.ptr<f16>>, tensor<1024xi32>
    %x = tt.load %ptrs, %mask : tensor<1024x!tt.ptr<f16>>
    %xf = arith.extf %x : tensor<1024xf16> to tensor<1024xf32>
    %y = arith.mulf %xf, %xf : tensor<1024xf32>
    %yb = arith.truncf %y : tensor<1024xf32> to tensor<1024xbf16>
    %obase = tt.splat %out : !tt.ptr<bf16> -> tensor<1024x!tt.ptr<bf16>>
    %optrs = tt.addptr %obase, %offs : tensor<1024x!tt.ptr<bf16>>, tensor<1024xi32>
    tt.store %optrs, %yb, %mask : tensor<1024x!tt.ptr<bf16>>
"""
    args = f"%in: !tt.ptr<f16> {ARG16}, %out: !tt.ptr<bf16> {ARG16}, %n: i32 {ARG16}"
    return _func("half", args, body)


def scan_kernel() -> str:
    """An inclusive prefix sum over a 512-element block."""
    body = """    %r = tt.make_range {end = 512 : i32, start = 0 : i32} : tensor<512xi32>
    %base = tt.splat %in : !tt.ptr<f32> -> tensor<512x!tt.ptr<f32>>
    %ptrs = tt.addptr %base, %r : tensor<512x!tt.ptr<f32>>, tensor<512xi32>
    %x = tt.load %ptrs : tensor<512x!tt.ptr<f32>>
    %c = "tt.scan"(%x) <{axis = 0 : i32, reverse = false}> ({
    ^bb0(%a: f32, %b: f32):
      %t = arith.addf %a, %b : f32
      tt.scan.return %t : f32
    }) : (tensor<512xf32>) -> tensor<512xf32>
    %obase = tt.splat %out : !tt.ptr<f32> -> tensor<512x!tt.ptr<f32>>
    %optrs = tt.addptr %obase, %r : tensor<512x!tt.ptr<f32>>, tensor<512xi32>
    tt.store %optrs, %c : tensor<512x!tt.ptr<f32>>
"""
    return _func("scan", f"%in: !tt.ptr<f32> {ARG16}, %out: !tt.ptr<f32> {ARG16}", body)


def argmax_kernel() -> str:
    """A two-operand reduce (value, index) along the rows of a 16x64 tile."""
    body = (_tile_ptrs("x", "%in", 16, 64, "f32", "%stride")
            + """    %x = tt.load %xptrs : tensor<16x64x!tt.ptr<f32>>
    %best:2 = "tt.reduce"(%x, %xcb) <{axis = 1 : i32}> ({
    ^bb0(%v1: f32, %i1: i32, %v2: f32, %i2: i32):
      %gt = arith.cmpf ogt, %v1, %v2 : f32
      %v = arith.select %gt, %v1, %v2 : i1, f32
      %i = arith.select %gt, %i1, %i2 : i1, i32
      tt.reduce.return %v, %i : f32, i32
    }) : (tensor<16x64xf32>, tensor<16x64xi32>) -> (tensor<16xf32>, tensor<16xi32>)
    %ob = tt.splat %out : !tt.ptr<i32> -> tensor<16x!tt.ptr<i32>>
    %op = tt.addptr %ob, %xr : tensor<16x!tt.ptr<i32>>, tensor<16xi32>
    tt.store %op, %best#1 : tensor<16x!tt.ptr<i32>>
""")
    args = f"%in: !tt.ptr<f32> {ARG16}, %out: !tt.ptr<i32> {ARG16}, %stride: i32 {ARG16}"
    return _func("argmax", args, body)


def loop_kernel() -> str:
    """Accumulate 32x32 tiles along K in an scf.for whose pointers are loop-carried."""
    body = (_tile_ptrs("x", "%in", 32, 32, "f32", "%stride")
            + """    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %step = arith.constant dense<32> : tensor<32x32xi32>
    %zero = arith.constant dense<0.000000e+00> : tensor<32x32xf32>
    %res:2 = scf.for %k = %c0 to %K step %c1 iter_args(%p = %xptrs, %acc = %zero) -> (tensor<32x32x!tt.ptr<f32>>, tensor<32x32xf32>) : i32 {
      %v = tt.load %p : tensor<32x32x!tt.ptr<f32>>
      %a = arith.addf %acc, %v : tensor<32x32xf32>
      %np = tt.addptr %p, %step : tensor<32x32x!tt.ptr<f32>>, tensor<32x32xi32>
      scf.yield %np, %a : tensor<32x32x!tt.ptr<f32>>, tensor<32x32xf32>
    }
    %obase = tt.splat %out : !tt.ptr<f32> -> tensor<32x32x!tt.ptr<f32>>
    %optrs = tt.addptr %obase, %xoff : tensor<32x32x!tt.ptr<f32>>, tensor<32x32xi32>
    tt.store %optrs, %res#1 : tensor<32x32x!tt.ptr<f32>>
""")
    args = (f"%in: !tt.ptr<f32> {ARG16}, %out: !tt.ptr<f32> {ARG16}, %stride: i32 {ARG16}, "
            "%K: i32")
    return _func("loop", args, body)




def if_kernel() -> str:
    """An scf.if choosing between two functions of a loaded block; its tensor result is stored."""
    body = """    %r = tt.make_range {end = 512 : i32, start = 0 : i32} : tensor<512xi32>
    %base = tt.splat %in : !tt.ptr<f32> -> tensor<512x!tt.ptr<f32>>
    %ptrs = tt.addptr %base, %r : tensor<512x!tt.ptr<f32>>, tensor<512xi32>
    %x = tt.load %ptrs : tensor<512x!tt.ptr<f32>>
    %c0 = arith.constant 0 : i32
    %cond = arith.cmpi sgt, %flag, %c0 : i32
    %y = scf.if %cond -> (tensor<512xf32>) {
      %e = math.exp %x : tensor<512xf32>
      scf.yield %e : tensor<512xf32>
    } else {
      %n = arith.negf %x : tensor<512xf32>
      scf.yield %n : tensor<512xf32>
    }
    %obase = tt.splat %out : !tt.ptr<f32> -> tensor<512x!tt.ptr<f32>>
    %optrs = tt.addptr %obase, %r : tensor<512x!tt.ptr<f32>>, tensor<512xi32>
    tt.store %optrs, %y : tensor<512x!tt.ptr<f32>>
"""
    return _func("if_else", f"%in: !tt.ptr<f32> {ARG16}, %out: !tt.ptr<f32> {ARG16}, %flag: i32",
                 body)


KERNELS = {
    "reduce_axis0": reduce_kernel(0),
    "reduce_axis1": reduce_kernel(1),
    "row_softmax": row_softmax_kernel(),
    "masked_2d": masked_2d_kernel(),
    "transpose": transpose_kernel(),
    "int_ops": int_ops_kernel(),
    "half": half_kernel(),
    "scan": scan_kernel(),
    "argmax": argmax_kernel(),
    "loop": loop_kernel(),
    "if_else": if_kernel(),
}
