"""Lowering fuzzing: mutate the layouts, shapes, element types and constants of ttgir (the
sample kernels' and Triton 3.6's reference ttgir) and compile every mutant the parser and
verifier accept down to PTX (issue 14, item 3).

Every accepted mutant must either reach PTX or stop with a user-facing error (a
`LoweringError` naming the op, its layouts and its source line; a `PassOrderError`; a
`MetadataError`; ptxas/LLVM rejections are not reached since we stop at PTX). An internal
exception (ZeroDivisionError, IndexError, an LLVM parse error, ...) or a hang is a failure.
The CPU tier runs a bounded number of examples (tests/cpu/test_lowering_fuzz.py); the larger
run is this file as a script:

    python -m tests.fuzz_lowering --runs 2000 --seed 1

prints the counts per outcome (recorded in docs/reliability.md, "Lowering").
"""
from __future__ import annotations

import argparse
import functools
import random
import re
import sys
import time
from collections import Counter
from pathlib import Path

from tests.fuzz_common import Hang, Outcome as FuzzOutcome, time_limit

SAMPLE_KERNELS = ("vector_add", "softmax", "layernorm", "matmul")
HANG_SECONDS = 20
#: Values a layout field or a shape dimension is replaced by (odd, zero, huge, float, ...).
ODD_NUMBERS = ("0", "1", "2", "3", "5", "7", "8", "16", "33", "64", "128", "1000", "4096",
               "99999999999", "-1", "1.5")
ELEMENT_TYPES = ("f32", "f16", "bf16", "f64", "i1", "i8", "i16", "i32", "i64")
#: Outcomes that are fine; anything else fails the property.
ACCEPTED = ("compiled", "rejected", "lowering-error", "refused")


class Outcome(FuzzOutcome):
    """What a mutant did: one of ACCEPTED, or "internal", "hang"; and why."""

    ACCEPTED = ACCEPTED


# ---- seeds ---------------------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def seeds() -> tuple[tuple[str, str], ...]:
    """(name, ttgir text) of every seed: the sample kernels' ttgir as our compiler prints it,
    and Triton's reference ttgir files our parser reads."""
    from compiler.compiler import compile as compile_source
    from tests.fuzz_pipelines import _sample
    out = []
    for kernel in SAMPLE_KERNELS:
        source, options, _, _, _ = _sample(kernel)
        compiled = compile_source(source, options=options, stop_after="ttgir")
        out.append((kernel, compiled.trace.stages["ttgir"]))
    from compiler.ir import parse_module
    for path in sorted(_reference_dir().glob("*.ttgir")):
        text = path.read_text()
        try:
            parse_module(text, str(path))
        except Exception:      # a reference file our parser does not read yet: not a seed
            continue
        out.append((f"triton:{path.stem}", text))
    return tuple(out)


def _reference_dir() -> Path:
    """Triton's reference outputs: the tests' folder (TILE_REFERENCE_DIR, shared/ beside the
    checkout), else shared/ beside the folder of worktrees."""
    from tests.conftest import PROJECT_ROOT, REFERENCE
    if REFERENCE.is_dir():
        return REFERENCE
    return PROJECT_ROOT.parent.parent / "shared" / "reference" / "triton-3.6-h200"


# ---- mutations -----------------------------------------------------------------------------
_LAYOUT_FIELD = re.compile(r"(sizePerThread|threadsPerWarp|warpsPerCTA|order|CTAsPerCGA|"
                           r"CTASplitNum|CTAOrder|instrShape|versionMinor|versionMajor|"
                           r"kWidth|opIdx|dim|vec|perPhase|maxPhase)\s*=\s*(\[[^\]]*\]|-?[\d.]+)")
_SHAPE = re.compile(r"tensor<((?:\d+x)+)")
_ELEMENT = re.compile(r"\b(f16|bf16|f32|f64|i1|i8|i16|i32|i64)\b")
_INT_CONST = re.compile(r"(-?\d+) : (i32|i64)")
_NUM_WARPS = re.compile(r'("ttg\.(?:num-warps|threads-per-warp)" = )(\d+)')


def _odd_list(rng: random.Random, text: str) -> str:
    items = [s.strip() for s in text.strip("[]").split(",") if s.strip()]
    shape = rng.choice(("one", "one", "length", "all"))
    if shape == "length":
        items = items + [rng.choice(ODD_NUMBERS)] if rng.random() < 0.5 or len(items) < 2 \
            else items[:-1]
    elif shape == "all":
        items = [rng.choice(ODD_NUMBERS) for _ in items]
    elif items:
        items[rng.randrange(len(items))] = rng.choice(ODD_NUMBERS)
    return "[" + ", ".join(items) + "]"


def _replace_one(rng: random.Random, pattern: re.Pattern, text: str, fn) -> str | None:
    matches = list(pattern.finditer(text))
    if not matches:
        return None
    m = rng.choice(matches)
    return text[:m.start()] + fn(m) + text[m.end():]


def mutate(rng: random.Random, text: str) -> tuple[str, str]:
    """(kind of mutation, mutated text); one to three mutations of layouts, shapes, element
    types, integer constants or the module's warp attributes."""
    kinds = []
    for _ in range(rng.choice((1, 1, 2, 3))):
        kind = rng.choice(("layout", "layout", "layout", "shape", "element", "constant",
                           "warps"))
        if kind == "layout":
            new = _replace_one(rng, _LAYOUT_FIELD, text, lambda m: f"{m.group(1)} = " + (
                _odd_list(rng, m.group(2)) if m.group(2).startswith("[")
                else rng.choice(ODD_NUMBERS)))
        elif kind == "shape":
            def shape(m):
                dims = m.group(1).split("x")[:-1]
                dims[rng.randrange(len(dims))] = rng.choice(ODD_NUMBERS[:-2])
                return "tensor<" + "x".join(dims) + "x"
            new = _replace_one(rng, _SHAPE, text, shape)
        elif kind == "element":
            new = _replace_one(rng, _ELEMENT, text, lambda m: rng.choice(ELEMENT_TYPES))
        elif kind == "constant":
            new = _replace_one(rng, _INT_CONST, text, lambda m: rng.choice(
                (f"{rng.choice(ODD_NUMBERS)} : {m.group(2)}", f"1.5 : {m.group(2)}",
                 f"{m.group(1)} : f32", f"{m.group(1)} : i1")))
        else:
            new = _replace_one(rng, _NUM_WARPS, text,
                               lambda m: m.group(1) + rng.choice(ODD_NUMBERS[:-2]))
        if new is not None:
            text = new
            kinds.append(kind)
    return "+".join(kinds) or "none", text


# ---- running one mutant --------------------------------------------------------------------

def run_mutant(text: str, name: str = "mutant.ttgir") -> Outcome:
    """Parse and verify `text`; compile an accepted module to PTX; classify what happened."""
    from compiler.codegen.lowering import LoweringError
    from compiler.compiler import compile as compile_source
    from compiler.frontend.errors import CompilationError
    from compiler.ir import parse_module
    from compiler.ir.parser import ParseError
    from compiler.ir.verifier import verify_module
    from compiler.ir.verifier_errors import VerificationError
    from compiler.metadata import MetadataError
    from compiler.passes.manager import PipelineError
    from compiler.codegen.backend import OptionError
    from compiler.watchdog import StageTimeout
    with time_limit(HANG_SECONDS):
        try:
            module = parse_module(text, name)
            verify_module(module)
        except (ParseError, VerificationError) as err:
            return Outcome("rejected", str(err).splitlines()[0])
        except Hang as err:
            return Outcome("hang", f"parse/verify {err}")
        except Exception as err:  # the registry helper's business; counted, not ours
            return Outcome("rejected", f"(verifier crash) {type(err).__name__}: {err}")
        try:
            compiled = compile_source(module, options={"build_cubin": False,
                                                       "build_sass": False},
                                      stop_after="ptx")
        except LoweringError as err:
            return Outcome("internal" if err.internal else "lowering-error", str(err))
        except (PipelineError, MetadataError, OptionError, CompilationError,
                StageTimeout) as err:
            return Outcome("refused", f"{type(err).__name__}: {err}")
        except Hang as err:
            return Outcome("hang", str(err))
        except Exception as err:  # the property: nothing else may escape
            return Outcome("internal", f"{type(err).__name__}: {err}")
    if ".entry" not in compiled.asm.get("ptx", ""):
        return Outcome("internal", "no PTX entry was produced")
    return Outcome("compiled")


# ---- the larger run ------------------------------------------------------------------------
def main(argv=None) -> int:
    """Run `--runs` random mutants from `--seed`; print counts and every failing mutant."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--save", help="folder to write failing mutants into")
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    pool = seeds()
    counts: Counter = Counter()
    kinds: Counter = Counter()
    failures = []
    start = time.perf_counter()
    for i in range(args.runs):
        name, text = rng.choice(pool)
        kind, mutant = mutate(rng, text)
        outcome = run_mutant(mutant, f"{name}-{i}.ttgir")
        counts[outcome.kind] += 1
        if not outcome.ok:
            kinds[outcome.detail.split(":")[0]] += 1
            failures.append((name, kind, i, outcome))
            if args.save:
                Path(args.save).mkdir(parents=True, exist_ok=True)
                Path(args.save, f"{i}-{name.replace(':', '_')}.ttgir").write_text(mutant)
    elapsed = time.perf_counter() - start
    print(f"{args.runs} ttgir mutants (seed {args.seed}, seeds: "
          f"{', '.join(n for n, _ in pool)}) in {elapsed:.0f} s")
    for kind in ACCEPTED + ("internal", "hang"):
        print(f"  {kind:15s} {counts[kind]}")
    for what, n in kinds.most_common():
        print(f"  failure class {what}: {n}")
    for name, kind, i, outcome in failures:
        print(f"FAIL {outcome.kind} #{i} {name} ({kind}): {outcome.detail[:300]}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
