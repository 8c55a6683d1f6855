"""The kernel cache: keys, round trips, atomic writes, concurrent writers, damaged entries."""
from __future__ import annotations

import json
import multiprocessing
import os
import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest

from compiler.runtime.cache import (CacheOptions, CacheWarning, KernelCache, cache_key,
                                    canonical, compiler_fingerprint, stage_files,
                                    stages_from_entry, toolchain_versions)

BASE = dict(source_hash="abc123", specialization={"signature": {"x": "*fp32", "n": "i32"},
                                                  "constexprs": {"BLOCK": 1024}},
            options={"num_warps": 4, "num_stages": 3}, target={"backend": "nvidia", "arch": 90},
            compiler_version="v1", toolchain={"ptxas": "13.0", "llvm": "22.1"})


def files(text="ptx text"):
    return {"kernel.ptx": text, "kernel.cubin": b"\x7fELF\x00\x01\x02binary",
            "trace.json": json.dumps({"kernel_name": "add"})}


@pytest.fixture
def cache(tmp_path):
    return KernelCache(CacheOptions(tmp_path / "cache"))


# ---- keys ----------------------------------------------------------------------------------
def test_key_is_a_sha256_and_ignores_dict_order():
    key = cache_key(**BASE)
    assert len(key) == 64 and int(key, 16) >= 0
    reordered = dict(BASE, options={"num_stages": 3, "num_warps": 4})
    assert cache_key(**reordered) == key


@pytest.mark.parametrize("part,value", [
    ("source_hash", "abc124"),
    ("specialization", {"signature": {"x": "*fp16", "n": "i32"}, "constexprs": {"BLOCK": 1024}}),
    ("specialization", {"signature": {"x": "*fp32", "n": "i32"}, "constexprs": {"BLOCK": 512}}),
    ("options", {"num_warps": 8, "num_stages": 3}),
    ("target", {"backend": "nvidia", "arch": 80}),
    ("compiler_version", "v2"),
    ("toolchain", {"ptxas": "13.1", "llvm": "22.1"}),
])
def test_key_changes_with_every_part(part, value):
    assert cache_key(**dict(BASE, **{part: value})) != cache_key(**BASE)


def test_key_accepts_dataclasses_and_refuses_unstable_objects():
    @dataclass(frozen=True)
    class Opts:
        num_warps: int = 4
        archs: tuple = (80, 90)

    assert cache_key(**dict(BASE, options=Opts())) == cache_key(**dict(BASE, options=Opts()))
    assert cache_key(**dict(BASE, options=Opts())) != cache_key(**dict(BASE, options=Opts(8)))
    assert canonical({3, 1, 2}) == [1, 2, 3]
    with pytest.raises(TypeError, match="cannot put a object into a cache key"):
        cache_key(**dict(BASE, options={"x": object()}))


def test_default_versions_come_from_the_compiler_and_toolchain():
    versions = toolchain_versions()
    assert versions["llvm"].count(".") >= 1 and "ptxas" in versions
    assert len(compiler_fingerprint()) == 64
    parts = {k: v for k, v in BASE.items() if k not in ("compiler_version", "toolchain")}
    assert cache_key(**parts) == cache_key(**parts)
    assert cache_key(**parts) != cache_key(**BASE)


def test_options_are_read_from_the_environment_once():
    opts = CacheOptions.from_env({"TILE_CACHE_DIR": "/tmp/x", "TILE_ALWAYS_COMPILE": "1"})
    assert opts == CacheOptions(Path("/tmp/x"), True)
    default = CacheOptions.from_env({})
    assert default.cache_dir == Path("~/.cache/tile-explore").expanduser()
    assert not default.always_compile


# ---- round trips ---------------------------------------------------------------------------
def test_put_then_get_round_trip(cache):
    key = cache_key(**BASE)
    assert cache.get(key) is None
    cache.put(key, files(), {"shared": 0, "num_warps": 4, "name": "add"})
    entry = cache.get(key)
    assert entry.text("kernel.ptx") == "ptx text"
    assert entry.read("kernel.cubin") == b"\x7fELF\x00\x01\x02binary"
    assert entry.metadata == {"shared": 0, "num_warps": 4, "name": "add"}
    assert entry.names == ["kernel.cubin", "kernel.ptx", "trace.json"]
    assert not [p for p in cache.root.iterdir() if p.name.startswith(".")]


def test_stage_outputs_round_trip_through_an_entry(cache):
    asm = {"ttir": "module {}", "ptx": ".version 8.7", "cubin": b"\x7fELF\x00\xff"}
    entry = cache.put("de" * 32, stage_files(asm, '{"kernel_name": "k"}'), {})
    assert sorted(entry.names) == ["kernel.cubin", "kernel.ptx", "kernel.ttir", "trace.json"]
    assert stages_from_entry(cache.get("de" * 32)) == asm


def test_always_compile_bypasses_reads(tmp_path):
    root = tmp_path / "c"
    KernelCache(CacheOptions(root)).put("ab" * 32, files(), {})
    assert KernelCache(CacheOptions(root)).get("ab" * 32) is not None
    assert KernelCache(CacheOptions(root, always_compile=True)).get("ab" * 32) is None


def test_get_or_compile_compiles_once(cache):
    calls = []

    def compile_fn():
        calls.append(1)
        return files(), {"n": len(calls)}

    entry, hit = cache.get_or_compile("cd" * 32, compile_fn)
    assert not hit and entry.metadata == {"n": 1}
    entry, hit = cache.get_or_compile("cd" * 32, compile_fn)
    assert hit and entry.metadata == {"n": 1} and len(calls) == 1


def test_bad_names_and_keys_are_refused(cache):
    with pytest.raises(ValueError, match="bad cache file name"):
        cache.put("ab" * 32, {"../escape": "x"}, {})
    with pytest.raises(ValueError, match="bad cache file name"):
        cache.put("ab" * 32, {"manifest.json": "x"}, {})
    with pytest.raises(ValueError, match="hex digest"):
        cache.get("../../etc")


# ---- damage --------------------------------------------------------------------------------
def _damage_manifest_json(d: Path):
    (d / "manifest.json").write_text("{not json")


def _truncate_cubin(d: Path):
    data = (d / "kernel.cubin").read_bytes()
    (d / "kernel.cubin").write_bytes(data[:5])


def _flip_a_byte(d: Path):
    data = bytearray((d / "kernel.ptx").read_bytes())
    data[0] ^= 0x20
    (d / "kernel.ptx").write_bytes(bytes(data))


def _remove_trace(d: Path):
    (d / "trace.json").unlink()


def _remove_manifest(d: Path):
    (d / "manifest.json").unlink()


def _wrong_key(d: Path):
    manifest = json.loads((d / "manifest.json").read_text())
    manifest["key"] = "0" * 64
    (d / "manifest.json").write_text(json.dumps(manifest))


@pytest.mark.parametrize("damage", [_damage_manifest_json, _truncate_cubin, _flip_a_byte,
                                    _remove_trace, _remove_manifest, _wrong_key])
def test_damaged_entry_warns_and_is_recompiled(cache, damage):
    key = "ef" * 32
    cache.put(key, files(), {"v": 1})
    damage(cache.entry_dir(key))
    with pytest.warns(CacheWarning, match="damaged"):
        assert cache.get(key) is None
    assert not cache.entry_dir(key).exists()
    entry, hit = cache.get_or_compile(key, lambda: (files("fresh"), {"v": 2}))
    assert not hit and entry.text("kernel.ptx") == "fresh"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cache.get(key).metadata == {"v": 2}


def test_put_over_a_damaged_entry_replaces_it(cache):
    key = "aa" * 32
    cache.put(key, files("old"), {})
    _truncate_cubin(cache.entry_dir(key))
    cache.put(key, files("new"), {})
    assert cache.get(key).text("kernel.ptx") == "new"


def test_a_write_that_fails_midway_leaves_no_entry(cache, monkeypatch):
    key = "bb" * 32

    def crash(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", crash)
    with pytest.warns(CacheWarning, match="cannot write"):
        entry = cache.put(key, files(), {"x": 1})
    assert entry.text("kernel.ptx") == "ptx text"          # still usable in memory
    monkeypatch.undo()
    assert cache.get(key) is None
    assert list(cache.root.iterdir()) == []                 # no partial entry, no temp dir


# ---- concurrency ---------------------------------------------------------------------------
def _writer(root: str, key: str, worker: int, rounds: int, queue) -> None:
    """Put the same key many times (with writer-specific content, as a non-deterministic
    compiler would) and read it back in between; report any read that was not whole."""
    cache = KernelCache(CacheOptions(Path(root)))
    problems = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for i in range(rounds):
            payload = f"worker {worker} round {i} " * 2000
            cache.put(key, {"kernel.ptx": payload, "trace.json": json.dumps({"w": worker})},
                          {"worker": worker})
            entry = cache.get(key)
            if entry is None:
                problems.append("miss after put")
                continue
            w = entry.metadata["worker"]
            if not entry.text("kernel.ptx").startswith(f"worker {w} ") or \
                    json.loads(entry.text("trace.json")) != {"w": w}:
                problems.append("mixed entry")
    problems += [str(w.message) for w in caught if issubclass(w.category, CacheWarning)]
    queue.put(problems)


def test_concurrent_processes_writing_one_key_never_corrupt_it(tmp_path):
    root, key = str(tmp_path / "shared-cache"), "cc" * 32
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(root, key, w, 15, queue)) for w in range(4)]
    for p in procs:
        p.start()
    results = [queue.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=120)
        assert p.exitcode == 0
    assert results == [[], [], [], []]
    final = KernelCache(CacheOptions(Path(root))).get(key)
    assert final is not None and final.metadata["worker"] in range(4)
    assert [p.name for p in Path(root).iterdir()] == [key]   # no leftover temp/trash dirs
