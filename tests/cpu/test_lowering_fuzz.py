"""Property: every ttgir mutant (layouts, shapes, element types, constants, warp counts of the
sample kernels' and Triton's reference ttgir) that the parser and verifier accept reaches PTX
or stops with a user-facing error; never an internal exception or a hang. The larger run:
`python -m tests.fuzz_lowering`."""
from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fuzz_lowering import mutate, run_mutant, seeds


@settings(max_examples=40, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1))
def test_every_accepted_ttgir_mutant_lowers_or_says_why(seed):
    rng = random.Random(seed)
    name, text = rng.choice(seeds())
    kind, mutant = mutate(rng, text)
    outcome = run_mutant(mutant, f"{name}-mutant.ttgir")
    assert outcome.ok, f"{name} ({kind}): {outcome.kind}: {outcome.detail}"
