"""Property-based fuzzing of the IR parser and verifier (issue 14): mutants of the printed
sample kernels, the CPU tests' kernels and Triton's reference ttir/ttgir are either accepted
and round-trip exactly, or rejected with a located ParseError / VerificationError. Bounded to
300 examples per run; scripts/fuzz_ir.py runs the same property on many more."""
from __future__ import annotations

import random

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from tests.ir_corpus import verified_corpus  # noqa: E402
from tests.ir_fuzz import BAD, check, mutate  # noqa: E402

SEEDS = verified_corpus()


def test_every_seed_round_trips():
    assert len(SEEDS) >= 20
    for name, text in SEEDS:
        outcome = check(text, name)
        assert outcome.kind == "parsed-ok", f"{name}: {outcome.kind}: {outcome.message}"


@settings(max_examples=300, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2**32 - 1), which=st.integers(0, 10**6), rounds=st.integers(1, 3))
def test_mutants_are_rejected_with_a_location_or_round_trip(seed, which, rounds):
    name, text = SEEDS[which % len(SEEDS)]
    mutant = mutate(random.Random(seed), text, rounds)
    outcome = check(mutant, name)
    assert outcome.kind not in BAD, f"{outcome.kind}: {outcome.message}\n--- mutant:\n{mutant}"
