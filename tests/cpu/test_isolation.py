"""Compiles in a worker process (issue 14 item 7): a worker that aborts (as LLVM does on a
fatal error) becomes a `CompileCrashed` naming the kernel, stage and pass; the caller lives."""
from __future__ import annotations

import os
import time

import pytest

from compiler.isolation import CompileCrashed, compile_isolated, run_isolated
from compiler.watchdog import report_progress


def _abort_in_the_lowering():
    report_progress("llir")
    report_progress("llir", "convert-tritongpu-to-llvm")
    os.write(2, b"LLVM ERROR: Broken module found, compilation aborted!\n")
    os.abort()


def test_an_aborting_worker_is_an_error_and_the_caller_lives():
    with pytest.raises(CompileCrashed) as info:
        run_isolated(_abort_in_the_lowering, kernel="softmax_kernel")
    message = str(info.value)
    assert message.startswith("compiling softmax_kernel crashed in pass "
                              "'convert-tritongpu-to-llvm' of the llir stage")
    assert "killed by SIGABRT" in message
    assert "its last output:\nLLVM ERROR: Broken module found" in message
    assert (info.value.stage, info.value.pass_name) == ("llir", "convert-tritongpu-to-llvm")
    assert run_isolated(lambda: 6 * 7) == 42         # the caller and the machinery still work


def test_a_plain_abort_is_reported_before_any_stage():
    with pytest.raises(CompileCrashed, match="crashed before its first stage"):
        run_isolated(os.abort, kernel="k")


def test_exceptions_come_back_as_themselves():
    def fail():
        raise KeyError("missing")
    with pytest.raises(KeyError, match="missing"):
        run_isolated(fail)


def test_a_worker_past_its_time_limit_is_stopped():
    start = time.perf_counter()
    with pytest.raises(CompileCrashed, match="ran past 0.5 s"):
        run_isolated(time.sleep, 30, kernel="k", timeout_s=0.5)
    assert time.perf_counter() - start < 10


def test_compile_isolated_gives_the_kernel_back():
    from tests.fuzz_pipelines import _sample
    source, options, _, _, _ = _sample("softmax")
    kernel = compile_isolated(source, {**options, "build_cubin": False}, stop_after="ptx")
    assert kernel.name == "softmax_kernel" and ".entry softmax_kernel" in kernel.asm["ptx"]
    assert kernel.metadata.num_warps == options.get("num_warps", 4)
    assert kernel.ttgir_module.functions()            # modules re-parsed from the trace
    assert [p.name for p in kernel.trace.passes][:1] == ["inline"]
