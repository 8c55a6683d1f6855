"""The architecture's import rules, checked from the source (issue 8, "Done means").

Every `import`/`from` statement (at any depth: lazy imports count) and every
`importlib.import_module("...")` / `__import__("...")` call with a literal (or f-string prefix)
module name is read with `ast`; relative imports are resolved against the importing module.
"""
from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path


ROOT = Path(__file__).resolve().parents[2]


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _string_prefix(node) -> str | None:
    """The module named by a literal, or the constant prefix (up to a dot) of an f-string."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0],
                                                                        ast.Constant):
        prefix = str(node.values[0].value)
        return prefix.rsplit(".", 1)[0] if "." in prefix else None
    return None


def imports_of(path: Path) -> set[str]:
    """Every module `path` imports (statically or through importlib with a literal name)."""
    tree = ast.parse(path.read_text(), str(path))
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if called in ("import_module", "__import__"):
                target = _string_prefix(node.args[0])
                if target:
                    found.add(target)
    return found


@lru_cache(maxsize=None)
def _tree(folder: str) -> dict:
    return {_module_name(p): imports_of(p) for p in sorted((ROOT / folder).rglob("*.py"))}


def _under(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def violations(folder: str, forbidden: tuple[str, ...]) -> list[str]:
    """`importer -> imported` for every import under `folder` of a module in `forbidden`."""
    out = []
    for module, imported in _tree(folder).items():
        for target in sorted(imported):
            if any(_under(target, f) for f in forbidden):
                out.append(f"{module} -> {target}")
    return out


def test_the_reader_sees_lazy_relative_and_importlib_imports():
    sample = ROOT / "compiler" / "passes" / "manager.py"
    found = imports_of(sample)
    assert "compiler.passes.base" in found            # `from .base import ...`
    assert "compiler.passes" in found                 # importlib.import_module("compiler.passes")


def test_nothing_in_the_compiler_imports_the_explorer_or_textual():
    assert violations("compiler", ("explorer", "textual")) == []


def test_the_explorer_imports_only_the_door_and_the_trace_types():
    allowed = ("compiler.inspect", "compiler.trace")
    bad = []
    for module, imported in _tree("explorer").items():
        for target in sorted(imported):
            if _under(target, "compiler") and not any(_under(target, a) for a in allowed):
                bad.append(f"{module} -> {target}")
    assert bad == []


def test_passes_import_neither_the_driver_nor_the_frontend():
    assert violations("compiler/passes", ("compiler.compiler", "compiler.frontend")) == []


def test_codegen_imports_neither_the_driver_nor_the_frontend():
    assert violations("compiler/codegen", ("compiler.compiler", "compiler.frontend")) == []


def test_the_ir_core_imports_no_dialect():
    assert violations("compiler/ir", ("compiler.dialects",)) == []
