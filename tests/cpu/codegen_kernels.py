"""Small hand-written ttgir kernels for the codegen tests (CPU: they must reach ptxas; GPU: they
run against numpy). Each entry: name -> (ttgir text, numpy reference description)."""
from __future__ import annotations

HEADER = ('module attributes {{"ttg.num-ctas" = 1 : i32, "ttg.num-warps" = {warps} : i32, '
          'ttg.target = "cuda:90", "ttg.threads-per-warp" = 32 : i32}} {{\n')

B2 = ("#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], "
      "order = [1, 0]}>")
B2T = ("#ttg.blocked<{sizePerThread = [4, 1], threadsPerWarp = [8, 4], warpsPerCTA = [1, 4], "
       "order = [0, 1]}>")
B1 = "#ttg.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>"
B1_8 = "#ttg.blocked<{sizePerThread = [8], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>"


def module(body: str, aliases: dict, warps: int = 4) -> str:
    """A ttgir module text: layout aliases, the module header, the body."""
    head = "".join(f"#{name} = {text}\n" for name, text in aliases.items())
    return head + HEADER.format(warps=warps) + body + "}\n"


def _offsets_2d(layout: str, m: int, n: int, stride: str, prefix: str = "",
                rows_arg: str = "%m", cols_arg: str = "%n") -> str:
    """ops computing %off (row * stride + col) and %mask (row < rows_arg and col < cols_arg)
    for an MxN tile in `layout` (every name gets `prefix`); `stride` is an i32 SSA name."""
    s0 = f"#ttg.slice<{{dim = 1, parent = #{layout}}}>"
    s1 = f"#ttg.slice<{{dim = 0, parent = #{layout}}}>"
    text = f"""
    %rows = tt.make_range {{end = {m} : i32, start = 0 : i32}} : tensor<{m}xi32, {s0}>
    %cols = tt.make_range {{end = {n} : i32, start = 0 : i32}} : tensor<{n}xi32, {s1}>
    %r2 = tt.expand_dims %rows {{axis = 1 : i32}} : tensor<{m}xi32, {s0}> -> tensor<{m}x1xi32, #{layout}>
    %c2 = tt.expand_dims %cols {{axis = 0 : i32}} : tensor<{n}xi32, {s1}> -> tensor<1x{n}xi32, #{layout}>
    %st = tt.splat STRIDE : i32 -> tensor<{m}x1xi32, #{layout}>
    %roff = arith.muli %r2, %st : tensor<{m}x1xi32, #{layout}>
    %rb = tt.broadcast %roff : tensor<{m}x1xi32, #{layout}> -> tensor<{m}x{n}xi32, #{layout}>
    %cb = tt.broadcast %c2 : tensor<1x{n}xi32, #{layout}> -> tensor<{m}x{n}xi32, #{layout}>
    %off = arith.addi %rb, %cb : tensor<{m}x{n}xi32, #{layout}>
    %ms = tt.splat ROWS : i32 -> tensor<{m}x1xi32, #{layout}>
    %rm = arith.cmpi slt, %r2, %ms : tensor<{m}x1xi32, #{layout}>
    %ns = tt.splat COLS : i32 -> tensor<1x{n}xi32, #{layout}>
    %cm = arith.cmpi slt, %c2, %ns : tensor<1x{n}xi32, #{layout}>
    %rmb = tt.broadcast %rm : tensor<{m}x1xi1, #{layout}> -> tensor<{m}x{n}xi1, #{layout}>
    %cmb = tt.broadcast %cm : tensor<1x{n}xi1, #{layout}> -> tensor<{m}x{n}xi1, #{layout}>
    %mask = arith.andi %rmb, %cmb : tensor<{m}x{n}xi1, #{layout}>
"""
    text = text.replace("%", "%" + prefix) if prefix else text
    return text.replace("STRIDE", stride).replace("ROWS", rows_arg).replace("COLS", cols_arg)


def reduce_2d(axis: int, combine: str = "arith.addf", dtype: str = "f32") -> str:
    """out[i] = reduce(x[32x64 tile, masked by m x n], axis); rows of x have stride %n."""
    m, n = 32, 64
    keep = n if axis == 0 else m
    sl = f"#ttg.slice<{{dim = {axis}, parent = #blocked}}>"
    zero = "0.000000e+00" if dtype.startswith("f") else "0"
    body = f"""  tt.func public @reduce_{axis}(%x_ptr: !tt.ptr<{dtype}> {{tt.divisibility = 16 : i32}}, %out_ptr: !tt.ptr<{dtype}> {{tt.divisibility = 16 : i32}}, %m: i32, %n: i32 {{tt.divisibility = 16 : i32}}) {{
{_offsets_2d("blocked", m, n, "%n")}
    %p = tt.splat %x_ptr : !tt.ptr<{dtype}> -> tensor<{m}x{n}x!tt.ptr<{dtype}>, #blocked>
    %pp = tt.addptr %p, %off : tensor<{m}x{n}x!tt.ptr<{dtype}>, #blocked>, tensor<{m}x{n}xi32, #blocked>
    %zero = arith.constant dense<{zero}> : tensor<{m}x{n}x{dtype}, #blocked>
    %x = tt.load %pp, %mask, %zero : tensor<{m}x{n}x!tt.ptr<{dtype}>, #blocked>
    %s = "tt.reduce"(%x) <{{axis = {axis} : i32}}> ({{
    ^bb0(%a: {dtype}, %b: {dtype}):
      %t = {combine} %a, %b : {dtype}
      tt.reduce.return %t : {dtype}
    }}) : (tensor<{m}x{n}x{dtype}, #blocked>) -> tensor<{keep}x{dtype}, {sl}>
    %idx = tt.make_range {{end = {keep} : i32, start = 0 : i32}} : tensor<{keep}xi32, {sl}>
    %op = tt.splat %out_ptr : !tt.ptr<{dtype}> -> tensor<{keep}x!tt.ptr<{dtype}>, {sl}>
    %opp = tt.addptr %op, %idx : tensor<{keep}x!tt.ptr<{dtype}>, {sl}>, tensor<{keep}xi32, {sl}>
    tt.store %opp, %s : tensor<{keep}x!tt.ptr<{dtype}>, {sl}>
    tt.return
  }}
"""
    return module(body, {"blocked": B2})


def transpose_convert() -> str:
    """out = x (32x64) read in one layout, stored after a convert_layout to the transposed one."""
    m, n = 32, 64
    body = f"""  tt.func public @convert(%x_ptr: !tt.ptr<f32> {{tt.divisibility = 16 : i32}}, %out_ptr: !tt.ptr<f32> {{tt.divisibility = 16 : i32}}, %m: i32, %n: i32 {{tt.divisibility = 16 : i32}}) {{
{_offsets_2d("blocked", m, n, "%n")}
    %p = tt.splat %x_ptr : !tt.ptr<f32> -> tensor<{m}x{n}x!tt.ptr<f32>, #blocked>
    %pp = tt.addptr %p, %off : tensor<{m}x{n}x!tt.ptr<f32>, #blocked>, tensor<{m}x{n}xi32, #blocked>
    %x = tt.load %pp, %mask : tensor<{m}x{n}x!tt.ptr<f32>, #blocked>
    %y = ttg.convert_layout %x : tensor<{m}x{n}xf32, #blocked> -> tensor<{m}x{n}xf32, #blocked1>
    %off1 = ttg.convert_layout %off : tensor<{m}x{n}xi32, #blocked> -> tensor<{m}x{n}xi32, #blocked1>
    %mask1 = ttg.convert_layout %mask : tensor<{m}x{n}xi1, #blocked> -> tensor<{m}x{n}xi1, #blocked1>
    %q = tt.splat %out_ptr : !tt.ptr<f32> -> tensor<{m}x{n}x!tt.ptr<f32>, #blocked1>
    %qq = tt.addptr %q, %off1 : tensor<{m}x{n}x!tt.ptr<f32>, #blocked1>, tensor<{m}x{n}xi32, #blocked1>
    tt.store %qq, %y, %mask1 : tensor<{m}x{n}x!tt.ptr<f32>, #blocked1>
    tt.return
  }}
"""
    return module(body, {"blocked": B2, "blocked1": B2T})


def _vector_1d(name: str, args: str, ops: str, layout: str = B1, size: int = 1024) -> str:
    """A 1-D kernel over blocks of `size` elements: %offs, %mask are defined for `ops`."""
    body = f"""  tt.func public @{name}({args}, %n: i32 {{tt.divisibility = 16 : i32}}) {{
    %c = arith.constant {size} : i32
    %pid = tt.get_program_id x : i32
    %base = arith.muli %pid, %c : i32
    %r = tt.make_range {{end = {size} : i32, start = 0 : i32}} : tensor<{size}xi32, #blocked>
    %bs = tt.splat %base : i32 -> tensor<{size}xi32, #blocked>
    %offs = arith.addi %bs, %r : tensor<{size}xi32, #blocked>
    %ns = tt.splat %n : i32 -> tensor<{size}xi32, #blocked>
    %mask = arith.cmpi slt, %offs, %ns : tensor<{size}xi32, #blocked>
{ops}
    tt.return
  }}
"""
    return module(body, {"blocked": layout})


def _load(ptr: str, dtype: str, name: str, size: int = 1024, other: str = "") -> str:
    o = f", {other}" if other else ""
    return f"""    %{name}_p = tt.splat {ptr} : !tt.ptr<{dtype}> -> tensor<{size}x!tt.ptr<{dtype}>, #blocked>
    %{name}_pp = tt.addptr %{name}_p, %offs : tensor<{size}x!tt.ptr<{dtype}>, #blocked>, tensor<{size}xi32, #blocked>
    %{name} = tt.load %{name}_pp, %mask{o} : tensor<{size}x!tt.ptr<{dtype}>, #blocked>
"""


def _store(ptr: str, dtype: str, value: str, size: int = 1024) -> str:
    return f"""    %st_p = tt.splat {ptr} : !tt.ptr<{dtype}> -> tensor<{size}x!tt.ptr<{dtype}>, #blocked>
    %st_pp = tt.addptr %st_p, %offs : tensor<{size}x!tt.ptr<{dtype}>, #blocked>, tensor<{size}xi32, #blocked>
    tt.store %st_pp, {value}, %mask : tensor<{size}x!tt.ptr<{dtype}>, #blocked>
"""


def int_ops() -> str:
    """out = select(a > b, (a / 7) % 5 + (a >> 2), maxui(a, b) ^ (b << 1)) with i32, then through
    i64 and f32 conversions back to i32."""
    T = "tensor<1024xi32, #blocked>"
    ops = _load("%a_ptr", "i32", "a") + _load("%b_ptr", "i32", "b") + f"""    %c7 = arith.constant dense<7> : {T}
    %c5 = arith.constant dense<5> : {T}
    %c2 = arith.constant dense<2> : {T}
    %c1 = arith.constant dense<1> : {T}
    %d = arith.divsi %a, %c7 : {T}
    %e = arith.remsi %d, %c5 : {T}
    %f = arith.shrsi %a, %c2 : {T}
    %g = arith.addi %e, %f : {T}
    %h = arith.maxui %a, %b : {T}
    %k = arith.shli %b, %c1 : {T}
    %l = arith.xori %h, %k : {T}
    %cmp = arith.cmpi sgt, %a, %b : {T}
    %s = arith.select %cmp, %g, %l : tensor<1024xi1, #blocked>, {T}
    %w = arith.extsi %s : {T} to tensor<1024xi64, #blocked>
    %wf = arith.sitofp %w : tensor<1024xi64, #blocked> to tensor<1024xf32, #blocked>
    %wi = arith.fptosi %wf : tensor<1024xf32, #blocked> to {T}
    %u = arith.divui %wi, %c7 : {T}
    %v = arith.remui %u, %c5 : {T}
    %res = arith.subi %wi, %v : {T}
""" + _store("%out_ptr", "i32", "%res")
    args = ("%a_ptr: !tt.ptr<i32> {tt.divisibility = 16 : i32}, %b_ptr: !tt.ptr<i32> "
            "{tt.divisibility = 16 : i32}, %out_ptr: !tt.ptr<i32> {tt.divisibility = 16 : i32}")
    return _vector_1d("int_ops", args, ops)


def half_types() -> str:
    """out_bf16 = bf16(f32(x_f16) * 2 + 1); out_f16 = f16(exp(f32(x)))."""
    TF = "tensor<1024xf32, #blocked>"
    ops = _load("%x_ptr", "f16", "x") + f"""    %xf = arith.extf %x : tensor<1024xf16, #blocked> to {TF}
    %two = arith.constant dense<2.000000e+00> : {TF}
    %one = arith.constant dense<1.000000e+00> : {TF}
    %y = arith.mulf %xf, %two : {TF}
    %z = arith.addf %y, %one : {TF}
    %zb = arith.truncf %z : {TF} to tensor<1024xbf16, #blocked>
    %ex = math.exp %xf : {TF}
    %eh = arith.truncf %ex : {TF} to tensor<1024xf16, #blocked>
""" + _store("%b_ptr", "bf16", "%zb") + _store("%h_ptr", "f16", "%eh").replace("%st_p", "%st2_p")
    args = ("%x_ptr: !tt.ptr<f16> {tt.divisibility = 16 : i32}, %b_ptr: !tt.ptr<bf16> "
            "{tt.divisibility = 16 : i32}, %h_ptr: !tt.ptr<f16> {tt.divisibility = 16 : i32}")
    return _vector_1d("half_types", args, ops, layout=B1_8)


def loop_if() -> str:
    """out = sum_{i < k} (x * i if i even else x) , via scf.for with an scf.if inside."""
    T = "tensor<1024xf32, #blocked>"
    ops = _load("%x_ptr", "f32", "x") + f"""    %zero = arith.constant dense<0.000000e+00> : {T}
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c2 = arith.constant 2 : i32
    %acc = scf.for %i = %c0 to %k step %c1 iter_args(%a = %zero) -> ({T}) : i32 {{
      %rem = arith.remsi %i, %c2 : i32
      %even = arith.cmpi eq, %rem, %c0 : i32
      %t = scf.if %even -> ({T}) {{
        %fi = arith.sitofp %i : i32 to f32
        %fs = tt.splat %fi : f32 -> {T}
        %xi = arith.mulf %x, %fs : {T}
        scf.yield %xi : {T}
      }} else {{
        scf.yield %x : {T}
      }}
      %na = arith.addf %a, %t : {T}
      scf.yield %na : {T}
    }}
""" + _store("%out_ptr", "f32", "%acc")
    args = ("%x_ptr: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %out_ptr: !tt.ptr<f32> "
            "{tt.divisibility = 16 : i32}, %k: i32")
    return _vector_1d("loop_if", args, ops)


def scan_1d() -> str:
    """out = cumsum(x) within each block of 1024 (masked elements count as 0)."""
    T = "tensor<1024xf32, #blocked>"
    ops = _load("%x_ptr", "f32", "x", other="%zero") + f"""    %s = "tt.scan"(%x) <{{axis = 0 : i32, reverse = false}}> ({{
    ^bb0(%a: f32, %b: f32):
      %t = arith.addf %a, %b : f32
      tt.scan.return %t : f32
    }}) : ({T}) -> {T}
""" + _store("%out_ptr", "f32", "%s")
    ops = f"    %zero = arith.constant dense<0.000000e+00> : {T}\n" + ops
    args = ("%x_ptr: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %out_ptr: !tt.ptr<f32> "
            "{tt.divisibility = 16 : i32}")
    return _vector_1d("scan", args, ops)


def atomics() -> str:
    """sum_ptr[0] += sum of x (one atomic per element), counts[offs % 16] += 1 (integer atomics
    with contention), old values of a CAS on flag_ptr[0] (0 -> 1) stored to cas_out."""
    T = "tensor<1024xf32, #blocked>"
    TI = "tensor<1024xi32, #blocked>"
    ops = _load("%x_ptr", "f32", "x") + f"""    %sp = tt.splat %sum_ptr : !tt.ptr<f32> -> tensor<1024x!tt.ptr<f32>, #blocked>
    %old = "tt.atomic_rmw"(%sp, %x, %mask) <{{atomic_rmw_op = "fadd", scope = "gpu", sem = "acq_rel"}}> : (tensor<1024x!tt.ptr<f32>, #blocked>, {T}, tensor<1024xi1, #blocked>) -> {T}
    %c16 = arith.constant dense<16> : {TI}
    %one = arith.constant dense<1> : {TI}
    %bucket = arith.remsi %offs, %c16 : {TI}
    %cp = tt.splat %count_ptr : !tt.ptr<i32> -> tensor<1024x!tt.ptr<i32>, #blocked>
    %cpp = tt.addptr %cp, %bucket : tensor<1024x!tt.ptr<i32>, #blocked>, {TI}
    %old2 = "tt.atomic_rmw"(%cpp, %one, %mask) <{{atomic_rmw_op = "add", scope = "gpu", sem = "acq_rel"}}> : (tensor<1024x!tt.ptr<i32>, #blocked>, {TI}, tensor<1024xi1, #blocked>) -> {TI}
    %zero_i = arith.constant 0 : i32
    %one_i = arith.constant 1 : i32
    %prev = "tt.atomic_cas"(%flag_ptr, %zero_i, %one_i) <{{scope = "gpu", sem = "acq_rel"}}> : (!tt.ptr<i32>, i32, i32) -> i32
    %pid2 = tt.get_program_id x : i32
    %cas_slot = tt.addptr %cas_out, %pid2 : !tt.ptr<i32>, i32
    tt.store %cas_slot, %prev : !tt.ptr<i32>
"""
    args = ("%x_ptr: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %sum_ptr: !tt.ptr<f32>, "
            "%count_ptr: !tt.ptr<i32>, %flag_ptr: !tt.ptr<i32>, %cas_out: !tt.ptr<i32>")
    return _vector_1d("atomics", args, ops)


def lock_release() -> str:
    """A spin lock's two scalar atomics: a CAS whose old value every thread reads (stored to
    out[pid]) and the release, an exchange whose result nobody reads."""
    body = """  tt.func public @lock_release(%lock: !tt.ptr<i32> {tt.divisibility = 16 : i32}, %out: !tt.ptr<i32> {tt.divisibility = 16 : i32}) {
    %zero = arith.constant 0 : i32
    %one = arith.constant 1 : i32
    %prev = "tt.atomic_cas"(%lock, %zero, %one) <{scope = "gpu", sem = "acq_rel"}> : (!tt.ptr<i32>, i32, i32) -> i32
    %pid = tt.get_program_id x : i32
    %slot = tt.addptr %out, %pid : !tt.ptr<i32>, i32
    tt.store %slot, %prev : !tt.ptr<i32>
    %released = "tt.atomic_rmw"(%lock, %zero) <{atomic_rmw_op = "exch", scope = "gpu", sem = "acq_rel"}> : (!tt.ptr<i32>, i32) -> i32
    tt.return
  }
"""
    return module(body, {})


def dot_fma() -> str:
    """c = a @ b for 32x32 f32 (row-major, stride 32), FMA dot with dot-operand layouts."""
    L = "#blocked"
    A = f"#ttg.dot_op<{{opIdx = 0, parent = {L}}}>"
    Bo = f"#ttg.dot_op<{{opIdx = 1, parent = {L}}}>"
    body = f"""  tt.func public @dot(%a_ptr: !tt.ptr<f32> {{tt.divisibility = 16 : i32}}, %b_ptr: !tt.ptr<f32> {{tt.divisibility = 16 : i32}}, %c_ptr: !tt.ptr<f32> {{tt.divisibility = 16 : i32}}, %m: i32, %n: i32 {{tt.divisibility = 16 : i32}}) {{
{_offsets_2d("blocked", 32, 32, "%n")}
    %ap = tt.splat %a_ptr : !tt.ptr<f32> -> tensor<32x32x!tt.ptr<f32>, #blocked>
    %app = tt.addptr %ap, %off : tensor<32x32x!tt.ptr<f32>, #blocked>, tensor<32x32xi32, #blocked>
    %a = tt.load %app, %mask : tensor<32x32x!tt.ptr<f32>, #blocked>
    %bp = tt.splat %b_ptr : !tt.ptr<f32> -> tensor<32x32x!tt.ptr<f32>, #blocked>
    %bpp = tt.addptr %bp, %off : tensor<32x32x!tt.ptr<f32>, #blocked>, tensor<32x32xi32, #blocked>
    %b = tt.load %bpp, %mask : tensor<32x32x!tt.ptr<f32>, #blocked>
    %ad = ttg.convert_layout %a : tensor<32x32xf32, #blocked> -> tensor<32x32xf32, {A}>
    %bd = ttg.convert_layout %b : tensor<32x32xf32, #blocked> -> tensor<32x32xf32, {Bo}>
    %acc = arith.constant dense<0.000000e+00> : tensor<32x32xf32, #blocked>
    %c = tt.dot %ad, %bd, %acc, inputPrecision = ieee : tensor<32x32xf32, {A}> * tensor<32x32xf32, {Bo}> -> tensor<32x32xf32, #blocked>
    %cp = tt.splat %c_ptr : !tt.ptr<f32> -> tensor<32x32x!tt.ptr<f32>, #blocked>
    %cpp = tt.addptr %cp, %off : tensor<32x32x!tt.ptr<f32>, #blocked>, tensor<32x32xi32, #blocked>
    tt.store %cpp, %c, %mask : tensor<32x32x!tt.ptr<f32>, #blocked>
    tt.return
  }}
"""
    return module(body, {"blocked": B2})


def _abc_pointers(name: str) -> str:
    """The head of a 32x32 f32 kernel `name(a, b, c, m, n)`: its signature and the masked
    row-major pointer tiles %app, %bpp, %cpp of a, b and c."""
    return f"""  tt.func public @{name}(%a_ptr: !tt.ptr<f32> {{tt.divisibility = 16 : i32}}, %b_ptr: !tt.ptr<f32> {{tt.divisibility = 16 : i32}}, %c_ptr: !tt.ptr<f32> {{tt.divisibility = 16 : i32}}, %m: i32, %n: i32 {{tt.divisibility = 16 : i32}}) {{
{_offsets_2d("blocked", 32, 32, "%n")}
    %ap = tt.splat %a_ptr : !tt.ptr<f32> -> tensor<32x32x!tt.ptr<f32>, #blocked>
    %app = tt.addptr %ap, %off : tensor<32x32x!tt.ptr<f32>, #blocked>, tensor<32x32xi32, #blocked>
    %bp = tt.splat %b_ptr : !tt.ptr<f32> -> tensor<32x32x!tt.ptr<f32>, #blocked>
    %bpp = tt.addptr %bp, %off : tensor<32x32x!tt.ptr<f32>, #blocked>, tensor<32x32xi32, #blocked>
    %cp = tt.splat %c_ptr : !tt.ptr<f32> -> tensor<32x32x!tt.ptr<f32>, #blocked>
    %cpp = tt.addptr %cp, %off : tensor<32x32x!tt.ptr<f32>, #blocked>, tensor<32x32xi32, #blocked>
"""


def dot_shared() -> str:
    """c = a @ b + c0 through shared buffers (local_alloc / local_load into dot operands), in a
    2-iteration scf.for that adds the product twice: c = c0 + 2 (a @ b)."""
    A = "#ttg.dot_op<{opIdx = 0, parent = #blocked}>"
    Bo = "#ttg.dot_op<{opIdx = 1, parent = #blocked}>"
    T = "tensor<32x32xf32, #blocked>"
    M = "!ttg.memdesc<32x32xf32, #shared, #smem>"
    body = _abc_pointers("dot_shared") + f"""    %c0 = tt.load %cpp, %mask : tensor<32x32x!tt.ptr<f32>, #blocked>
    %lo = arith.constant 0 : i32
    %hi = arith.constant 2 : i32
    %one = arith.constant 1 : i32
    %acc = scf.for %i = %lo to %hi step %one iter_args(%c = %c0) -> ({T}) : i32 {{
      %a = tt.load %app, %mask : tensor<32x32x!tt.ptr<f32>, #blocked>
      %b = tt.load %bpp, %mask : tensor<32x32x!tt.ptr<f32>, #blocked>
      %as = ttg.local_alloc %a : ({T}) -> {M}
      %bs = ttg.local_alloc %b : ({T}) -> {M}
      %ad = ttg.local_load %as : {M} -> tensor<32x32xf32, {A}>
      %bd = ttg.local_load %bs : {M} -> tensor<32x32xf32, {Bo}>
      %d = tt.dot %ad, %bd, %c, inputPrecision = ieee : tensor<32x32xf32, {A}> * tensor<32x32xf32, {Bo}> -> {T}
      scf.yield %d : {T}
    }}
    tt.store %cpp, %acc, %mask : tensor<32x32x!tt.ptr<f32>, #blocked>
    tt.return
  }}
"""
    shared = "#ttg.swizzled_shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [1, 0]}>"
    return module(body, {"blocked": B2, "shared": shared, "smem": "#ttg.shared_memory"})


def dot_shared_trans() -> str:
    """c = a @ b^T: b's buffer is written as loaded and read transposed through a
    `ttg.memdesc_trans` view (its swizzled layout's order renamed), no data moved."""
    A = "#ttg.dot_op<{opIdx = 0, parent = #blocked}>"
    Bo = "#ttg.dot_op<{opIdx = 1, parent = #blocked}>"
    T = "tensor<32x32xf32, #blocked>"
    M = "!ttg.memdesc<32x32xf32, #shared, #smem>"
    MT = "!ttg.memdesc<32x32xf32, #shared1, #smem>"
    body = _abc_pointers("dot_shared_trans") + f"""    %c0 = arith.constant dense<0.000000e+00> : {T}
    %a = tt.load %app, %mask : tensor<32x32x!tt.ptr<f32>, #blocked>
    %b = tt.load %bpp, %mask : tensor<32x32x!tt.ptr<f32>, #blocked>
    %as = ttg.local_alloc %a : ({T}) -> {M}
    %bs = ttg.local_alloc %b : ({T}) -> {M}
    %bt = ttg.memdesc_trans %bs {{order = array<i32: 1, 0>}} : {M} -> {MT}
    %ad = ttg.local_load %as : {M} -> tensor<32x32xf32, {A}>
    %bd = ttg.local_load %bt : {MT} -> tensor<32x32xf32, {Bo}>
    %d = tt.dot %ad, %bd, %c0, inputPrecision = ieee : tensor<32x32xf32, {A}> * tensor<32x32xf32, {Bo}> -> {T}
    tt.store %cpp, %d, %mask : tensor<32x32x!tt.ptr<f32>, #blocked>
    tt.return
  }}
"""
    shared = "#ttg.swizzled_shared<{vec = 4, perPhase = 1, maxPhase = 8, order = [1, 0]}>"
    shared_t = "#ttg.swizzled_shared<{vec = 4, perPhase = 1, maxPhase = 8, order = [0, 1]}>"
    return module(body, {"blocked": B2, "shared": shared, "shared1": shared_t,
                         "smem": "#ttg.shared_memory"})


def argmax_trans_scan() -> str:
    """For a 32x64 tile x (masked to m x n, stride n, other -inf): out_t = x transposed (64x32,
    stride 32, through tt.trans), idx[i] = argmax_j x[i, j] (first index on ties; a two-operand
    reduce), rs = reverse cumulative sum of x along dim 1 (masked elements as 0, stride 64)."""
    m, n = 32, 64
    T = f"tensor<{m}x{n}xf32, #blocked>"
    TI = f"tensor<{m}x{n}xi32, #blocked>"
    S1 = "#ttg.slice<{dim = 1, parent = #blocked}>"
    body = f"""  tt.func public @argmax_trans_scan(%x_ptr: !tt.ptr<f32> {{tt.divisibility = 16 : i32}}, %t_ptr: !tt.ptr<f32> {{tt.divisibility = 16 : i32}}, %i_ptr: !tt.ptr<i32> {{tt.divisibility = 16 : i32}}, %s_ptr: !tt.ptr<f32> {{tt.divisibility = 16 : i32}}, %m: i32, %n: i32 {{tt.divisibility = 16 : i32}}) {{
{_offsets_2d("blocked", m, n, "%n")}
    %ninf = arith.constant dense<0xFF800000> : {T}
    %p = tt.splat %x_ptr : !tt.ptr<f32> -> tensor<{m}x{n}x!tt.ptr<f32>, #blocked>
    %pp = tt.addptr %p, %off : tensor<{m}x{n}x!tt.ptr<f32>, #blocked>, {TI}
    %x = tt.load %pp, %mask, %ninf : tensor<{m}x{n}x!tt.ptr<f32>, #blocked>
    %xt = tt.trans %x {{order = array<i32: 1, 0>}} : {T} -> tensor<{n}x{m}xf32, #blocked1>
    %c32 = arith.constant 32 : i32
{_offsets_2d("blocked1", n, m, "%c32", prefix="t_", rows_arg="%n", cols_arg="%m")}
    %tp = tt.splat %t_ptr : !tt.ptr<f32> -> tensor<{n}x{m}x!tt.ptr<f32>, #blocked1>
    %tpp = tt.addptr %tp, %t_off : tensor<{n}x{m}x!tt.ptr<f32>, #blocked1>, tensor<{n}x{m}xi32, #blocked1>
    tt.store %tpp, %xt, %t_mask : tensor<{n}x{m}x!tt.ptr<f32>, #blocked1>
    %ci = tt.broadcast %c2 : tensor<1x{n}xi32, #blocked> -> {TI}
    %best:2 = "tt.reduce"(%x, %ci) <{{axis = 1 : i32}}> ({{
    ^bb0(%v1: f32, %i1: i32, %v2: f32, %i2: i32):
      %gt = arith.cmpf ogt, %v1, %v2 : f32
      %eq = arith.cmpf oeq, %v1, %v2 : f32
      %lt = arith.cmpi slt, %i1, %i2 : i32
      %tie = arith.andi %eq, %lt : i1
      %take = arith.ori %gt, %tie : i1
      %v = arith.select %take, %v1, %v2 : f32
      %i = arith.select %take, %i1, %i2 : i32
      tt.reduce.return %v, %i : f32, i32
    }}) : ({T}, {TI}) -> (tensor<{m}xf32, {S1}>, tensor<{m}xi32, {S1}>)
    %ip = tt.splat %i_ptr : !tt.ptr<i32> -> tensor<{m}x!tt.ptr<i32>, {S1}>
    %ipp = tt.addptr %ip, %rows : tensor<{m}x!tt.ptr<i32>, {S1}>, tensor<{m}xi32, {S1}>
    tt.store %ipp, %best#1 : tensor<{m}x!tt.ptr<i32>, {S1}>
    %zero = arith.constant dense<0.000000e+00> : {T}
    %xz = arith.select %mask, %x, %zero : tensor<{m}x{n}xi1, #blocked>, {T}
    %rs = "tt.scan"(%xz) <{{axis = 1 : i32, reverse = true}}> ({{
    ^bb0(%a: f32, %b: f32):
      %sum = arith.addf %a, %b : f32
      tt.scan.return %sum : f32
    }}) : ({T}) -> {T}
    %c64 = arith.constant 64 : i32
{_offsets_2d("blocked", m, n, "%c64", prefix="s_")}
    %sp = tt.splat %s_ptr : !tt.ptr<f32> -> tensor<{m}x{n}x!tt.ptr<f32>, #blocked>
    %spp = tt.addptr %sp, %s_off : tensor<{m}x{n}x!tt.ptr<f32>, #blocked>, {TI}
    tt.store %spp, %rs : tensor<{m}x{n}x!tt.ptr<f32>, #blocked>
    tt.return
  }}
"""
    return module(body, {"blocked": B2, "blocked1": B2T})


def while_print_assert() -> str:
    """out[pid] = number of doublings of 1 until >= x (scf.while), with a device print of the
    result and an assert that x > 0."""
    body = """  tt.func public @while_loop(%x_ptr: !tt.ptr<i32>, %out_ptr: !tt.ptr<i32>) {
    %pid = tt.get_program_id x : i32
    %xp = tt.addptr %x_ptr, %pid : !tt.ptr<i32>, i32
    %x = tt.load %xp : !tt.ptr<i32>
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %pos = arith.cmpi sgt, %x, %c0 : i32
    "tt.assert"(%pos) <{message = "x must be positive"}> : (i1) -> ()
    %r:2 = "scf.while"(%c1, %c0) ({
    ^bb0(%v: i32, %k: i32):
      %lt = arith.cmpi slt, %v, %x : i32
      "scf.condition"(%lt, %v, %k) : (i1, i32, i32) -> ()
    }, {
    ^bb0(%v2: i32, %k2: i32):
      %v3 = arith.addi %v2, %v2 : i32
      %k3 = arith.addi %k2, %c1 : i32
      "scf.yield"(%v3, %k3) : (i32, i32) -> ()
    }) : (i32, i32) -> (i32, i32)
    "tt.print"(%r#1) <{hex = false, isSigned = array<i32: 1>, prefix = " k: "}> : (i32) -> ()
    %op = tt.addptr %out_ptr, %pid : !tt.ptr<i32>, i32
    tt.store %op, %r#1 : !tt.ptr<i32>
    tt.return
  }
"""
    return module(body, {}, warps=1)


KERNELS = {
    "reduce_axis0": lambda: reduce_2d(0),
    "reduce_axis1": lambda: reduce_2d(1),
    "reduce_max_axis1": lambda: reduce_2d(1, "arith.maxnumf"),
    "reduce_int_axis0": lambda: reduce_2d(0, "arith.addi", "i32"),
    "convert": transpose_convert,
    "int_ops": int_ops,
    "half_types": half_types,
    "loop_if": loop_if,
    "scan": scan_1d,
    "atomics": atomics,
    "lock_release": lock_release,
    "dot": dot_fma,
    "dot_shared": dot_shared,
    "dot_shared_trans": dot_shared_trans,
    "argmax_trans_scan": argmax_trans_scan,
    "while_print_assert": while_print_assert,
}


def compile_ttgir(ttgir, build_cubin: bool = True, **options):
    """A ttgir kernel (text or parsed module) through the compile driver, from the llir stage
    on: the `CompiledKernel` (`.asm["ptx"]`, `.metadata`, `.trace.cubin_info`, ...)."""
    from compiler.compiler import compile as compile_source
    from compiler.ir.core import Module
    from compiler.ir.parser import parse_module
    module = ttgir if isinstance(ttgir, Module) else parse_module(ttgir)
    return compile_source(module, {"build_cubin": build_cubin, "build_sass": False,
                                   "snapshots": False, **options})
