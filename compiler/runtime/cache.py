"""The on-disk kernel cache: compiled stages keyed by everything that affects them.

An entry is a directory `<cache dir>/<key>/` holding one file per artifact (stage texts, the
cubin, `trace.json`, ...) and `manifest.json` (the key, metadata, and each file's size and
sha256). The key is the sha256 of a canonical JSON of the kernel source hash, specialization,
options, target, the compiler's own fingerprint and the toolchain versions (`cache_key`).

Writes are atomic: an entry is built in a private temporary directory and renamed into place in
one step, so readers see a whole entry or none, and processes racing to write the same key leave
one complete winner. A damaged entry (unreadable or wrongly shaped manifest, a manifest whose own
digest does not match, a missing, truncated, unsafe-named or symlinked file, a checksum
mismatch, a file whose content is not of its kind, an entry the compiler cannot load) is
reported once with a `CacheWarning` naming it, moved aside, and treated as a miss so it gets
recompiled. File names in a manifest are checked before anything is opened, and files are
opened without following links, so nothing outside the entry is ever read. A cache that cannot
be written (read-only, full, not a directory) is reported once and the kernel is used from
memory. `TILE_CACHE_DIR` and `TILE_ALWAYS_COMPILE` are read once, by `CacheOptions.from_env`.
"""
from __future__ import annotations

import dataclasses
import enum
import functools
import hashlib
import json
import os
import re
import shutil
import tempfile
import time
import uuid
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

CACHE_FORMAT = 2       # 2: the manifest carries its own digest
MANIFEST = "manifest.json"
_SAFE_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")


class CacheWarning(UserWarning):
    """A cache entry was damaged (and will be recompiled), or the cache could not be written."""


@dataclass(frozen=True)
class CacheOptions:
    """Where the cache lives and whether reads are bypassed."""

    cache_dir: Path
    always_compile: bool = False

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> "CacheOptions":
        """Read TILE_CACHE_DIR (default ~/.cache/tile-explore) and TILE_ALWAYS_COMPILE=1."""
        env = os.environ if env is None else env
        directory = env.get("TILE_CACHE_DIR") or str(Path("~/.cache/tile-explore").expanduser())
        always = env.get("TILE_ALWAYS_COMPILE", "0").strip().lower() in ("1", "true", "yes", "on")
        return cls(Path(directory).expanduser(), always)


# --------------------------------------------------------------------------------------------
# Keys

def canonical(value: Any) -> Any:
    """A JSON-able, order-independent form of a key part. Dataclasses, enums, tuples, sets,
    bytes and paths are converted; other objects are refused (a `repr` with a memory address
    would make keys unstable)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {"__dataclass__": type(value).__name__,
                **{f.name: canonical(getattr(value, f.name)) for f in dataclasses.fields(value)}}
    if isinstance(value, enum.Enum):
        return f"{type(value).__name__}.{value.name}"
    if isinstance(value, Mapping):
        return {str(k): canonical(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (list, tuple)):
        return [canonical(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((canonical(v) for v in value), key=lambda v: json.dumps(v, sort_keys=True))
    if isinstance(value, bytes):
        return {"__bytes__": value.hex()}
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"cannot put a {type(value).__name__} into a cache key; use plain data "
                    f"(str, numbers, lists, dicts, dataclasses)")


def cache_key(*, source_hash: str, specialization: Any, options: Any, target: Any,
              compiler_version: str | None = None, toolchain: Mapping | None = None) -> str:
    """The sha256 (hex) naming a compiled kernel. `compiler_version` defaults to
    `compiler_fingerprint()` and `toolchain` to `toolchain_versions()`."""
    parts = {
        "format": CACHE_FORMAT,
        "source": source_hash,
        "specialization": canonical(specialization),
        "options": canonical(options),
        "target": canonical(target),
        "compiler": compiler_fingerprint() if compiler_version is None else compiler_version,
        "toolchain": canonical(toolchain_versions() if toolchain is None else toolchain),
    }
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


@functools.lru_cache(maxsize=None)
def compiler_fingerprint() -> str:
    """A hash of every Python file of the `compiler` package, so editing the compiler (even in
    an editable install whose version never changes) invalidates old entries."""
    root = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


@functools.lru_cache(maxsize=None)
def toolchain_versions(ptxas: str | None = None) -> dict:
    """Versions of the tools that shape the output: llvmlite and its LLVM, ptxas (identified by
    its path, size and modification time, which change with the binary and cost no process
    start; `ptxas` is the path to use, else the one codegen would find), nvdisasm (whether SASS is
    produced), cuda-bindings."""
    versions: dict[str, str] = {}
    try:
        import llvmlite
        import llvmlite.binding as llvm
        versions["llvmlite"] = llvmlite.__version__
        versions["llvm"] = ".".join(str(v) for v in llvm.llvm_version_info)
    except Exception as exc:
        versions["llvmlite"] = f"unavailable: {type(exc).__name__}"
    versions["ptxas"] = _tool_identity(ptxas or _find_ptxas())
    versions["nvdisasm"] = _tool_identity(_find_tool_quiet("nvdisasm"))
    try:
        from importlib.metadata import version
        versions["cuda-bindings"] = version("cuda-bindings")
    except Exception:
        versions["cuda-bindings"] = "absent"
    return versions


def _tool_identity(path: str | None) -> str:
    """A tool binary's identity for the cache key: its real path, size and mtime, or why none."""
    if not path:
        return "absent"
    try:
        stat = os.stat(path)
    except OSError as exc:
        return f"unusable: {type(exc).__name__}"
    return f"{os.path.realpath(path)}:{stat.st_size}:{stat.st_mtime_ns}"


def _find_tool_quiet(name: str) -> str | None:
    """A CUDA tool's path as codegen finds it (None when absent or the finder is unavailable)."""
    try:
        from compiler.codegen.toolchain import find_tool
    except ImportError:
        return shutil.which(name)
    return find_tool(name)


def _find_ptxas() -> str | None:
    """The ptxas the code generator uses (TILE_PTXAS_PATH, PATH, wheel, /usr/local/cuda)."""
    return _find_tool_quiet("ptxas")


# --------------------------------------------------------------------------------------------
# Entries

@dataclass
class CacheEntry:
    """A verified cache entry: its files' contents, and the metadata stored with them."""

    key: str
    path: Path
    metadata: dict
    files: dict[str, bytes]

    def read(self, name: str) -> bytes:
        """The bytes of one stored file."""
        return self.files[name]

    def text(self, name: str) -> str:
        """One stored file as text."""
        return self.files[name].decode()

    @property
    def names(self) -> list[str]:
        return sorted(self.files)


#: Stages whose output is binary; every other stage is stored as UTF-8 text.
BINARY_STAGES = ("cubin", "hsaco", "bin")
TRACE_FILE = "trace.json"


def stage_files(asm: Mapping[str, str | bytes], trace_json: str | None = None) -> dict:
    """The files of an entry for a compiled kernel: one `kernel.<stage>` per stage output
    (e.g. kernel.ttir, kernel.ptx, kernel.cubin), plus `trace.json` when given."""
    files: dict[str, str | bytes] = {f"kernel.{stage}": text for stage, text in asm.items()
                                     if isinstance(text, (str, bytes))}
    if trace_json is not None:
        files[TRACE_FILE] = trace_json
    return files


def stages_from_entry(entry: "CacheEntry") -> dict[str, str | bytes]:
    """The stage outputs stored by `stage_files`: bytes for binary stages, text otherwise."""
    stages: dict[str, str | bytes] = {}
    for name, data in entry.files.items():
        if name.startswith("kernel."):
            stage = name[len("kernel."):]
            stages[stage] = data if stage in BINARY_STAGES else data.decode()
    return stages


class EntryDamaged(Exception):
    """Internal: why an entry failed verification."""


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


_WARNED: set[str] = set()


def _warn_once(message: str, key: str | None = None) -> None:
    """A `CacheWarning`, issued once per process for the same entry or cache (`key`)."""
    key = message if key is None else key
    if key in _WARNED:
        return
    _WARNED.add(key)
    warnings.warn(message, CacheWarning, stacklevel=3)


def _manifest_digest(manifest: Mapping) -> str:
    """The sha256 of a manifest's fields other than `digest`, in canonical JSON."""
    body = {k: v for k, v in manifest.items() if k != "digest"}
    return _digest(json.dumps(body, sort_keys=True, separators=(",", ":")).encode())


def _safe_file_name(name) -> bool:
    """A name an entry may hold: one path component of safe characters, not hidden, not the
    manifest (so `../../etc/hostname` or `/etc/passwd` is never opened)."""
    return isinstance(name, str) and bool(_SAFE_NAME.match(name)) and name != MANIFEST \
        and not name.startswith(".")


def _read_manifest(directory: Path) -> dict:
    try:
        data = _read_entry_file(directory, MANIFEST)
        manifest = json.loads(data.decode())
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise EntryDamaged(f"manifest.json is unreadable: {exc}") from None
    if not isinstance(manifest, dict):
        raise EntryDamaged("manifest.json is not a JSON object")
    return manifest


def _check_manifest_shape(manifest: dict) -> None:
    """Every field of the manifest has the type the reader relies on."""
    files = manifest.get("files")
    if not isinstance(files, dict) or not files:
        raise EntryDamaged("manifest.json lists no files")
    if not isinstance(manifest.get("metadata"), dict):
        raise EntryDamaged("manifest.json's metadata is not an object")
    if not isinstance(manifest.get("digest"), str):
        raise EntryDamaged("manifest.json has no digest")
    for name, info in files.items():
        if not _safe_file_name(name):
            raise EntryDamaged(f"manifest.json names a file outside the entry: {name!r}")
        if not isinstance(info, dict) or type(info.get("size")) is not int \
                or not isinstance(info.get("sha256"), str):
            raise EntryDamaged(f"manifest.json's record of {name} is not {{size, sha256}}")


def _read_entry_file(directory: Path, name: str) -> bytes:
    """The bytes of one file of the entry, opened without following a symbolic link."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(directory / name, flags)
    except FileNotFoundError:
        raise EntryDamaged(f"{name} is missing") from None
    except OSError as exc:     # ELOOP: a symbolic link; EACCES, EISDIR, ...
        raise EntryDamaged(f"{name} cannot be opened: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "rb") as handle:
            return handle.read()
    except OSError as exc:
        raise EntryDamaged(f"{name} cannot be read: {exc.strerror or exc}") from None


#: What the content of a stored file must look like, by name (beyond its checksum): the
#: trace is a JSON object; ELF binaries start with the ELF magic.
_ELF_MAGIC = b"\x7fELF"


def _check_content(name: str, data: bytes) -> None:
    if name == TRACE_FILE:
        try:
            if not isinstance(json.loads(data.decode()), dict):
                raise ValueError("not a JSON object")
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            raise EntryDamaged(f"{name} is not a trace: {exc}") from None
    elif name == "kernel.cubin" and not data.startswith(_ELF_MAGIC):
        raise EntryDamaged(f"{name} is not an ELF file")
    elif name.startswith("kernel.") and name[len("kernel."):] not in BINARY_STAGES:
        try:
            data.decode()
        except UnicodeDecodeError as exc:
            raise EntryDamaged(f"{name} is not UTF-8 text: {exc}") from None


class KernelCache:
    """The cache directory. `get(key)` returns a verified `CacheEntry` or None; `put(key,
    files, metadata)` stores one atomically; `get_or_compile` does both around a compile."""

    def __init__(self, options: CacheOptions | None = None):
        self.options = options or CacheOptions.from_env()
        self.root = Path(self.options.cache_dir)

    def entry_dir(self, key: str) -> Path:
        """Where the entry for `key` lives."""
        if not re.fullmatch(r"[0-9a-f]{16,128}", key):
            raise ValueError(f"cache key must be a lowercase hex digest, not {key!r}")
        return self.root / key

    # ---- reading -------------------------------------------------------------------------
    def get(self, key: str) -> CacheEntry | None:
        """The entry for `key`, verified; None on a miss, when TILE_ALWAYS_COMPILE is set, or
        when the entry is damaged (then with a `CacheWarning`, and the entry is moved aside)."""
        if self.options.always_compile:
            return None
        directory = self.entry_dir(key)
        if not directory.is_dir():
            return None
        try:
            return self._read_entry(key, directory)
        except EntryDamaged as damage:
            _warn_once(f"kernel cache entry {directory} is damaged ({damage}); recompiling")
            self._discard(directory)
            return None

    def _read_entry(self, key: str, directory: Path) -> CacheEntry:
        if directory.is_symlink():
            raise EntryDamaged("the entry is a symbolic link")
        manifest = _read_manifest(directory)
        if manifest.get("format") != CACHE_FORMAT or manifest.get("key") != key:
            raise EntryDamaged("manifest.json does not describe this entry")
        _check_manifest_shape(manifest)
        if manifest["digest"] != _manifest_digest(manifest):
            raise EntryDamaged("manifest.json does not match its own digest (edited?)")
        files: dict[str, bytes] = {}
        for name, info in manifest["files"].items():
            data = _read_entry_file(directory, name)
            if len(data) != info["size"]:
                raise EntryDamaged(f"file {name} has {len(data)} bytes, expected "
                                   f"{info['size']} (truncated?)")
            if _digest(data) != info["sha256"]:
                raise EntryDamaged(f"file {name} does not match its checksum")
            _check_content(name, data)
            files[name] = data
        return CacheEntry(key, directory, manifest["metadata"], files)

    def reject(self, entry: "CacheEntry", reason: str) -> None:
        """Report (once) that a verified entry cannot be used (e.g. its trace does not load in
        this compiler) and move it aside, so the next lookup misses and recompiles."""
        _warn_once(f"kernel cache entry {entry.path} is damaged ({reason}); recompiling")
        self._discard(entry.path)

    def _discard(self, directory: Path) -> None:
        """Move a damaged entry out of the way atomically, then delete it."""
        trash = directory.with_name(f".trash-{directory.name}-{uuid.uuid4().hex[:8]}")
        try:
            os.rename(directory, trash)
        except OSError:
            return          # someone else moved or replaced it already, or the dir is read-only
        if trash.is_dir() and not trash.is_symlink():
            shutil.rmtree(trash, ignore_errors=True)
        else:               # a foreign file or link where an entry belongs: remove the name only
            try:
                os.unlink(trash)
            except OSError:
                pass

    # ---- writing -------------------------------------------------------------------------
    def put(self, key: str, files: Mapping[str, bytes | str],
            metadata: Mapping | None = None) -> CacheEntry:
        """Store an entry atomically and return it. If another process stored the same key
        first, its entry is kept (both are the same compile). A write failure (disk full,
        read-only dir) warns and still returns the entry, kept in memory only."""
        directory = self.entry_dir(key)
        blobs = {}
        for name, data in files.items():
            if not _safe_file_name(name):
                raise ValueError(f"bad cache file name {name!r}: use letters, digits, '_', '-' "
                                 f"and '.', not starting with '.', and not {MANIFEST}")
            blobs[name] = data.encode() if isinstance(data, str) else bytes(data)
        manifest = {
            "format": CACHE_FORMAT, "key": key, "created": time.time(),
            "metadata": json.loads(json.dumps(dict(metadata or {}))),
            "files": {name: {"size": len(b), "sha256": _digest(b)} for name, b in blobs.items()},
        }
        manifest["digest"] = _manifest_digest(manifest)
        entry = CacheEntry(key, directory, manifest["metadata"], blobs)
        try:
            self._write_entry(directory, blobs, manifest)
        except OSError as exc:
            _warn_once(f"cannot write kernel cache entry {directory}: {exc}; kernels compiled "
                       f"now are kept in memory only", key=f"write {self.root}")
        return entry

    def _write_entry(self, directory: Path, blobs: dict[str, bytes], manifest: dict) -> None:
        if directory.is_dir() and not directory.is_symlink() and not self._damaged(directory):
            return                                 # already stored whole, by us or another
        self.root.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".tmp-{directory.name[:16]}-", dir=self.root))
        try:
            for name, data in blobs.items():
                with open(staging / name, "wb") as handle:
                    handle.write(data)
                    handle.flush()
                    os.fsync(handle.fileno())
            with open(staging / MANIFEST, "w") as handle:   # written last: marks completeness
                json.dump(manifest, handle, indent=1)
                handle.flush()
                os.fsync(handle.fileno())
            os.chmod(staging, 0o755)
            if directory.is_symlink() or directory.exists() and (
                    not directory.is_dir() or self._damaged(directory)):
                self._discard(directory)
            try:
                os.rename(staging, directory)      # atomic; fails if the key already exists
            except OSError:
                if not directory.is_dir():
                    raise
                # Another process won the race with a complete entry: keep theirs.
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    def _damaged(self, directory: Path) -> bool:
        try:
            self._read_entry(directory.name, directory)
            return False
        except EntryDamaged:
            return True

    # ---- the usual path --------------------------------------------------------------------
    def get_or_compile(self, key: str,
                       compile_fn: Callable[[], tuple[Mapping[str, bytes | str], Mapping]]
                       ) -> tuple[CacheEntry, bool]:
        """The entry for `key`, compiling and storing it on a miss. `compile_fn()` returns
        (files, metadata). Returns (entry, hit)."""
        entry = self.get(key)
        if entry is not None:
            return entry, True
        files, metadata = compile_fn()
        return self.put(key, files, metadata), False

    def clear(self) -> None:
        """Delete every entry."""
        if self.root.is_dir():
            for child in self.root.iterdir():
                if child.is_dir():
                    shutil.rmtree(child, ignore_errors=True)


# --------------------------------------------------------------------------------------------
# The lookup of one compile

def compile_cached(source_hash: str, options, build: Callable, restore: Callable,
                   env: Mapping[str, str] | None = None):
    """A compiled kernel through the disk cache: the key is made from `source_hash`, the
    options' `key_parts()` and `target`; a hit is `restore(entry, options)`, a miss is
    `build()`, stored as its stage files, trace and metadata (TILE_CACHE_DIR and
    TILE_ALWAYS_COMPILE are read here, once per lookup)."""
    cache = KernelCache(CacheOptions.from_env(env))
    key = cache_key(source_hash=source_hash, specialization=None, options=options.key_parts(),
                    target=options.target)
    entry = None if cache.options.always_compile else cache.get(key)
    if entry is not None:
        try:
            return restore(entry, options)
        except Exception as exc:        # whole on disk, but not loadable by this compiler
            cache.reject(entry, f"cannot be loaded: {type(exc).__name__}: {exc}")
    kernel = build()
    metadata = kernel.metadata.to_dict() if kernel.metadata is not None else {}
    cache.put(key, stage_files(kernel.asm, kernel.trace.to_json(indent=None)), metadata)
    return kernel
