"""Damaged, foreign and unwritable cache entries and dump directories: each kind is reported once
(a warning naming the entry) and recompiled or skipped; never a crash, a permanent failure, a
wrong kernel, or a read outside the entry (issue 14, item 6)."""
from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

import pytest

from compiler.runtime import cache as cache_module
from compiler.runtime.cache import CacheOptions, CacheWarning, KernelCache, _manifest_digest
from tests.cpu.test_cache import files

KEY = "d0" * 32


@pytest.fixture
def cache(tmp_path):
    return KernelCache(CacheOptions(tmp_path / "cache"))


def _manifest(d: Path) -> dict:
    return json.loads((d / "manifest.json").read_text())


def _rewrite(d: Path, edit, redigest: bool = True) -> None:
    """Edit the manifest; with `redigest`, recompute its digest (a foreign or forged entry
    that is self-consistent), so the checks behind the digest are the ones exercised."""
    manifest = _manifest(d)
    edit(manifest)
    if redigest and isinstance(manifest, dict):
        manifest["digest"] = _manifest_digest(manifest)
    (d / "manifest.json").write_text(json.dumps(manifest))


def _set_file(name, data):
    def damage(d):
        (d / name).write_bytes(data)
        _rewrite(d, lambda m: m["files"].__setitem__(
            name, {"size": len(data), "sha256": cache_module._digest(data)}))
    return damage


DAMAGE = {
    # the manifest itself
    "manifest-not-json": lambda d: (d / "manifest.json").write_text("{not json"),
    "manifest-empty": lambda d: (d / "manifest.json").write_bytes(b""),
    "manifest-binary": lambda d: (d / "manifest.json").write_bytes(b"\xff\xfe\x00"),
    "manifest-a-list": lambda d: (d / "manifest.json").write_text("[1, 2]"),
    "manifest-missing": lambda d: (d / "manifest.json").unlink(),
    "manifest-a-directory": lambda d: ((d / "manifest.json").unlink(),
                                       (d / "manifest.json").mkdir()),
    "manifest-deeply-nested": lambda d: (d / "manifest.json").write_text("[" * 100000),
    "wrong-key": lambda d: _rewrite(d, lambda m: m.__setitem__("key", "0" * 64)),
    "old-format": lambda d: _rewrite(d, lambda m: m.__setitem__("format", 1)),
    "files-a-list": lambda d: _rewrite(d, lambda m: m.__setitem__("files", ["kernel.ptx"])),
    "files-empty": lambda d: _rewrite(d, lambda m: m.__setitem__("files", {})),
    "file-record-a-number": lambda d: _rewrite(d, lambda m: m["files"].__setitem__(
        "kernel.ptx", 5)),
    "size-a-string": lambda d: _rewrite(d, lambda m: m["files"]["kernel.ptx"].__setitem__(
        "size", "8")),
    "metadata-a-list": lambda d: _rewrite(d, lambda m: m.__setitem__("metadata", [1])),
    "metadata-edited": lambda d: _rewrite(d, lambda m: m["metadata"].__setitem__("shared", 0),
                                          redigest=False),
    "file-dropped-from-manifest": lambda d: _rewrite(d, lambda m: m["files"].pop("kernel.cubin"),
                                                     redigest=False),
    "no-digest": lambda d: _rewrite(d, lambda m: m.pop("digest"), redigest=False),
    # the files
    "truncated-cubin": lambda d: (d / "kernel.cubin").write_bytes(
        (d / "kernel.cubin").read_bytes()[:5]),
    "flipped-byte": lambda d: (d / "kernel.ptx").write_bytes(
        bytes([(d / "kernel.ptx").read_bytes()[0] ^ 0x20]) + (d / "kernel.ptx").read_bytes()[1:]),
    "missing-trace": lambda d: (d / "trace.json").unlink(),
    "file-a-directory": lambda d: ((d / "kernel.ptx").unlink(), (d / "kernel.ptx").mkdir()),
    "consistent-truncated-cubin": _set_file("kernel.cubin", b"\x7fEL"),
    "consistent-cubin-not-elf": _set_file("kernel.cubin", b"MZ not an elf"),
    "consistent-trace-not-json": _set_file("trace.json", b"{\"kernel_name\": "),
    "consistent-trace-a-list": _set_file("trace.json", b"[]"),
    "consistent-ptx-not-utf8": _set_file("kernel.ptx", b"\xff\xfe ptx"),
    "file-a-symlink": lambda d: ((d / "kernel.ptx").unlink(),
                                 (d / "kernel.ptx").symlink_to("/etc/hostname")),
    # names that would leave the entry
    "path-traversal": lambda d: _rewrite(d, lambda m: m["files"].__setitem__(
        "../../etc/hostname", {"size": 1, "sha256": "0" * 64})),
    "absolute-path": lambda d: _rewrite(d, lambda m: m["files"].__setitem__(
        "/etc/hostname", {"size": 1, "sha256": "0" * 64})),
    "hidden-name": lambda d: _rewrite(d, lambda m: m["files"].__setitem__(
        "..", {"size": 1, "sha256": "0" * 64})),
}


@pytest.mark.parametrize("kind", sorted(DAMAGE))
def test_damage_is_reported_once_and_recompiled(cache, kind, monkeypatch):
    cache.put(KEY, files(), {"v": 1, "shared": 4096})
    directory = cache.entry_dir(KEY)
    DAMAGE[kind](directory)
    opened = []
    real_open = os.open
    monkeypatch.setattr(os, "open", lambda path, *a, **k: (opened.append(str(path)),
                                                           real_open(path, *a, **k))[1])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert cache.get(KEY) is None
        assert cache.get(KEY) is None                      # moved aside: a plain miss now
    monkeypatch.undo()
    messages = [str(w.message) for w in caught if issubclass(w.category, CacheWarning)]
    assert len(messages) == 1 and str(directory) in messages[0] and "damaged" in messages[0]
    root = str(cache.root.resolve())
    assert all(str(Path(p).resolve()).startswith(root) or not Path(p).exists()
               for p in opened), opened                    # nothing read outside the cache
    assert not any("etc" in p for p in opened)
    entry, hit = cache.get_or_compile(KEY, lambda: (files("fresh"), {"v": 2}))
    assert not hit and entry.text("kernel.ptx") == "fresh"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = cache.get(KEY)
    assert again.metadata == {"v": 2} and again.read("kernel.cubin") == files()["kernel.cubin"]


def test_foreign_files_in_an_entry_are_never_read(cache):
    cache.put(KEY, files(), {"v": 1})
    (cache.entry_dir(KEY) / "notes.txt").write_text("someone else's file")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        entry = cache.get(KEY)
    assert "notes.txt" not in entry.names and entry.metadata == {"v": 1}


@pytest.mark.parametrize("foreign", ["file", "symlink", "empty-dir"])
def test_a_foreign_thing_where_an_entry_belongs_is_replaced(cache, foreign, tmp_path):
    cache.root.mkdir(parents=True)
    target = cache.entry_dir(KEY)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("not the cache's")
    if foreign == "file":
        target.write_text("junk")
    elif foreign == "symlink":
        target.symlink_to(outside, target_is_directory=True)
    else:
        target.mkdir()
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        assert cache.get(KEY) is None
        cache.put(KEY, files("mine"), {})
        assert cache.get(KEY).text("kernel.ptx") == "mine"
    assert (outside / "keep.txt").read_text() == "not the cache's"   # never followed
    assert not target.is_symlink()


def test_read_only_cache_is_reported_once_and_kernels_still_work(cache, monkeypatch):
    def read_only(*args, **kwargs):
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(cache_module.tempfile, "mkdtemp", read_only)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for i in range(3):
            key = f"{i:02d}" * 32
            entry = cache.put(key, files(f"k{i}"), {})
            assert entry.text("kernel.ptx") == f"k{i}"        # usable from memory
            assert cache.get(key) is None
    messages = [str(w.message) for w in caught if issubclass(w.category, CacheWarning)]
    assert len(messages) == 1 and "Read-only" in messages[0]


def test_a_read_only_damaged_entry_is_skipped_not_fatal(cache, monkeypatch):
    cache.put(KEY, files(), {})
    DAMAGE["truncated-cubin"](cache.entry_dir(KEY))
    monkeypatch.setattr(cache_module.os, "rename", lambda *a: (_ for _ in ()).throw(
        OSError(30, "Read-only file system")))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            assert cache.get(KEY) is None                   # a miss every time, warned once
    assert len([w for w in caught if issubclass(w.category, CacheWarning)]) == 1


# ---- through the compile driver ------------------------------------------------------------
def _entries(root: Path) -> list[Path]:
    return [p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")]


def test_an_entry_the_compiler_cannot_load_is_recompiled(tmp_path, monkeypatch):
    from tests.cpu.test_compile_driver import compile_kernel, source
    monkeypatch.setenv("TILE_CACHE_DIR", str(tmp_path))
    first = compile_kernel(source(32))
    (entry,) = _entries(tmp_path)
    _set_file("trace.json", json.dumps({"kernel_name": 5, "stages": "x"}).encode())(entry)
    with pytest.warns(CacheWarning, match="cannot be loaded"):
        second = compile_kernel(source(32))
    assert not second.from_disk_cache and second.asm["ptx"] == first.asm["ptx"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        third = compile_kernel(source(32))
    assert third.from_disk_cache and third.asm["ptx"] == first.asm["ptx"]


def test_an_unwritable_dump_directory_is_reported_once_and_skipped(tmp_path):
    from compiler.dump import DumpWarning
    from tests.cpu.test_compile_driver import compile_kernel, source
    blocker = tmp_path / "dump"
    blocker.write_text("a file where the dump directory should be")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for block in (16, 32):
            kernel = compile_kernel(source(block), {"dump_dir": str(blocker)})
            assert kernel.asm["ptx"]
    assert len([w for w in caught if issubclass(w.category, DumpWarning)]) == 1


def test_an_unreadable_override_file_is_a_clear_error(tmp_path):
    from tests.cpu.test_compile_driver import compile_kernel, source
    (tmp_path / "scale_kernel.ttir").write_bytes(b"\xff\xfe not text")
    with pytest.raises(ValueError, match="scale_kernel.ttir: the override for stage ttir "
                                         "cannot be read"):
        compile_kernel(source(64), {"override_dir": str(tmp_path)})
