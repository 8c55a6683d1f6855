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
the same); a `return value` is kept and handled by the code generator: in an `if` on a
compile-time constant it is the function's result, in one on a runtime value it is an error.
Loops are not entered: a `return` inside a loop stays, and the code generator rejects it.
The rewrite copies the following statements into both branches when both fall through.
"""
from __future__ import annotations

import ast

_LOOPS = (ast.For, ast.While, ast.AsyncFor, ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


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
    """`stmts` with the statements after each returning `if` moved into its branches."""
    out: list = []
    for index, stmt in enumerate(stmts):
        if isinstance(stmt, ast.Return):
            if not _is_bare(stmt):
                out.append(stmt)
            return out
        if isinstance(stmt, ast.If) and contains_return([stmt]):
            rest = stmts[index + 1:]
            folded = ast.If(test=stmt.test, body=fold_early_returns(stmt.body + rest),
                            orelse=fold_early_returns(stmt.orelse + rest))
            out.append(ast.copy_location(folded, stmt))
            return out
        out.append(stmt)
    return out
