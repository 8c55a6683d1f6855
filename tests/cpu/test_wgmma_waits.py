"""Where a pipelined loop waits for its asynchronous warp-group dots
(compiler/passes/wgmma_waits.py), IR in / IR out: a result read at once is waited for at once;
an accumulator chain keeps one group in flight (and no wait after a wait that already
guarantees it); a carried accumulator that ordinary ops read in
the next iteration is waited for there, in the wait already ahead of its reader or in a new
one; loops with a dot under an scf.if are left alone."""
from __future__ import annotations

import textwrap

import compiler.dialects  # noqa: F401
from compiler.dialects.scf import ForOp
from compiler.dialects.ttng import WarpGroupDotOp, WarpGroupDotWaitOp
from compiler.ir import parse_module, print_module
from compiler.ir.verifier import verify_module
from compiler.passes.wgmma_waits import relax_dot_waits
from tests.cpu.filecheck import filecheck

MEM = "!ttg.memdesc<64x64xf16, #shared, #smem>"
ACC = "tensor<64x64xf32, #mma>"
DOT = f"{{isAsync = false}} : {MEM} * {MEM} -> {ACC}"
#: a dot whose result ordinary ops read at once (attention's q.k^T), as accelerate-matmul
#: leaves it: %sw
SCORES = f"""
        %s = ttng.warp_group_dot %a, %b, %zero {DOT}
        %sw = ttng.warp_group_dot_wait %s {{pendings = 0 : i32}} : {ACC}"""


def _relax(body: str):
    """Parse a kernel whose loop carries %acc (starting at zero) with `body`, relax its waits;
    returns (printed module, the op the refill may follow, or None)."""
    text = textwrap.dedent(f"""
    #mma = #ttg.nvidia_mma<{{versionMajor = 3, versionMinor = 0, warpsPerCTA = [4, 1], instrShape = [16, 64, 16]}}>
    #shared = #ttg.nvmma_shared<{{swizzlingByteWidth = 128, transposed = false, elementBitWidth = 16}}>
    #smem = #ttg.shared_memory
    module attributes {{"ttg.num-ctas" = 1 : i32, "ttg.num-warps" = 4 : i32, "ttg.threads-per-warp" = 32 : i32}} {{
      tt.func public @k(%a: {MEM}, %b: {MEM}, %n: i32, %flag: i1) {{
        %c0 = arith.constant 0 : i32
        %c1 = arith.constant 1 : i32
        %zero = arith.constant dense<0.000000e+00> : {ACC}
        %half = arith.constant dense<5.000000e-01> : {ACC}
        %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> ({ACC}) : i32 {{
    {textwrap.indent(textwrap.dedent(body).strip(), "      ")}
        }}
        tt.return
      }}
    }}
    """)
    module = parse_module(text)
    loop = next(op for op in module.walk() if isinstance(op, ForOp))
    released = relax_dot_waits(loop.body)
    verify_module(module)
    return print_module(module), released


def test_a_result_read_at_once_is_waited_for_at_once():
    text, released = _relax(f"""
        %d = ttng.warp_group_dot %a, %b, %zero {DOT}
        %w = ttng.warp_group_dot_wait %d {{pendings = 0 : i32}} : {ACC}
        %s = arith.mulf %w, %half : {ACC}
        %t = arith.addf %acc, %s : {ACC}
        scf.yield %t : {ACC}
    """)
    filecheck(text, """
        CHECK: ttng.warp_group_dot {{.*}} {isAsync = true}
        CHECK-NEXT: ttng.warp_group_dot_wait %d {pendings = 0 : i32}
        CHECK-NEXT: arith.mulf
    """)
    assert isinstance(released, WarpGroupDotWaitOp)


def test_an_accumulator_chain_keeps_its_group_in_flight():
    """A matmul K loop: only the next iteration's dot reads the accumulator."""
    text, _ = _relax(f"""
        %d = ttng.warp_group_dot %a, %b, %acc {DOT}
        %w = ttng.warp_group_dot_wait %d {{pendings = 0 : i32}} : {ACC}
        scf.yield %w : {ACC}
    """)
    filecheck(text, """
        CHECK: ttng.warp_group_dot %a, %b, %acc {isAsync = true}
        CHECK-NEXT: ttng.warp_group_dot_wait %d {pendings = 1 : i32}
        CHECK-NEXT: scf.yield
    """)


def test_an_accumulator_chain_after_a_complete_wait_loses_its_wait():
    """Tutorial 06's dV step: the wait of the dot read at once (pendings 0) leaves only the
    chain's own group in flight, so its pendings-1 wait would wait for nothing."""
    text, released = _relax(SCORES + f"""
        %x = arith.mulf %sw, %half : {ACC}
        %d = ttng.warp_group_dot %a, %b, %acc {DOT}
        %w = ttng.warp_group_dot_wait %d {{pendings = 0 : i32}} : {ACC}
        scf.yield %w : {ACC}
    """)
    filecheck(text, """
        CHECK: ttng.warp_group_dot_wait %s {pendings = 0 : i32}
        CHECK-NEXT: arith.mulf
        CHECK-NEXT: %d = ttng.warp_group_dot %a, %b, %acc {isAsync = true}
        CHECK-NEXT: scf.yield %d
    """)
    assert text.count("warp_group_dot_wait") == 1
    assert isinstance(released, WarpGroupDotOp)


def test_a_rescaled_accumulator_joins_the_wait_ahead_of_its_reader():
    """Attention's shape: s = q.k^T read by the softmax, then acc * scale feeds p.v."""
    text, released = _relax(SCORES + f"""
        %scaled = arith.mulf %acc, %sw : {ACC}
        %p = ttng.warp_group_dot %a, %b, %scaled {DOT}
        %pw = ttng.warp_group_dot_wait %p {{pendings = 0 : i32}} : {ACC}
        scf.yield %pw : {ACC}
    """)
    filecheck(text, """
        CHECK: %s = ttng.warp_group_dot {{.*}} {isAsync = true}
        CHECK-NEXT: [[W:%[a-z_0-9]+]]:2 = ttng.warp_group_dot_wait %s, %acc {pendings = 0 : i32}
        CHECK-NEXT: arith.mulf [[W]]#1, [[W]]#0
        CHECK-NEXT: %p = ttng.warp_group_dot {{.*}} {isAsync = true}
        CHECK-NEXT: scf.yield %p
    """)
    assert isinstance(released, WarpGroupDotOp)


def test_a_carried_accumulator_read_before_any_dot_gets_a_new_wait():
    text, _ = _relax(f"""
        %s = arith.mulf %acc, %half : {ACC}
        %d = ttng.warp_group_dot %a, %b, %s {DOT}
        %w = ttng.warp_group_dot_wait %d {{pendings = 0 : i32}} : {ACC}
        scf.yield %w : {ACC}
    """)
    filecheck(text, """
        CHECK: scf.for
        CHECK-NEXT: [[W:%[a-z_0-9]+]] = ttng.warp_group_dot_wait %acc {pendings = 0 : i32}
        CHECK-NEXT: arith.mulf [[W]], %half
        CHECK-NEXT: %d = ttng.warp_group_dot {{.*}} {isAsync = true}
        CHECK-NEXT: scf.yield %d
    """)


def test_a_dot_under_an_if_leaves_the_loop_alone():
    """Its group is not committed every iteration, so groups cannot be counted."""
    text, released = _relax(f"""
        %d = ttng.warp_group_dot %a, %b, %acc {DOT}
        %w = ttng.warp_group_dot_wait %d {{pendings = 0 : i32}} : {ACC}
        %e = scf.if %flag -> ({ACC}) {{
          %f = ttng.warp_group_dot %a, %b, %w {DOT}
          %fw = ttng.warp_group_dot_wait %f {{pendings = 0 : i32}} : {ACC}
          scf.yield %fw : {ACC}
        }} else {{
          scf.yield %w : {ACC}
        }}
        scf.yield %e : {ACC}
    """)
    assert released is None and "isAsync = true" not in text and "pendings = 1" not in text
