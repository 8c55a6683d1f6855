"""Atomics with duplicate addresses: add (int, float32, float16), max, min, bitwise, exchange,
compare-and-swap, returned old values. Each kernel comes with a maker of fresh random inputs of
awkward sizes and numpy's expected outputs; `ENTRIES` lists this family's catalogue entries.
"""
from __future__ import annotations

import numpy as np

import compiler as triton
import compiler.language as tl
from tests.zoo.case import Case, ZooKernel
from tests.zoo.reference import awkward, normal


@triton.jit
def histogram_kernel(idx_ptr, w_ptr, hist_ptr, whist_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    bins = tl.load(idx_ptr + offs, mask=mask, other=0)
    w = tl.load(w_ptr + offs, mask=mask, other=0.0)
    tl.atomic_add(hist_ptr + bins, 1, mask=mask)
    tl.atomic_add(whist_ptr + bins, w, mask=mask)


def _make_histogram(rng):
    n, bins = awkward(rng, 300, 3000, 128), int(rng.integers(5, 40))
    idx = rng.integers(0, bins, n).astype(np.int32)     # many duplicates
    w = rng.integers(-8, 9, n).astype(np.float32) / 4   # sums exact in any order
    return Case([idx, w, np.zeros(bins, np.int32), np.zeros(bins, np.float32), n],
                (triton.cdiv(n, 128),),
                {2: np.bincount(idx, minlength=bins).astype(np.int32),
                 3: np.bincount(idx, weights=w, minlength=bins).astype(np.float32)},
                {"BLOCK": 128}, {"num_warps": 4})


@triton.jit
def atomic_max_kernel(idx_ptr, v_ptr, f_ptr, imax_ptr, fmax_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    slot = tl.load(idx_ptr + offs, mask=mask, other=0)
    v = tl.load(v_ptr + offs, mask=mask, other=0)
    f = tl.load(f_ptr + offs, mask=mask, other=0.0)
    tl.atomic_max(imax_ptr + slot, v, mask=mask)
    tl.atomic_max(fmax_ptr + slot, f, mask=mask)


def _make_atomic_max(rng):
    n, slots = awkward(rng, 300, 2000, 128), int(rng.integers(3, 20))
    idx = rng.integers(0, slots, n).astype(np.int32)
    v = rng.integers(-10**6, 10**6, n).astype(np.int32)
    f = normal(rng, n)
    imax = np.full(slots, np.iinfo(np.int32).min, np.int32)
    fmax = np.full(slots, -np.inf, np.float32)
    np.maximum.at(imax, idx, v)
    np.maximum.at(fmax, idx, f)
    return Case([idx, v, f, np.full(slots, np.iinfo(np.int32).min, np.int32),
                 np.full(slots, -np.inf, np.float32), n], (triton.cdiv(n, 128),),
                {3: imax, 4: fmax}, {"BLOCK": 128}, {"num_warps": 4})


@triton.jit
def ticket_kernel(counter_ptr, tickets_ptr, slots_ptr):
    pid = tl.program_id(0) + tl.program_id(1) * tl.num_programs(0)
    ticket = tl.atomic_add(counter_ptr, 1)             # scalar atomic, old value used
    tl.store(tickets_ptr + pid, ticket)
    old = tl.atomic_cas(slots_ptr + pid, 0, pid + 1)    # each slot claimed once
    tl.store(slots_ptr + pid, old + pid + 1)


def _make_ticket(rng):
    gx, gy = int(rng.integers(2, 9)), int(rng.integers(2, 5))
    programs = gx * gy
    return Case([np.zeros(1, np.int32), np.zeros(programs, np.int32),
                 np.zeros(programs, np.int32)], (gx, gy),
                {0: np.array([programs], np.int32), 1: np.arange(programs, dtype=np.int32),
                 2: np.arange(1, programs + 1, dtype=np.int32)})


def _sorted_tickets(outputs: dict) -> dict:
    """Tickets come out in the order programs ran, which only the GPU decides: sort them."""
    return {**outputs, 1: np.sort(outputs[1])}


@triton.jit
def atomic_bitwise_kernel(idx_ptr, v_ptr, and_ptr, or_ptr, xor_ptr, umin_ptr, xchg_ptr, n,
                          BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    slot = tl.load(idx_ptr + offs, mask=mask, other=0)
    v = tl.load(v_ptr + offs, mask=mask, other=0)
    tl.atomic_and(and_ptr + slot, v, mask=mask)
    tl.atomic_or(or_ptr + slot, v, mask=mask)
    tl.atomic_xor(xor_ptr + slot, v, mask=mask)
    tl.atomic_min(umin_ptr + slot, v.to(tl.uint32, bitcast=True), mask=mask)
    tl.atomic_xchg(xchg_ptr + offs, v, mask=mask)


def _make_atomic_bitwise(rng):
    n, slots = awkward(rng, 200, 2000, 128), int(rng.integers(3, 20))
    slot = rng.integers(0, slots, n).astype(np.int32)
    v = rng.integers(-2**31, 2**31, n).astype(np.int32)
    start = [np.full(slots, -1, np.int32), np.zeros(slots, np.int32), np.zeros(slots, np.int32),
             np.full(slots, 2**32 - 1, np.uint32)]
    want = [a.copy() for a in start]
    np.bitwise_and.at(want[0], slot, v)
    np.bitwise_or.at(want[1], slot, v)
    np.bitwise_xor.at(want[2], slot, v)
    np.minimum.at(want[3], slot, v.view(np.uint32))
    return Case([slot, v, *start, np.zeros(n, np.int32), n], (triton.cdiv(n, 128),),
                {2: want[0], 3: want[1], 4: want[2], 5: want[3], 6: v},
                {"BLOCK": 128}, {"num_warps": 4})


@triton.jit
def atomic_add_f16_kernel(idx_ptr, v_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    slot = tl.load(idx_ptr + offs, mask=mask, other=0)
    tl.atomic_add(out_ptr + slot, tl.load(v_ptr + offs, mask=mask, other=0.0), mask=mask)


def _make_atomic_add_f16(rng):
    n, slots = awkward(rng, 100, 600, 128), int(rng.integers(3, 12))
    slot = rng.integers(0, slots, n).astype(np.int32)
    v = (rng.integers(-4, 5, n) / 4).astype(np.float16)        # sums exact in float16
    expected = np.bincount(slot, weights=v.astype(np.float64), minlength=slots)
    return Case([slot, v, np.zeros(slots, np.float16), n], (triton.cdiv(n, 128),),
                {2: expected.astype(np.float16)}, {"BLOCK": 128}, {"num_warps": 4})


#: This family's catalogue entries.
ENTRIES = [
    ZooKernel("atomic_add_histogram", histogram_kernel, _make_histogram),
    ZooKernel("atomic_max", atomic_max_kernel, _make_atomic_max),
    ZooKernel("atomic_ticket_cas", ticket_kernel, _make_ticket, canonical=_sorted_tickets),
    ZooKernel("atomic_bitwise", atomic_bitwise_kernel, _make_atomic_bitwise),
    ZooKernel("atomic_add_f16", atomic_add_f16_kernel, _make_atomic_add_f16),
]
