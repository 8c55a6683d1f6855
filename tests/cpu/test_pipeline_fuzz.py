"""Property: every permutation, subset or duplication of the default ttir and ttgir pipelines,
on the four sample kernels, compiles to PTX with the unoptimized ttir's interpreter results, or
stops with a user-facing error (PassOrderError, located CompilationError, LoweringError); never
an internal exception, a hang or a wrong result. The larger run: `python -m tests.fuzz_pipelines`."""
from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fuzz_pipelines import KERNELS, STRAYS, TTGIR, TTIR, Case, run_case


def pipelines(stage: str):
    default = TTIR if stage == "ttir" else TTGIR
    return st.one_of(st.permutations(default),
                     st.lists(st.sampled_from(default), max_size=len(default) + 4),
                     st.lists(st.sampled_from(default + STRAYS[stage]), max_size=6)).map(tuple)


CASES = st.builds(Case, st.sampled_from(KERNELS), pipelines("ttir"),
                  st.one_of(st.just(tuple(TTGIR)), pipelines("ttgir")))


@settings(max_examples=80, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(case=CASES)
def test_every_pipeline_order_compiles_right_or_says_why(case):
    outcome = run_case(case)
    assert outcome.ok, f"{case}: {outcome.kind}: {outcome.detail}"


def test_the_property_catches_a_miscompiling_pass(monkeypatch):
    """The comparison is not vacuous: a coalesce that swaps the operands of every subtraction
    is reported as a mismatch on softmax (x - max)."""
    from compiler.dialects.arith import BINARY_OPS
    from compiler.passes.ttgir_coalesce import Coalesce
    original = Coalesce.run

    def miscompile(self, module, ctx):
        original(self, module, ctx)
        for op in module.walk():
            if isinstance(op, BINARY_OPS["subf"]):
                a, b = op.operands
                op.set_operands([b, a])

    monkeypatch.setattr(Coalesce, "run", miscompile)
    outcome = run_case(Case("softmax", tuple(TTIR), tuple(TTGIR)))
    assert outcome.kind == "mismatch", outcome
