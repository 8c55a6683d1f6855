"""Static occupancy (compiler/codegen/occupancy.py): resident CTAs per SM from registers, warps
and shared memory, checked on attention's configs, whose limits bench/attention_loops.md lists
(issue 10), and the launcher's request for the largest shared-memory carveout."""
from __future__ import annotations

import types

import pytest

from compiler.codegen.occupancy import ctas_per_sm
from compiler.runtime import driver


@pytest.mark.parametrize("registers,warps,shared,ctas,limited_by", [
    # D128 64x64, 4 warps: 168 registers allow 3 CTAs, 112 KB (+1 KB reserved) only 2.
    (168, 4, 112 * 1024, 2, ("shared",)),
    # D64 128x64, 8 warps: 116 registers round to 120 (3840 a warp): 4 warps a sub-partition,
    # two 8-warp CTAs; 64 KB of shared memory would allow 3.
    (116, 8, 64 * 1024, 2, ("registers",)),
    # D64 64x64, 4 warps: 4 CTAs by registers (128) and by shared memory (4 x 57 KB = 228 KB).
    (126, 4, 56 * 1024, 4, ("registers", "shared")),
    # D128 128x128, 8 warps: 254 registers and 224 KB, one CTA either way.
    (254, 8, 224 * 1024, 1, ("registers", "shared")),
    # a small kernel: the 64-warp limit binds.
    (24, 4, 0, 16, ("warps",)),
])
def test_ctas_per_sm_on_sm90(registers, warps, shared, ctas, limited_by):
    occ = ctas_per_sm(registers, warps, shared)
    assert occ["ctas_per_sm"] == ctas
    assert occ["warps_per_sm"] == ctas * warps
    assert occ["limited_by"] == limited_by


def test_ctas_per_sm_rejects_what_no_sm_runs():
    assert ctas_per_sm(64, 4, 228 * 1024)["ctas_per_sm"] == 0      # over the 227 KB a CTA may use
    with pytest.raises(ValueError, match="sm_70"):
        ctas_per_sm(64, 4, 0, arch=70)
    with pytest.raises(ValueError, match="1 to 255"):
        ctas_per_sm(256, 4, 0)


def _fake_bindings(calls: list):
    """cuda.bindings stand-ins recording the function attribute calls."""
    def record(name, *result):
        return lambda *args: (calls.append((name, *args)), (0, *result))[1]
    return types.SimpleNamespace(
        CUfunc_cache=types.SimpleNamespace(CU_FUNC_CACHE_PREFER_SHARED="prefer-shared"),
        CUfunction_attribute=types.SimpleNamespace(
            CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES="max-dynamic",
            CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES="static"),
        cuFuncSetCacheConfig=record("cache"),
        cuFuncSetAttribute=record("attribute"),
        cuFuncGetAttribute=record("get", 0))


@pytest.mark.parametrize("shared,expected", [
    (48 * 1024, []),
    (112 * 1024, [("cache", "fn", "prefer-shared"),
                  ("attribute", "fn", "max-dynamic", 112 * 1024)]),
])
def test_large_shared_memory_kernels_ask_for_the_largest_carveout(monkeypatch, shared, expected):
    """Above 48 KB the launcher prefers shared memory over L1 (Triton's launcher does the
    same), so the carveout holds as many CTAs as ctas_per_sm counts."""
    calls: list = []
    monkeypatch.setattr(driver, "bindings", lambda: _fake_bindings(calls))
    monkeypatch.setattr(driver, "device_attribute", lambda name, device=0: 227 * 1024)
    driver.set_dynamic_shared_memory("fn", shared)
    assert [c for c in calls if c[0] != "get"] == expected
