"""A larger run of the IR fuzzer than the CPU tier's (tests/cpu/test_fuzz_ir.py): mutate the
printed IR of the sample kernels, the CPU tests' kernels and Triton's reference ttir/ttgir, and
count how the parser and verifier took each mutant.

    python scripts/fuzz_ir.py --count 10000 --seed 1

Outcomes: parsed-ok (accepted, and print -> parse -> print is the identity), parse-error /
verify-error (rejected with file:line:col, the line and a caret), and the bad ones: unlocated,
safety-net (an internal exception turned into a message), round-trip, crash, slow (> 5 s).
Exits 1 when any bad outcome occurred; `--show N` prints the first N bad mutants.
"""
from __future__ import annotations

import argparse
import collections
import json
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.ir_corpus import verified_corpus  # noqa: E402
from tests.ir_fuzz import BAD, check, mutate  # noqa: E402

SLOW_S = 5.0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--show", type=int, default=3, help="print this many bad mutants")
    ap.add_argument("--json", type=Path, help="write the counts here")
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)
    starts = verified_corpus()
    counts: collections.Counter = collections.Counter()
    bad: list[tuple[str, str, str]] = []
    began = time.perf_counter()
    for _ in range(args.count):
        name, text = rng.choice(starts)
        mutant = mutate(rng, text, rng.choice([1, 1, 2, 3]))
        t0 = time.perf_counter()
        outcome = check(mutant, name)
        kind = "slow" if time.perf_counter() - t0 > SLOW_S else outcome.kind
        counts[kind] += 1
        if kind in BAD + ("slow",) and len(bad) < args.show:
            bad.append((kind, outcome.message, mutant))
    elapsed = time.perf_counter() - began
    print(f"{args.count} mutants of {len(starts)} seed modules, seed {args.seed}, "
          f"{elapsed:.1f} s")
    for kind, n in counts.most_common():
        print(f"  {kind:13s} {n}")
    for kind, message, mutant in bad:
        print(f"--- {kind}: {message}\n{mutant}\n")
    if args.json:
        args.json.write_text(json.dumps({"count": args.count, "seed": args.seed,
                                         "seconds": round(elapsed, 1), "outcomes": counts},
                                        indent=2) + "\n")
    return 1 if any(counts[k] for k in BAD + ("slow",)) else 0


if __name__ == "__main__":
    sys.exit(main())
