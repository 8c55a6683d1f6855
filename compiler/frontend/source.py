"""A kernel's source as the front end sees it: the parsed `def`, its file, real line numbers,
the names it can read (globals and closure cells), and the `referenced_globals` summary the jit
hashes into its cache key."""
from __future__ import annotations

import ast
import builtins
import hashlib
import inspect
import os
import textwrap
import types
import weakref
from dataclasses import dataclass, field

from compiler.ir.location import FileLineCol


@dataclass
class FunctionSource:
    """The parsed source of one Python function with the offsets that map AST positions back
    to the file (line of the first source line, columns removed by dedenting)."""

    fn: object
    tree: ast.FunctionDef
    file: str
    lines: list
    first_line: int
    indent: int
    namespace: dict = field(default_factory=dict)
    #: module globals annotated `name: tl.constexpr = value` (readable as compile-time values)
    constexpr_annotated: frozenset = frozenset()

    @classmethod
    def of(cls, fn) -> "FunctionSource":
        """Read the source of `fn` (a function or a JITFunction), dedent it and parse its
        `def`: the text given to `_unsafe_update_src` if any, else the file's text (inspect),
        else the exec'd string that defined it (`source_text`)."""
        lines, first_line, file = read_source_lines(fn)
        fn = getattr(fn, "fn", fn)
        text = "".join(lines)
        dedented = textwrap.dedent(text)
        indent = len(lines[0]) - len(lines[0].lstrip()) if dedented != text else 0
        module = ast.parse(dedented)
        defs = [n for n in module.body if isinstance(n, ast.FunctionDef)]
        if not defs:
            raise TypeError(f"{fn!r} is not a function defined with `def`")
        namespace = dict(getattr(fn, "__globals__", {}))
        annotated = frozenset(name for name, note in namespace.get("__annotations__", {}).items()
                              if is_constexpr_annotation(note))
        if getattr(fn, "__closure__", None):
            for name, cell in zip(fn.__code__.co_freevars, fn.__closure__):
                try:
                    namespace[name] = cell.cell_contents
                except ValueError:
                    pass
                annotated -= {name}
        return cls(fn, defs[0], file, lines, first_line, indent, namespace, annotated)

    def line_of(self, node: ast.AST) -> int:
        """The node's 1-based line in the file."""
        return self.first_line + node.lineno - 1

    def col_of(self, node: ast.AST) -> int:
        """The node's 0-based column in the file."""
        return node.col_offset + self.indent

    def location(self, node: ast.AST) -> FileLineCol:
        """The node's file:line:col location."""
        return FileLineCol(self.file, self.line_of(node), self.col_of(node))

    def position_in_function(self, node: ast.AST) -> tuple:
        """`(function name, line, col)` of `node` as Triton numbers them: line 1 is the `def`
        line, columns are those of the dedented source."""
        return (self.tree.name, node.lineno - self.tree.lineno + 1, node.col_offset)

    def source_line(self, node: ast.AST) -> str:
        """The text of the node's first line."""
        index = node.lineno - 1
        return self.lines[index].rstrip("\n") if 0 <= index < len(self.lines) else ""

    def lookup(self, name: str):
        """(found, value) for a global, closure or Python builtin name."""
        if name in self.namespace:
            return True, self.namespace[name]
        if hasattr(builtins, name):
            return True, getattr(builtins, name)
        return False, None


def read_source_lines(obj) -> tuple[list, int, str]:
    """`(lines, first line, file)` of a function or JITFunction's source (see `of`)."""
    from .source_text import exec_source, updated_source
    fn = getattr(obj, "fn", obj)
    updated = updated_source(obj)
    if updated is not None:
        return updated.splitlines(keepends=True), getattr(obj, "line", 1), \
            getattr(obj, "file", fn.__code__.co_filename)
    try:
        return _file_source(fn)
    except (OSError, TypeError) as exc:
        found = exec_source(fn)
        if found is not None:
            return found
        raise TypeError(f"cannot read the source of {getattr(fn, '__name__', fn)!r} ({exc}); "
                        "kernels and @jit functions must be defined in a source file or by "
                        "exec of a source string") from None


#: code object -> ((mtime, size) of its file, (lines, first line, file)): the sources read from
#: files, reused while the file is unchanged (a compile reads a kernel's source more than once,
#: an autotuner once per config, and each read tokenizes the file's text).
_FILE_SOURCES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _file_source(fn) -> tuple[list, int, str]:
    """`inspect.getsourcelines` of `fn` and its file, remembered per code object and file
    state (a changed file is read again, as `linecache.checkcache` would)."""
    code = fn.__code__
    try:
        status = os.stat(code.co_filename)
        stamp = (status.st_mtime_ns, status.st_size)
    except (OSError, ValueError):
        stamp = None
    cached = _FILE_SOURCES.get(code) if stamp is not None else None
    if cached is not None and cached[0] == stamp:
        lines, first_line, file = cached[1]
        return list(lines), first_line, file
    lines, first_line = inspect.getsourcelines(fn)
    file = inspect.getsourcefile(fn) or code.co_filename
    if stamp is not None:
        _FILE_SOURCES[code] = (stamp, (tuple(lines), first_line, file))
    return lines, first_line, file


#: Modules whose objects (builtins, classes, library functions) a kernel may read as globals.
LANGUAGE_MODULES = ("compiler.language", "compiler.profiler.language")


def is_constexpr_annotation(annotation) -> bool:
    """True for `tl.constexpr` (the class, or the string "tl.constexpr" under postponed
    annotations)."""
    if isinstance(annotation, str):
        return annotation.replace(" ", "").split(".")[-1] == "constexpr"
    return getattr(annotation, "__name__", None) == "constexpr" and isinstance(annotation, type)


def readable_global(value) -> bool:
    """Whether a kernel may read the global or closure value `value` (Triton 3.6's rule):
    compile-time values (`tl.constexpr`, None, dtypes), modules, @jit functions, the
    language's own objects (builtins, classes, library functions) and namedtuple classes.
    Plain numbers, strings, tuples and other data are refused: a kernel is not meant to
    depend on mutable module state (`tl.constexpr(...)` them). Unlike Triton, other functions
    and classes are readable here, so that calling one gets its own, more specific error."""
    from compiler.language.core import builtin_impl, constexpr, dtype
    if value is None or isinstance(value, (constexpr, dtype, types.ModuleType, type,
                                           types.FunctionType, types.BuiltinFunctionType)):
        return True
    if is_jit_function(value) or builtin_impl(value) is not None:
        return True
    module = getattr(value, "__module__", None) or ""
    return any(module == m or module.startswith(m + ".") for m in LANGUAGE_MODULES)


def is_jit_function(obj) -> bool:
    """A `@jit`-decorated function: an object (not a builtin) whose `.fn` is a Python function."""
    return not isinstance(obj, types.ModuleType) and \
        isinstance(getattr(obj, "fn", None), types.FunctionType)


def local_names(tree: ast.FunctionDef) -> set:
    """Parameters and every name the function assigns (these are not globals)."""
    names = {a.arg for a in tree.args.args + tree.args.kwonlyargs}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return names


def referenced_globals(fn, _seen: set | None = None) -> dict:
    """The globals `fn` reads, as name -> a repr-able summary of their value, so that a cache
    key built from them changes when any of them changes (called jit functions contribute a
    hash of their source and, recursively, of the globals they read)."""
    seen = set() if _seen is None else _seen
    src = FunctionSource.of(fn)
    locals_ = local_names(src.tree)
    result: dict = {}
    for node in ast.walk(src.tree):
        if not (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)):
            continue
        if node.id in locals_ or node.id in result or node.id not in src.namespace:
            continue
        result[node.id] = summarize(src.namespace[node.id], seen)
    return result


def summarize(value, seen: set):
    """A stable, repr-able stand-in for a global value."""
    from compiler.language.core import constexpr, dtype
    if isinstance(value, constexpr):
        return ("constexpr", summarize(value.value, seen))
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, dtype):
        return repr(value)
    if isinstance(value, types.ModuleType):
        return ("module", value.__name__)
    if isinstance(value, (tuple, list)):
        return tuple(summarize(v, seen) for v in value)
    if is_jit_function(value):
        inner = value.fn
        key = f"{inner.__module__}.{inner.__qualname__}"
        if key in seen:
            return ("jit", key)
        seen.add(key)
        digest = hashlib.sha256("".join(read_source_lines(value)[0]).encode()).hexdigest()[:16]
        return ("jit", key, digest, tuple(sorted(referenced_globals(value, seen).items())))
    if callable(value):
        return ("callable", getattr(value, "__module__", ""), getattr(value, "__qualname__",
                                                                      repr(value)))
    return ("object", type(value).__name__)
