"""A Proton-style profiler (`import triton.profiler as proton` through the alias).

    import compiler.profiler as proton
    session = proton.start("matmul", hook="triton")    # every launch from here on is timed
    with proton.scope("forward", {"flops16": 2 * M * N * K}):
        kernel[grid](...)
    proton.finalize()                                  # writes matmul.hatchet

Sessions (`start`, `activate`, `deactivate`, `finalize`, `profile`) live in `session`, scopes
in `scope`, the launch hook (specializations, `launch_metadata`) in `hook`, GPU timing (CUPTI,
CUDA events as fallback) in `timers`/`cupti_timer`, the output formats in `export` and the
terminal view of a hatchet file in `viewer`. Interpreter launches are timed by wall clock.
"""
from compiler.profiler.scope import enter_scope, exit_scope, scope
from compiler.profiler.session import activate, deactivate, finalize, profile, start

__all__ = ["start", "activate", "deactivate", "finalize", "profile", "scope", "enter_scope",
           "exit_scope"]
