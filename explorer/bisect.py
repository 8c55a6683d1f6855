"""`tile-explore bisect`: find the first pass that changes what a kernel computes.

    tile-explore bisect FILE [--kernel K] [--passes STAGE=PIPELINE]... [--seed N] [--gpu]
                        [--context N] [-- script args]

FILE is a kernel script (run under the interpreter; each kernel it launches is checked with its
last launch's arguments, float arrays refilled with seeded random numbers) or a .ttir file.
The interpreter runs the unoptimized ttir (the reference) and the module after every ttir and
ttgir pass (`compiler.inspect.bisect`, the door to `compiler.differential`); `--gpu` instead compiles pipelines cut after each pass
and compares their GPU outputs. Printed per kernel: the first differing pass, how many output
elements differ, and that pass's IR diff. Exit status 0 when every pass keeps the results, 1
when one does not, 2 when the script, the arguments or the pipeline order are wrong (the
reference cannot run, or a pass cannot run where it is put).
"""
from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path

STAGES = ("ttir", "ttgir")


def bisect_parser() -> argparse.ArgumentParser:
    """The parser of `tile-explore bisect`."""
    parser = argparse.ArgumentParser(prog="tile-explore bisect",
                                     description="Name the first pass whose output differs "
                                                 "from the unoptimized reference.")
    parser.add_argument("file", help="kernel script (run as __main__) or .ttir file")
    parser.add_argument("--kernel", help="only this kernel")
    parser.add_argument("--passes", action="append", default=[], metavar="STAGE=PIPELINE",
                        help="the ttir or ttgir pipeline to check (repeatable)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    parser.add_argument("--gpu", action="store_true",
                        help="compare GPU outputs of pipelines cut after each pass")
    parser.add_argument("--context", type=int, default=3, help="diff context lines")
    return parser


def parse_passes(items: list[str]) -> dict:
    """{stage: pipeline} from `STAGE=PIPELINE` arguments, checked by the door (ttir and ttgir
    only: the passes the interpreter can run after)."""
    import compiler.inspect as door
    for item in items:
        stage = item.partition("=")[0].strip().lower()
        if stage not in STAGES:
            raise ValueError(f"--passes {item!r}: bisect checks the {' and '.join(STAGES)} "
                             f"pipelines (STAGE=PIPELINE with STAGE one of {', '.join(STAGES)})")
    return door.parse_stage_overrides(items)


def render(report, context: int = 3) -> str:
    """A report as the terminal shows it: summary, per-pass table up to the first difference,
    then the differing pass's IR diff."""
    lines = [report.summary()]
    for check in report.checks:
        mark = "ok" if check.ok else "DIFFERS"
        what = check.error or (f"{check.mismatched}/{check.total} differ" if check.total
                               else "")
        change = "" if check.changed else " (no change)"
        lines.append(f"  {mark:8s} {check.label}{change} {what}".rstrip())
        if check is report.first:
            break
    if report.first is not None:
        diff = report.diff(context)
        lines.append(f"IR diff of {report.first.label}:" if diff else
                     f"{report.first.label} did not change the IR it received")
        if diff:
            lines.append(diff.rstrip("\n"))
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    """`tile-explore bisect ...` (see module doc)."""
    own, script_args = (argv[:argv.index("--")], argv[argv.index("--") + 1:]) if "--" in argv \
        else (argv, [])
    args = bisect_parser().parse_args(own)
    if not Path(args.file).is_file():
        print(f"tile-explore bisect: {args.file}: no such file", file=sys.stderr)
        return 2
    import compiler.inspect as door
    try:
        pipelines = parse_passes(args.passes)
        with contextlib.redirect_stdout(sys.stderr):    # the script's prints go to stderr
            reports = door.bisect(args.file, args.kernel, pipelines, seed=args.seed,
                                  gpu=args.gpu, script_args=script_args)
    except Exception as error:  # the script or the file is wrong: report it, no traceback
        print(f"tile-explore bisect: {args.file}: {type(error).__name__}: {error}",
              file=sys.stderr)
        return 2
    for report in reports:
        print(render(report, args.context))
    if any(r.reference_error or (r.pipeline_error and r.first is None) for r in reports):
        return 2
    return 0 if all(r.ok for r in reports) else 1
