"""Timing another build of a kernel on the arguments of a launch the user's script made, for
`tile-explore compare`'s runtime row, and saying why there is no runtime when it cannot be done.

The recorder holds each kernel's last launch arguments weakly (`LaunchArguments`), so a build
can be timed only while the script's arrays still exist and a GPU is present. Timing re-launches
the kernel: it writes into the script's output arrays again, as a benchmark loop would.
"""
from __future__ import annotations

from compiler.trace import CompileTrace, Launch

NO_GPU = "not launched: no GPU"
NOT_LAUNCHED = "not launched by the script"
ONLY_INTERPRETED = "not launched: the script ran it through the interpreter"
GPU_DECLINED = "not launched: --no-gpu was given"
UNREACHABLE = "not launched: the recorded launch's arguments are no longer reachable"


def gpu_present() -> bool:
    """Whether the CUDA driver finds a GPU (False when the driver cannot be loaded at all)."""
    from compiler.inspect import gpu_available
    return gpu_available()


def why_not_timed(trace: CompileTrace, arguments, gpu: bool,
                  declined: bool = False) -> str | None:
    """Why the pipelines of `trace` cannot be timed (None when they can): the script never
    launched the kernel, no GPU (or `declined`: --no-gpu), it only ran in the interpreter, or
    its arrays are gone."""
    if not trace.launches:
        return NOT_LAUNCHED
    if not gpu:
        return NO_GPU
    if declined:
        return GPU_DECLINED
    if trace.launches[-1].backend != "gpu":
        return ONLY_INTERPRETED
    if arguments is None or arguments.resolve() is None:
        return UNREACHABLE
    return None


def interpreter_note(traces: list, declined: bool) -> str | None:
    """The line that says launches ran through the interpreter and why (None when every
    launch ran on the GPU), so no screen passes interpreter wall time off as GPU time."""
    count = sum(launch.backend != "gpu" for trace in traces for launch in trace.launches)
    if not count:
        return None
    if declined:
        why = "--no-gpu was given"
    elif not gpu_present():
        why = "no usable NVIDIA GPU here"
    else:
        why = "the script asked for the interpreter"
    return (f"{why}: the script's {count} launch(es) ran through the interpreter, so their "
            "times are interpreter wall time, not GPU time")


def add_gpu_timing(kernel, arguments) -> None:
    """Time `kernel` on `arguments` and record it as a launch of its trace (so the metrics'
    runtime row shows it, labelled gpu)."""
    from compiler.inspect import time_on_gpu
    time_ms = time_on_gpu(kernel, arguments)
    kernel.trace.launches.append(Launch(grid=tuple(arguments.grid), backend="gpu",
                                        time_ms=time_ms, num_warps=kernel.num_warps))
