"""Every kernel of tests/kernels_zoo.py, with its ttir optimized by reordered and repeated ttir
pipelines (not just the default one), still matches numpy in the interpreter."""
from __future__ import annotations

import random
import zlib

import pytest

from compiler.compiler import CompileOptions, compile as compile_source
from compiler.passes.manager import DEFAULT_PIPELINES
from tests.kernels_zoo import BY_NAME, ZOO, check_outputs, make_case, run_compiled_ttir, zoo_seed

TTIR_PASSES = DEFAULT_PIPELINES["ttir"].split(",") + ["loop-unroll{max-trip-count=4}",
                                                      "licm{hoist-loads=false}"]


def pipelines_for(name: str) -> dict[str, str]:
    """A reversed default pipeline and a random one with repeats, seeded by the kernel's name."""
    rng = random.Random(zlib.crc32(name.encode()))
    return {"reversed": ",".join(reversed(DEFAULT_PIPELINES["ttir"].split(","))),
            "random": ",".join(rng.choices(TTIR_PASSES, k=12))}


def compile_ttir(entry, case, pipeline: str):
    """The case's specialization compiled to ttir with `pipeline`."""
    fn = entry.kernel
    bound, key = fn.bind(*case.fresh_args(), **case.constexprs, **case.options)[:2]
    spec = fn._specialization(key, bound)
    options = {k: v for k, v in fn.compile_options(key).items()
               if k in CompileOptions.__dataclass_fields__}
    return compile_source(fn.source_for(spec), options=options, pipelines={"ttir": pipeline},
                          stop_after="ttir")


@pytest.mark.parametrize("order", ["reversed", "random"])
@pytest.mark.parametrize("name", [entry.name for entry in ZOO])
def test_reordered_ttir_pipeline_matches_numpy(name, order):
    entry = BY_NAME[name]
    seed = zoo_seed(name)
    case = make_case(entry, seed)
    pipeline = pipelines_for(name)[order]
    compiled = compile_ttir(entry, case, pipeline)
    assert [r.name for r in compiled.trace.passes_of("ttir")] == \
        [p.split("{")[0] for p in pipeline.split(",")]
    got = run_compiled_ttir(entry, case, compiled)
    check_outputs(got, case.expected, entry.interp,
                  f"{name}, ttir after {pipeline} (seed {seed})")
