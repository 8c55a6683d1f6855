"""Count the `ttg.convert_layout` ops left in each zoo kernel's final ttgir.

Compiles every kernel of tests/kernels_zoo.py (BY_NAME) as far as ttgir, with a fixed seed for
its inputs, and prints one row per kernel: conversions left, loads in the ttir and in the ttgir
(a load must never be duplicated by rematerialization, so the two should match), and, with
`--compare FILE`, the counts recorded earlier with `--save FILE` beside them.
bench/convert_counts_baseline.json holds the counts before the coalesce / remove-layout-conversions
work of issue 4 item 2; bench/convert_counts.md the table made against it.

    python bench/convert_counts.py [--save counts.json] [--compare counts.json] [--only NAME...]
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from compiler.compiler import compile as compile_source  # noqa: E402
from compiler.ir import parse_module  # noqa: E402
from compiler.ir.core import op_count_by_name  # noqa: E402
from tests.kernels_zoo import BY_NAME, make_case  # noqa: E402

SEED = 1234


def ttgir_counts(entry) -> dict:
    """Compile one zoo kernel to ttgir; its conversion and load counts (ttir and ttgir)."""
    case = make_case(entry, SEED)
    fn = entry.kernel
    bound, key = fn.bind(*case.fresh_args(), **case.constexprs, **case.options)[:2]
    spec = fn._specialization(key, bound)
    from compiler.compiler import CompileOptions
    known = CompileOptions.__dataclass_fields__
    options = {k: v for k, v in fn.compile_options(key).items() if k in known}
    kernel = compile_source(fn.source_for(spec), options=options, stop_after="ttgir")
    ttir = op_count_by_name(parse_module(kernel.asm["ttir"], "k.ttir"))
    ttgir = op_count_by_name(parse_module(kernel.asm["ttgir"], "k.ttgir"))
    return {"convert_layout": ttgir.get("ttg.convert_layout", 0),
            "loads_ttir": ttir.get("tt.load", 0), "loads_ttgir": ttgir.get("tt.load", 0)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--save", type=Path, help="write the counts to this JSON file")
    parser.add_argument("--compare", type=Path, help="a JSON file from --save to compare with")
    parser.add_argument("--only", nargs="*", help="kernel names (default: all)")
    args = parser.parse_args(argv)
    names = args.only or sorted(BY_NAME)
    before = json.loads(args.compare.read_text()) if args.compare else {}
    counts: dict = {}
    header = "| kernel | convert_layout | loads ttir -> ttgir |"
    if before:
        header = ("| kernel | convert_layout before | convert_layout after | loads ttir -> ttgir "
                  "before | loads ttir -> ttgir after |")
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    for name in names:
        try:
            row = ttgir_counts(BY_NAME[name])
        except Exception as err:  # noqa: BLE001 - a table row, not a crash, per broken kernel
            print(f"| {name} | error: {type(err).__name__}: {err} |")
            continue
        counts[name] = row
        loads = f"{row['loads_ttir']} -> {row['loads_ttgir']}"
        if before:
            old = before.get(name, {})
            old_loads = f"{old.get('loads_ttir', '?')} -> {old.get('loads_ttgir', '?')}"
            print(f"| {name} | {old.get('convert_layout', '?')} | {row['convert_layout']} | "
                  f"{old_loads} | {loads} |")
        else:
            print(f"| {name} | {row['convert_layout']} | {loads} |")
    total = sum(r["convert_layout"] for r in counts.values())
    if before:
        old_total = sum(before[n]["convert_layout"] for n in counts if n in before)
        print(f"| **total** | {old_total} | {total} | | |")
    else:
        print(f"| **total** | {total} | |")
    if args.save:
        args.save.write_text(json.dumps(counts, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
