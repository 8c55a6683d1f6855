"""Where a kernel's source text comes from, when `inspect` cannot read it from a file.

Two cases Triton code relies on:
* a `@jit` function whose source was replaced with `JITFunction._unsafe_update_src(text)`:
  the JITFunction holds the text, and `updated_source(jitfn)` hands it to the front end;
* a function defined by `exec(source_string)` (Triton's tests build kernels that way): Python
  keeps no copy of an exec'd string, so an audit hook (`sys.addaudithook`, installed once when
  this module is imported) remembers the last `EXEC_SOURCES_KEPT` strings compiled under the
  name "<string>", and `exec_source(fn)` finds the one that defines `fn` at its first line.
  The found text is registered with `linecache` under a name of its own, so tracebacks, error
  carets and the interpreter's source excerpts show it.
"""
from __future__ import annotations

import collections
import inspect
import itertools
import linecache
import sys

#: How many exec'd source strings are remembered (newest first searched).
EXEC_SOURCES_KEPT = 256

_exec_sources: collections.deque = collections.deque(maxlen=EXEC_SOURCES_KEPT)
_names = itertools.count(1)
_found: dict = {}          # (source text, first line) -> linecache name given to it


def _remember_exec_source(event: str, args: tuple) -> None:
    """Audit hook: keep strings compiled from "<string>" that define a function."""
    if event != "compile" or len(args) < 2 or args[1] != "<string>":
        return
    text = args[0]
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError:
            return
    if isinstance(text, str) and "def " in text:
        _exec_sources.appendleft(text)


sys.addaudithook(_remember_exec_source)


def exec_source(fn) -> tuple[list, int, str] | None:
    """`(lines, first line, file name)` of a function defined by an exec'd string, or None.
    The file name is a linecache entry made for that string ("<exec'd source N>")."""
    code = getattr(fn, "__code__", None)
    if code is None or code.co_filename != "<string>":
        return None
    first = code.co_firstlineno
    for text in list(_exec_sources):
        lines = text.splitlines(keepends=True)
        if first > len(lines) or not _defines_at(lines, first - 1, code.co_name):
            continue
        block = inspect.getblock(lines[first - 1:])
        key = (text, first)
        name = _found.get(key)
        if name is None:
            name = _found[key] = f"<exec'd source {next(_names)}>"
            linecache.cache[name] = (len(text), None, lines, name)
        return list(block), first, name
    return None


def _defines_at(lines: list, index: int, name: str) -> bool:
    """True when a `def name(` starts at `lines[index]`, after any decorator lines."""
    for line in lines[index:index + 32]:
        stripped = line.strip()
        if stripped.startswith("@") or not stripped:
            continue
        return stripped.startswith((f"def {name}(", f"def {name} (", f"async def {name}("))
    return False


def updated_source(obj) -> str | None:
    """The text given to `obj._unsafe_update_src`, when `obj` is a JITFunction whose source
    was replaced; None otherwise."""
    return getattr(obj, "_updated_src", None)
