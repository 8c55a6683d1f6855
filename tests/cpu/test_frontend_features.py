"""Front-end features, each checked FileCheck-style against the printed ttir: control flow
(scf.if / scf.for / scf.while, constexpr branches, static_range unrolling), @jit calls (tt.call),
indexing, reductions, scans, atomics, printing, hints, Python builtins, locations and
`referenced_globals`; plus the print -> parse -> print property over every module made here."""
from __future__ import annotations

import itertools

import pytest

import compiler.language as tl
from compiler.frontend import CompilationError, generate_ttir, referenced_globals
from compiler.ir import parse_module, print_module
from compiler.ir.verifier import verify_module
from tests.cpu.filecheck import filecheck


class _Jit:
    def __init__(self, fn):
        self.fn = fn


def jit(fn):
    return _Jit(fn)


GENERATED: list = []


def compile_text(kernel, signature, constexprs=None, attrs=None) -> str:
    module = generate_ttir(kernel, signature, constexprs or {}, attrs)
    GENERATED.append(module)
    return print_module(module)


SCALE = tl.constexpr(4)
OFFSET: tl.constexpr = 3   # a compile-time global, as Triton requires


@jit
def add_mul(x, y, MODE: tl.constexpr):
    if MODE == 0:
        return x + y * SCALE
    return x * y, x - y


# ---- control flow -----------------------------------------------------------------------------
@jit
def k_if(X, n):
    pid = tl.program_id(0)
    v = n
    if pid > 2:
        v = n * 2
        w = 1.5
    else:
        w = 2.5
    tl.store(X + pid, v + w)


def test_runtime_if_yields_values_assigned_in_both_branches():
    text = compile_text(k_if, {"X": "*fp32", "n": "i32"})
    filecheck(text, """
        CHECK: arith.cmpi sgt, %pid
        CHECK-NEXT: [[R:%[0-9a-z_]+]]:2 = scf.if {{%[0-9a-z_]+}} -> (i32, f32) {
        CHECK: arith.muli %n,
        CHECK: arith.constant 1.500000e+00 : f32
        CHECK-NEXT: scf.yield {{.*}} : i32, f32
        CHECK-NEXT: } else {
        CHECK-NEXT: arith.constant 2.500000e+00 : f32
        CHECK-NEXT: scf.yield %n, {{.*}} : i32, f32
        CHECK: arith.sitofp [[R]]#0 : i32 to f32
        CHECK-NEXT: arith.addf {{.*}}, [[R]]#1 : f32
    """)


@jit
def k_constexpr_if(X, n, FLAG: tl.constexpr):
    if FLAG and n is not None:
        y = n + 1
    else:
        y = n - 1
    tl.store(X, y)


def test_constexpr_if_is_resolved_at_compile_time():
    on = compile_text(k_constexpr_if, {"X": "*i32", "n": "i32"}, {"FLAG": True})
    off = compile_text(k_constexpr_if, {"X": "*i32", "n": "i32"}, {"FLAG": False})
    filecheck(on, "CHECK-NOT: scf.if\nCHECK: arith.addi %n\nCHECK-NOT: arith.subi")
    filecheck(off, "CHECK-NOT: scf.if\nCHECK: arith.subi %n\nCHECK-NOT: arith.addi")


@jit
def k_for(X, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    total = 0
    for i in tl.range(0, n, 2, num_stages=3):
        x = tl.load(X + i * BLOCK + offs)
        acc += x
        total += i
    tl.store(X + offs, acc + total)


def test_for_loop_carries_reassigned_variables():
    text = compile_text(k_for, {"X": "*fp32", "n": "i32"}, {"BLOCK": 32})
    filecheck(text, """
        CHECK: %acc = arith.constant dense<0.000000e+00> : tensor<32xf32>
        CHECK: scf.for %i = {{.*}} iter_args(%acc_{{[0-9]+}} = %acc, %total{{.*}} = %c0_i32) -> (tensor<32xf32>, i32) {tt.num_stages = 3 : i32} : i32 {
        CHECK: tt.load
        CHECK: arith.addf
        CHECK: arith.addi {{.*}}, %i : i32
        CHECK: scf.yield {{.*}} : tensor<32xf32>, i32
        CHECK-NOT: scf.for
        CHECK: tt.store
    """)


@jit
def k_static_range(X, STEPS: tl.constexpr):
    acc = tl.load(X)
    for i in tl.static_range(1, STEPS + 1):
        acc = acc * i
    tl.store(X, acc)


def test_static_range_unrolls():
    text = compile_text(k_static_range, {"X": "*i32"}, {"STEPS": 3})
    filecheck(text, """
        CHECK-NOT: scf.for
        CHECK: arith.constant 1 : i32
        CHECK-NEXT: arith.muli
        CHECK: arith.constant 2 : i32
        CHECK-NEXT: arith.muli
        CHECK: arith.constant 3 : i32
        CHECK-NEXT: arith.muli
        CHECK-NOT: arith.muli
    """)


@jit
def k_while(X, n):
    i = 0
    s = 1
    while i < n and s < 1000:
        s = s * 2
        i += 1
    tl.store(X, s + i)


def test_while_loop():
    text = compile_text(k_while, {"X": "*i32", "n": "i32"})
    filecheck(text, """
        CHECK: "scf.while"(%c0_i32, %c1_i32) ({
        CHECK-NEXT: ^bb0(%i{{.*}}: i32 {{.*}}, %s{{.*}}: i32
        CHECK: arith.cmpi slt
        CHECK: arith.cmpi slt
        CHECK: arith.andi
        CHECK-NEXT: scf.condition
        CHECK: }, {
        CHECK: arith.muli
        CHECK: arith.addi
        CHECK: scf.yield
        CHECK: }) : (i32, i32) -> (i32, i32)
    """)


# ---- calls --------------------------------------------------------------------------------------
@jit
def k_calls(X, Y, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    y = tl.load(Y + offs)
    a = add_mul(x, y, 0)
    p, q = add_mul(x, y, 1)
    b = add_mul(x, y, MODE=0)
    tl.store(X + offs, a + p + q + b)


def test_jit_calls_become_tt_call_to_private_specializations():
    text = compile_text(k_calls, {"X": "*fp32", "Y": "*fp32"}, {"BLOCK": 16})
    filecheck(text, """
        CHECK: tt.func public @k_calls
        CHECK: %a = tt.call @[[F0:add_mul__[A-Za-z0-9_]+c0]](%x{{.*}}, %y{{.*}}) : (tensor<16xf32>, tensor<16xf32>) -> (tensor<16xf32>)
        CHECK: [[P:%[0-9]+]]:2 = tt.call @[[F1:add_mul__[A-Za-z0-9_]+c1]](
        CHECK-SAME: -> (tensor<16xf32>, tensor<16xf32>)
        CHECK: %b = tt.call @[[F0]](
        CHECK: arith.addf %a, [[P]]#0
        CHECK: tt.func private @[[F0]](%x{{[_0-9]*}}: tensor<16xf32>
        CHECK: arith.constant dense<4.000000e+00>
        CHECK: tt.return {{.*}} : tensor<16xf32>
        CHECK: tt.func private @[[F1]](
        CHECK: tt.return {{.*}}, {{.*}} : tensor<16xf32>, tensor<16xf32>
    """)
    assert text.count("tt.func private") == 2


# ---- shapes, reductions, scans, atomics, printing, hints ------------------------------------------
@jit
def k_shapes(X, Z, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    ptrs = X + rm[:, None] * N + rn[None, :]
    x = tl.load(ptrs)
    s0 = tl.sum(x, axis=0)
    m1 = tl.max(x, axis=1, keep_dims=True)
    i1 = tl.argmax(x, 1)
    c = tl.cumsum(rn, 0)
    t = tl.trans(x)
    r = tl.reshape(t, (M * N,))
    tl.store(Z + rn, s0 + c)
    tl.store(ptrs, x - m1 + i1[:, None])
    tl.store(Z + tl.arange(0, M * N), r)


def test_indexing_reductions_and_scans():
    text = compile_text(k_shapes, {"X": "*fp32", "Z": "*fp32"}, {"M": 8, "N": 16})
    filecheck(text, """
        CHECK: tt.expand_dims %rm {axis = 1 : i32} : tensor<8xi32> -> tensor<8x1xi32>
        CHECK: tt.expand_dims %rn {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
        CHECK: %s0 = "tt.reduce"({{.*}}) <{axis = 0 : i32}>
        CHECK: arith.addf
        CHECK: }) : (tensor<8x16xf32>) -> tensor<16xf32>
        CHECK: %m1 = "tt.reduce"
        CHECK: arith.maxnumf
        CHECK: }) : (tensor<8x16xf32>) -> tensor<8xf32>
        CHECK-NEXT: tt.expand_dims {{.*}} {axis = 1 : i32} : tensor<8xf32> -> tensor<8x1xf32>
        CHECK: %i1 = tt.make_range {end = 16 : i32, start = 0 : i32}
        CHECK: tt.broadcast {{.*}} -> tensor<8x16xi32>
        CHECK: "tt.reduce"({{.*}}, {{.*}}) <{axis = 1 : i32}> ({
        CHECK-NEXT: ^bb0({{.*}}: f32 {{.*}}, {{.*}}: i32 {{.*}}, {{.*}}: f32 {{.*}}, {{.*}}: i32
        CHECK: arith.cmpf ogt
        CHECK: arith.select
        CHECK: arith.select
        CHECK: }) : (tensor<8x16xf32>, tensor<8x16xi32>) -> (tensor<8xf32>, tensor<8xi32>)
        CHECK: %c = "tt.scan"(%rn) <{axis = 0 : i32, reverse = false}>
        CHECK: tt.scan.return
        CHECK: %t = tt.trans %x{{.*}} {order = array<i32: 1, 0>} : tensor<8x16xf32> -> tensor<16x8xf32>
        CHECK: %r = tt.reshape %t : tensor<16x8xf32> -> tensor<128xf32>
    """)


@jit
def k_atomics(X, C, V, n):
    offs = tl.arange(0, 16)
    m = offs < n
    a = tl.atomic_add(X + offs, 1.0, mask=m)
    b = tl.atomic_add(C + offs, 1, mask=m, sem="relaxed")
    c = tl.atomic_max(C + offs, offs)
    d = tl.atomic_cas(C, 0, 1)
    tl.device_print("vals ", a, b)
    v = tl.multiple_of(n * 16, 16)
    w = tl.max_contiguous(tl.multiple_of(offs, [16]), [16])
    tl.store(V + w, c + d + v)


def test_atomics_print_and_hints():
    text = compile_text(k_atomics, {"X": "*fp32", "C": "*i32", "V": "*i32", "n": "i32"})
    filecheck(text, """
        CHECK: %offs = tt.make_range {end = 16 : i32, start = 0 : i32, tt.contiguity = array<i32: 16>, tt.divisibility = array<i32: 16>}
        CHECK: %a_{{[0-9]+}} = "tt.atomic_rmw"({{.*}}) <{atomic_rmw_op = "fadd", scope = "gpu", sem = "acq_rel"}> : (tensor<16x!tt.ptr<f32>>, tensor<16xf32>, tensor<16xi1>) -> tensor<16xf32>
        CHECK: "tt.atomic_rmw"({{.*}}) <{atomic_rmw_op = "add", scope = "gpu", sem = "relaxed"}>
        CHECK: "tt.atomic_rmw"({{.*}}) <{atomic_rmw_op = "max", scope = "gpu", sem = "acq_rel"}>
        CHECK: "tt.atomic_cas"({{.*}}) <{scope = "gpu", sem = "acq_rel"}> : (!tt.ptr<i32>, i32, i32) -> i32
        CHECK: "tt.print"({{.*}}) <{hex = false, isSigned = array<i32: 0, 1>, prefix = "vals "}>
        CHECK: arith.muli %n, {{.*}} {tt.divisibility = array<i32: 16>} : i32
    """)


# ---- types, builtins, expressions ------------------------------------------------------------------
@jit
def k_types(X, Y, n, m):
    x = tl.load(X)
    y = x.to(Y.dtype.element_ty)
    same = tl.full((4,), 7, dtype=Y.dtype.element_ty)
    lo = min(n, m, OFFSET)
    hi = max(n, 2)
    a = abs(n - m)
    ok = (n < m < 10) or not (n == m)
    shape_sum = x.shape[0] if False else tl.arange(0, 4).shape[0]
    tl.store(Y + tl.arange(0, 4), same + y + lo + hi + a + ok + shape_sum)


def test_types_dtype_attributes_and_python_builtins():
    text = compile_text(k_types, {"X": "*fp32", "Y": "*fp16", "n": "i32", "m": "i32"})
    filecheck(text, """
        CHECK: %y = arith.truncf %x : f32 to f16
        CHECK: %same = arith.constant dense<7.000000e+00> : tensor<4xf16>
        CHECK: %lo = arith.minsi %n, %m : i32
        CHECK: arith.minsi %lo, {{.*}} : i32
        CHECK: %hi{{.*}} = arith.maxsi %n, {{.*}} : i32
        CHECK: %a{{.*}} = math.absi
        CHECK: %ok = arith.cmpi slt, %n, %m : i32
        CHECK: arith.cmpi slt, %m,
        CHECK: arith.andi
        CHECK: arith.cmpi eq, %n, %m : i32
        CHECK: arith.xori
        CHECK: arith.ori
    """)


def test_specialized_ones_and_divisibility_are_not_arguments():
    text = compile_text(k_if, {"X": "*fp32"}, {"n": 1}, {"divisibility_16": ["X"]})
    filecheck(text, """
        CHECK: tt.func public @k_if(%X: !tt.ptr<f32> {tt.divisibility = 16 : i32} loc({{.*}})) attributes {noinline = false}
        CHECK-NOT: %n
    """)


def test_locations_name_values_and_use_real_lines():
    import inspect
    text = compile_text(k_if, {"X": "*fp32", "n": "i32"})
    _, first = inspect.getsourcelines(k_if.fn)
    file = inspect.getsourcefile(k_if.fn)
    pid_line = first + 2  # `pid = tl.program_id(0)`
    filecheck(text, f"""
        CHECK: %pid = tt.get_program_id x : i32 loc([[L:#loc[0-9]+]])
        CHECK: #loc = loc("{file}":{first + 1}:0)
        CHECK: [[P:#loc[0-9]+]] = loc("{file}":{pid_line}:10)
        CHECK-NEXT: [[L]] = loc("pid"([[P]]))
    """)


def test_referenced_globals_summarizes_constants_and_callees(monkeypatch):
    refs = referenced_globals(k_calls)
    assert refs["tl"] == ("module", "compiler.language")
    assert refs["add_mul"][0] == "jit"
    inner = dict(refs["add_mul"][3])
    assert inner["SCALE"] == ("constexpr", 4)
    before = referenced_globals(k_types)["OFFSET"]
    monkeypatch.setitem(k_types.fn.__globals__, "OFFSET", 5)
    assert referenced_globals(k_types)["OFFSET"] != before


# ---- promotion property: many generated modules round-trip ----------------------------------------
@jit
def k_binop(A, B, C, OP: tl.constexpr):
    offs = tl.arange(0, 8)
    a = tl.load(A + offs)
    b = tl.load(B + offs)
    if OP == "add":
        c = a + b
    elif OP == "mul":
        c = a * b
    elif OP == "div":
        c = a / b
    elif OP == "max":
        c = tl.maximum(a, b)
    elif OP == "where":
        c = tl.where(a < b, a, b)
    else:
        c = a - b * 2
    tl.store(C + offs, c)


DTYPES = ["*i8", "*i32", "*i64", "*u32", "*fp16", "*bf16", "*fp32"]
OPS = ["add", "mul", "div", "max", "where", "sub"]


@pytest.mark.parametrize("op", OPS)
def test_binop_modules_verify_for_every_dtype_pair(op):
    compile_binop_grid(op)


def compile_binop_grid(op):
    """k_binop for every pair of DTYPES (mixed-signedness integer `/` must be rejected)."""
    for a, b in itertools.product(DTYPES, repeat=2):
        signature = {"A": a, "B": b, "C": "*fp32"}
        if op == "div" and {a, b} == {"*u32", a if a != "*u32" else b} and \
                {a, b} & {"*i8", "*i32", "*i64"}:
            # Triton rejects / between integers of different signedness.
            with pytest.raises(CompilationError, match="because they have different signedness"):
                generate_ttir(k_binop, signature, {"OP": op})
            continue
        compile_text(k_binop, signature, {"OP": op})


def test_print_parse_print_is_identical_for_every_generated_module():
    if len(GENERATED) < 50:  # running this test alone
        for op in OPS:
            compile_binop_grid(op)
    for module in GENERATED:
        text = print_module(module)
        again = parse_module(text)
        verify_module(again)
        assert print_module(again) == text


@jit
def k_ifexp_fstring(X, B: tl.constexpr):
    tl.static_assert(B > 0, f"B={B:04d} {B!r}")
    tl.device_print(f"blk {B}", tl.load(X))
    y = tl.load(X) if B > 2 else 0
    z = tl.load(X + 1) + 1 if tl.program_id(0) > 0 else 2.5
    tl.store(X, y + z)


def test_runtime_conditional_expression_runs_only_the_chosen_side():
    text = compile_text(k_ifexp_fstring, {"X": "*i32"}, {"B": 4})
    filecheck(text, """
        CHECK: "tt.print"({{.*}}) <{{.*}}prefix = "blk 4"}>
        CHECK: %y = tt.load %X
        CHECK: %z{{.*}} = arith.cmpi sgt
        CHECK-NEXT: [[Z:%z_[0-9]+]] = scf.if {{.*}} -> (f32) {
        CHECK: tt.load
        CHECK: arith.addi
        CHECK-NEXT: arith.sitofp
        CHECK-NEXT: scf.yield {{.*}} : f32
        CHECK-NEXT: } else {
        CHECK-NEXT: arith.constant 2.500000e+00 : f32
        CHECK-NEXT: scf.yield
        CHECK: arith.addf {{.*}}, [[Z]] : f32
    """)
    with pytest.raises(CompilationError, match="static_assert failed: B=0000 0"):
        generate_ttir(k_ifexp_fstring, {"X": "*i32"}, {"B": 0})


@jit
def k_surface(X, U, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    u = tl.load(U + offs)
    grid = tl.num_programs(1)
    two = tl.expand_dims(x, (0, 2))
    wide = tl.broadcast_to(x[None, :], 4, BLOCK)
    flat = tl.ravel(wide)
    back = tl.view(flat, (BLOCK, 4))
    e = tl.math.exp2(tl.math.log2(x)) + tl.fma(x, x, 1.0) + tl.sigmoid(x) + tl.softmax(x)
    s = tl.sin(x) + tl.cos(x) + tl.rsqrt(x) + tl.log(x) + tl.clamp(x, 0.0, 1.0)
    j = tl.argmin(x, axis=0)
    q = u // 3 + (u >> 1) + u % 2
    tl.store(X + offs, e + s + j + grid + tl.sum(back, axis=1).sum() + tl.sum(two, axis=2).sum())
    tl.store(U + offs, q)


def test_language_surface():
    text = compile_text(k_surface, {"X": "*fp32", "U": "*u32", "n": "i32"}, {"BLOCK": 32})
    filecheck(text, """
        CHECK: %grid = tt.get_num_programs y : i32
        CHECK: %two = tt.expand_dims %x{{.*}} {axis = 0 : i32} : tensor<32xf32> -> tensor<1x32xf32>
        CHECK-NEXT: tt.expand_dims {{.*}} {axis = 2 : i32} : tensor<1x32xf32> -> tensor<1x32x1xf32>
        CHECK: tt.broadcast {{.*}} : tensor<1x32xf32> -> tensor<4x32xf32>
        CHECK: %flat = tt.reshape {{.*}} : tensor<4x32xf32> -> tensor<128xf32>
        CHECK: %back = tt.reshape %flat : tensor<128xf32> -> tensor<32x4xf32>
        CHECK: math.log2
        CHECK-NEXT: math.exp2
        CHECK: math.fma
        CHECK: arith.negf
        CHECK-NEXT: math.exp
        CHECK: arith.maxnumf
        CHECK: math.sin
        CHECK: math.cos
        CHECK: math.rsqrt
        CHECK: math.log
        CHECK: arith.maxnumf
        CHECK: arith.minnumf
        CHECK: arith.cmpf olt
        CHECK: %q = arith.constant dense<3> : tensor<32xi32>
        CHECK-NEXT: arith.divui
        CHECK: arith.shrui
        CHECK: arith.remui
    """)


@jit
def k_negative_step(X, n):
    acc = 0
    for i in range(n, 0, -2):
        acc += i
    tl.store(X, acc)


def test_negative_constant_step_counts_down():
    text = compile_text(k_negative_step, {"X": "*i32", "n": "i32"})
    filecheck(text, """
        CHECK: [[STEP:%c2_i32[_0-9]*]] = arith.constant 2 : i32
        CHECK: scf.for [[IV:%i[_0-9]*]] = %c0_i32{{[_0-9]*}} to %n step [[STEP]] iter_args
        CHECK-NEXT: [[D:%i[_0-9]*]] = arith.subi %n, [[IV]] : i32
        CHECK-NEXT: %i{{[_0-9]*}} = arith.addi [[D]], %c0_i32{{[_0-9]*}} : i32
    """)
