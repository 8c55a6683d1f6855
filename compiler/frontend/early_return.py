"""Early `return` inside an `if`, rewritten away before code generation.

A kernel such as `if row >= n_rows: return` followed by the work has no structured form in
scf: an scf.if region cannot leave the function. `fold_early_returns(stmts)` moves the
statements that follow such an `if` into each of its branches that does not return, so that
every `return` ends the statement list it is in:

    if c:            if c:
        A                A
        return   ->  else:
    B                    B

A bare `return` (or `return None`) at the end of a list is dropped (falling off the end means
the same). A `return value` inside an `if` becomes an assignment to `RETURN_NAME`, returned
once at the end, so a device function may return from both branches of a runtime `if` (the
branches must then agree on the type, as any variable an `if` defines). A path that falls off
the end of a function returning a value on another path assigns `NO_RETURN_NAME` instead: the
code generator makes that an undefined value (`ub.poison`) of the returned type where a
runtime `if` joins the paths, as Triton does, and no value where a compile-time `if` picked
the falling path. Loops are not entered:
a `return` inside a loop stays, and the code generator rejects it. The rewrite copies the
following statements into both branches when both fall through.
"""
from __future__ import annotations

import ast

#: The variable a `return value` inside an `if` assigns (not a name Python code can spell
#: by accident: it is reserved by the double underscores and the `tile` prefix).
RETURN_NAME = "__tile_return_value__"
#: What a path that returns no value assigns to RETURN_NAME (the code generator reads it as
#: "no value here": ub.poison where a runtime `if` joins it with a returned value).
NO_RETURN_NAME = "__tile_no_return_value__"


def contains_return(stmts) -> bool:
    """True when a `return` is among `stmts` or inside their `if`s (loops not entered)."""
    for stmt in stmts:
        if isinstance(stmt, ast.Return):
            return True
        if isinstance(stmt, ast.If) and (contains_return(stmt.body) or
                                         contains_return(stmt.orelse)):
            return True
        if isinstance(stmt, (ast.With, ast.AsyncWith, ast.Try)) and \
                contains_return(getattr(stmt, "body", [])):
            return True
    return False


def _is_bare(node: ast.Return) -> bool:
    return node.value is None or (isinstance(node.value, ast.Constant) and
                                  node.value.value is None)


def fold_early_returns(stmts: list) -> list:
    """A function body with the statements after each returning `if` moved into its branches
    and the values returned inside `if`s assigned to `RETURN_NAME`, returned at the end."""
    folded = _fold(stmts)
    if not (folded and isinstance(folded[-1], ast.If) and _some_path_returns(folded[-1])):
        return folded
    last = folded[-1]
    where = _last_value_return(last)
    name = ast.copy_location(ast.Name(id=RETURN_NAME, ctx=ast.Load()), where)
    ret = ast.copy_location(ast.Return(value=name), where)
    return folded[:-1] + [_assign_returns(last), ret]


def _some_path_returns(stmt) -> bool:
    """True when a branch of the folded `if` ends in a `return value` (nested ifs alike)."""
    def ends_in_value(stmts) -> bool:
        if not stmts:
            return False
        last = stmts[-1]
        if isinstance(last, ast.Return):
            return not _is_bare(last)
        return isinstance(last, ast.If) and _some_path_returns(last)
    return ends_in_value(stmt.body) or ends_in_value(stmt.orelse)


def _last_value_return(stmt):
    return [n for n in ast.walk(stmt) if isinstance(n, ast.Return) and not _is_bare(n)][-1]


def _assign_returns(stmt):
    """`stmt` (a folded `if`) with each branch's final `return value` turned into an
    assignment to `RETURN_NAME`, and each branch that falls off the end assigning
    `NO_RETURN_NAME` to it."""
    def assign(value, where):
        target = ast.copy_location(ast.Name(id=RETURN_NAME, ctx=ast.Store()), where)
        return ast.copy_location(ast.Assign(targets=[target], value=value), where)

    def branch(stmts):
        last = stmts[-1] if stmts else None
        if isinstance(last, ast.Return) and not _is_bare(last):
            return stmts[:-1] + [assign(last.value, last)]
        if isinstance(last, ast.If) and _some_path_returns(last):
            return stmts[:-1] + [_assign_returns(last)]
        none = ast.copy_location(ast.Name(id=NO_RETURN_NAME, ctx=ast.Load()), stmt)
        return stmts + [assign(none, stmt)]
    return ast.copy_location(ast.If(test=stmt.test, body=branch(stmt.body),
                                    orelse=branch(stmt.orelse)), stmt)


def _fold(stmts: list) -> list:
    """`stmts` with the statements after each returning `if` moved into its branches."""
    out: list = []
    for index, stmt in enumerate(stmts):
        if isinstance(stmt, ast.Return):
            if not _is_bare(stmt):
                out.append(stmt)
            return out
        if isinstance(stmt, ast.If) and contains_return([stmt]):
            rest = stmts[index + 1:]
            folded = ast.If(test=stmt.test, body=_fold(stmt.body + rest),
                            orelse=_fold(stmt.orelse + rest))
            out.append(ast.copy_location(folded, stmt))
            return out
        out.append(stmt)
    return out
