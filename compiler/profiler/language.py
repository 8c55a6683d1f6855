"""Proton's `triton.profiler.language` (`import triton.profiler.language as pl`): in-kernel
scopes `pl.enter_scope(name)` / `pl.exit_scope(name)`, timed when the profiler runs with
`mode="instrumentation"` (see `compiler.language.profile`)."""
from compiler.language.profile import enter_scope, exit_scope, profile as scope

__all__ = ["enter_scope", "exit_scope", "scope"]
