"""Pipeline-order fuzzing: permutations, subsets and duplications of the default ttir and ttgir
pipelines over the four sample kernels (issue 14, item 4).

Every order must either compile to PTX, with the interpreter's results on the final ttgir equal
to those of the unoptimized ttir, or stop with a user-facing error: a `PassOrderError` (the
order cannot work: it names the pass, what is missing and what to add), a located
`CompilationError`, or a `LoweringError` naming the op. An internal exception, a hang or a
wrong result is a failure. The CPU tier runs a bounded number of examples
(tests/cpu/test_pipeline_fuzz.py); the larger run is this file as a script:

    python -m tests.fuzz_pipelines --runs 1000 --seed 1

prints the counts per outcome (recorded in docs/reliability.md, "Pipeline orders").
"""
from __future__ import annotations

import argparse
import functools
import random
import sys
import time
from collections import Counter
from dataclasses import dataclass

import numpy as np

from compiler.codegen.lowering import LoweringError
from compiler.frontend.errors import CompilationError
from compiler.ir import parse_module
from compiler.passes.manager import DEFAULT_PIPELINES
from compiler.passes.requirements import PassOrderError
from tests.fuzz_common import Hang, Outcome as FuzzOutcome, time_limit

TTIR = DEFAULT_PIPELINES["ttir"].split(",")
TTGIR = DEFAULT_PIPELINES["ttgir"].split(",")
#: Passes that belong to the other stage, mixed in now and then (`inline,coalesce` as a ttir
#: pipeline must be refused, not crash).
STRAYS = {"ttir": ["coalesce", "remove-layout-conversions", "convert-triton-to-tritongpu"],
          "ttgir": ["canonicalize", "cse", "dce"]}
KERNELS = ("vector_add", "softmax", "layernorm", "matmul")
#: Outcomes that are fine; anything else fails the property.
ACCEPTED = ("compiled", "refused-order", "compile-error", "lowering-error")
HANG_SECONDS = 30



@dataclass(frozen=True)
class Case:
    """One fuzzed compile: a sample kernel and its ttir and ttgir pipelines."""

    kernel: str
    ttir: tuple[str, ...]
    ttgir: tuple[str, ...]

    def pipelines(self) -> dict:
        return {"ttir": ",".join(self.ttir), "ttgir": ",".join(self.ttgir)}

    def __str__(self) -> str:
        return f"{self.kernel} ttir={','.join(self.ttir)!r} ttgir={','.join(self.ttgir)!r}"


class Outcome(FuzzOutcome):
    """What a case did: one of ACCEPTED, or "internal", "hang", "mismatch"; and why."""

    ACCEPTED = ACCEPTED


# ---- cases ---------------------------------------------------------------------------------
def random_pipeline(rng: random.Random, stage: str) -> tuple[str, ...]:
    """A permutation, subset or duplication of the stage's default pipeline (sometimes with a
    pass of the other stage mixed in)."""
    default = TTIR if stage == "ttir" else TTGIR
    shape = rng.choice(("permutation", "subset", "duplication", "default"))
    if shape == "permutation":
        passes = rng.sample(default, len(default))
    elif shape == "subset":
        passes = [p for p in default if rng.random() < 0.6]
    elif shape == "duplication":
        passes = rng.choices(default, k=rng.randint(1, len(default) + 4))
    else:
        passes = list(default)
    if rng.random() < 0.1:
        passes.insert(rng.randint(0, len(passes)), rng.choice(STRAYS[stage]))
    return tuple(passes)


def random_case(rng: random.Random) -> Case:
    """A random case; the ttgir pipeline is the default one a third of the time, so that ttir
    orders are also checked through a working ttgir pipeline."""
    ttgir = tuple(TTGIR) if rng.random() < 0.33 else random_pipeline(rng, "ttgir")
    return Case(rng.choice(KERNELS), random_pipeline(rng, "ttir"), ttgir)


# ---- running one case ----------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def _sample(kernel: str):
    """(source, compile options, grid, runtime args, output indices) for a sample kernel."""
    from compiler.compiler import CompileOptions
    from compiler.runtime.jit import JITFunction
    from tests.cpu.test_pipeline_samples import SAMPLES
    fn_obj, args, constexprs, grid, outputs = SAMPLES[kernel]()
    fn = JITFunction(fn_obj.fn)
    bound, key = fn.bind(*args, **constexprs)[:2]
    spec = fn._specialization(key, bound)
    options = {k: v for k, v in fn.compile_options(key).items()
               if k in CompileOptions.__dataclass_fields__}
    runtime_args = [bound[i] for i in spec.runtime_params]
    return fn.source_for(spec), options, grid, runtime_args, outputs


def _interpret(module, grid, args, outputs):
    from compiler.runtime.interpreter import interpret
    args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    interpret(module, grid, args)
    return [args[i].astype(np.float32) for i in outputs]


@functools.lru_cache(maxsize=None)
def _reference(kernel: str):
    """The interpreter's results on the kernel's unoptimized ttir."""
    from compiler.compiler import compile as compile_source
    source, options, grid, args, outputs = _sample(kernel)
    compiled = compile_source(source, options=options, pipelines={"ttir": ""},
                              stop_after="ttir")
    return _interpret(parse_module(compiled.trace.stage_inputs["ttir"]), grid, args, outputs)



def run_case(case: Case) -> Outcome:
    """Compile `case` to PTX and compare its ttgir's results with the reference."""
    from compiler.compiler import compile as compile_source
    source, options, grid, args, outputs = _sample(case.kernel)
    want = _reference(case.kernel)
    with time_limit(HANG_SECONDS):
        try:
            compiled = compile_source(source, options={**options, "build_cubin": False,
                                                       "build_sass": False},
                                      pipelines=case.pipelines(), stop_after="ptx")
            got = _interpret(compiled.ttgir_module, grid, args, outputs)
        except PassOrderError as err:
            return Outcome("refused-order", str(err))
        except CompilationError as err:
            return Outcome("compile-error", str(err))
        except LoweringError as err:
            return Outcome("lowering-error", str(err))
        except Hang as err:
            return Outcome("hang", str(err))
        except Exception as err:  # the property: nothing else may escape
            return Outcome("internal", f"{type(err).__name__}: {err}")
    if ".entry" not in compiled.asm.get("ptx", ""):
        return Outcome("internal", "no PTX entry was produced")
    for w, g in zip(want, got):
        if not np.allclose(g, w, rtol=2e-3, atol=2e-3, equal_nan=True):
            bad = int(np.sum(~np.isclose(g, w, rtol=2e-3, atol=2e-3, equal_nan=True)))
            return Outcome("mismatch", f"{bad} of {w.size} elements differ")
    return Outcome("compiled")


# ---- the larger run ------------------------------------------------------------------------
def main(argv=None) -> int:
    """Run `--runs` random cases from `--seed`; print counts and every failing case."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    counts: Counter = Counter()
    per_kernel: Counter = Counter()
    failures = []
    start = time.perf_counter()
    for _ in range(args.runs):
        case = random_case(rng)
        outcome = run_case(case)
        counts[outcome.kind] += 1
        per_kernel[case.kernel] += 1
        if not outcome.ok:
            failures.append((case, outcome))
    elapsed = time.perf_counter() - start
    print(f"{args.runs} pipeline orders (seed {args.seed}) in {elapsed:.0f} s; "
          f"kernels: {dict(sorted(per_kernel.items()))}")
    for kind in ACCEPTED + ("internal", "hang", "mismatch"):
        print(f"  {kind:15s} {counts[kind]}")
    for case, outcome in failures:
        print(f"FAIL {outcome.kind}: {case}\n     {outcome.detail[:300]}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
