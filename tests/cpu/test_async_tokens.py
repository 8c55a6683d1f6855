"""The asynchronous-copy ops with Triton's `!ttg.async.token`s: `ttg.async_copy_global_to_local`
and `ttg.async_commit_group tokens %copies` give tokens, `ttg.async_wait %groups {num}` takes the
groups' tokens and gives one, `ttg.local_load %buf token %wait` takes it, and loops carry them.
Each form prints as Triton's does, parses back to the same text and verifies; wrong operands are
errors; Triton 3.6's own pipelined matmul ttgir parses, verifies and round-trips."""
from __future__ import annotations

import textwrap

import pytest

from compiler.dialects.scf import ForOp
from compiler.dialects.ttg import AsyncTokenType, AsyncWaitOp, LocalLoadOp
from compiler.ir import parse_module, verify_module
from compiler.ir.parser import ParseError
from compiler.ir.printer import print_module
from compiler.ir.verifier_errors import VerificationError

from .filecheck import filecheck

BUF = "!ttg.memdesc<16x32xf32, #shared, #smem, mutable>"
RING = "!ttg.memdesc<2x16x32xf32, #shared, #smem, mutable>"
PTRS = "tensor<16x32x!tt.ptr<f32>, #blocked>"


def _module(body: str) -> str:
    return textwrap.dedent("""\
    #blocked = #ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
    #shared = #ttg.swizzled_shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [1, 0]}>
    #smem = #ttg.shared_memory
    module attributes {"ttg.num-warps" = 4 : i32, "ttg.threads-per-warp" = 32 : i32} {
      tt.func public @k(%p: !tt.ptr<f32>, %n: i32) {
        %c0 = arith.constant 0 : i32
        %c1 = arith.constant 1 : i32
        %ptrs = tt.splat %p : !tt.ptr<f32> -> PTRS
        %ring = ttg.local_alloc : () -> RING
        %slot = ttg.memdesc_index %ring[%c0] : RING -> BUF
    BODY
        ttg.local_dealloc %ring : RING
        tt.return
      }
    }
    """).replace("BODY", textwrap.indent(textwrap.dedent(body), " " * 4)) \
        .replace("PTRS", PTRS).replace("RING", RING).replace("BUF", BUF)


PIPELINE = f"""
    %copy = ttg.async_copy_global_to_local %ptrs, %slot : {PTRS} -> <16x32xf32, #shared, #smem, mutable>
    %group = ttg.async_commit_group tokens %copy
    %last = scf.for %i = %c0 to %n step %c1 iter_args(%t = %group) -> (!ttg.async.token) : i32 {{
      %w = ttg.async_wait %t {{num = 0 : i32}}
      %v = ttg.local_load %slot token %w : {BUF} -> tensor<16x32xf32, #blocked>
      %next = ttg.async_copy_global_to_local %ptrs, %slot : {PTRS} -> <16x32xf32, #shared, #smem, mutable>
      %g = ttg.async_commit_group tokens %next
      scf.yield %g : !ttg.async.token
    }}
    %done = ttg.async_wait %last, %group {{num = 0 : i32}}
    %none = ttg.async_wait {{num = 0 : i32}}
"""


def _round_trip(text: str) -> str:
    module = parse_module(text)
    verify_module(module)
    printed = print_module(module)
    assert print_module(parse_module(printed)) == printed
    return printed


def test_async_ops_with_tokens_print_as_triton_and_round_trip():
    printed = _round_trip(_module(PIPELINE))
    filecheck(printed, """
        CHECK: %copy = ttg.async_copy_global_to_local %ptrs, %slot : tensor<16x32x!tt.ptr<f32>, #blocked> -> <16x32xf32, #shared, #smem, mutable>
        CHECK-NEXT: %group = ttg.async_commit_group tokens %copy
        CHECK-NEXT: %last = scf.for %i = %c0 to %n step %c1 iter_args(%t = %group) -> (!ttg.async.token)
        CHECK-NEXT: %w = ttg.async_wait %t {num = 0 : i32}
        CHECK-NEXT: %v = ttg.local_load %slot token %w : !ttg.memdesc<16x32xf32, #shared, #smem, mutable> -> tensor<16x32xf32, #blocked>
        CHECK: %g = ttg.async_commit_group tokens %next
        CHECK-NEXT: scf.yield %g : !ttg.async.token
        CHECK: %done = ttg.async_wait %last, %group {num = 0 : i32}
        CHECK-NEXT: %none = ttg.async_wait {num = 0 : i32}
    """)


def test_the_ops_hand_their_tokens_to_each_other():
    module = parse_module(_module(PIPELINE))
    loop = next(op for op in module.walk() if isinstance(op, ForOp))
    wait = next(op for op in loop.walk() if isinstance(op, AsyncWaitOp))
    read = next(op for op in loop.walk() if isinstance(op, LocalLoadOp))
    assert wait.tokens == [loop.iter_args[0]] and wait.num == 0
    assert read.token is wait.results[0] and isinstance(read.token.type, AsyncTokenType)
    assert isinstance(loop.results[0].type, AsyncTokenType)


def test_the_copys_buffer_type_may_be_written_out():
    printed = _round_trip(_module(f"""
        %copy = ttg.async_copy_global_to_local %ptrs, %slot : {PTRS} -> {BUF}
        %group = ttg.async_commit_group tokens %copy
    """))
    (copy,) = [line for line in printed.splitlines() if "ttg.async_copy_global_to_local" in line]
    assert f"{PTRS} -> <16x32xf32, #shared, #smem, mutable> loc(" in copy


@pytest.mark.parametrize("body,expected", [
    ("%w = ttg.async_wait %c0 {num = 0 : i32}", "expects !ttg.async.token, got i32"),
    ("%g = ttg.async_commit_group tokens %slot", "expects !ttg.async.token, got !ttg.memdesc"),
    (f"%v = ttg.local_load %slot token %c1 : {BUF} -> tensor<16x32xf32, #blocked>",
     "expects !ttg.async.token, got i32"),
])
def test_operands_that_are_not_tokens_fail_verification(body, expected):
    module = parse_module(_module(body))
    with pytest.raises(VerificationError, match=expected):
        verify_module(module)


@pytest.mark.parametrize("body,expected", [
    (f"%copy = ttg.async_copy_global_to_local %ptrs, %slot : {PTRS} -> "
     "<16x32xf16, #shared, #smem, mutable>", "operand #1 has type"),
    (f"ttg.async_copy_global_to_local %ptrs, %slot : {PTRS} -> {BUF}",
     "defines 1 results but the text names 0"),
    ("ttg.async_wait {num = 0 : i32}", "defines 1 results but the text names 0"),
])
def test_wrong_types_and_missing_tokens_are_parse_errors(body, expected):
    with pytest.raises(ParseError, match=expected):
        parse_module(_module(body))


def test_tritons_pipelined_matmul_ttgir_round_trips(reference_dir):
    # Triton 3.6's sm_90 matmul: its K loop carries four tokens, one per copy group of the two
    # steps in flight, and waits on this step's two
    text = (reference_dir / "matmul.ttgir").read_text()
    _round_trip(text)
    module = parse_module(text)
    loop = next(op for op in module.walk() if isinstance(op, ForOp))
    carried = [a for a in loop.iter_args if isinstance(a.type, AsyncTokenType)]
    assert len(carried) == 4
    (wait,) = [op for op in loop.body.ops if isinstance(op, AsyncWaitOp)]
    assert wait.num == 2 and set(wait.tokens) <= set(carried) and len(wait.tokens) == 2
