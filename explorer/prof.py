"""`tile-explore prof`: print a profile's tree, or run a script or pytest under a profiler session.

    tile-explore prof PROFILE.hatchet [-m time/ms,count,pct,rate] [--depth N]
                      [-i REGEX | -e REGEX] [--list] [--roofline]
    tile-explore prof [-n NAME] [--context shadow|python] [--hook triton]
                      [--format hatchet|chrome_trace] -- script.py args...
    tile-explore prof [...] -- pytest args...

The second form is the `proton` command: the script runs as `__main__` with the `triton`
alias installed, inside one session (its own `proton.start()` calls join it), and the profile
is written to NAME.hatchet (default: the script's name) and printed.
"""
from __future__ import annotations

import argparse
import runpy
import sys
import traceback
from pathlib import Path


def prof_parser() -> argparse.ArgumentParser:
    """The parser of `tile-explore prof`."""
    parser = argparse.ArgumentParser(
        prog="tile-explore prof",
        description="Show a profile's tree, or profile a script / pytest run (after --).")
    parser.add_argument("profile", nargs="?", help="a .hatchet file to print")
    parser.add_argument("-m", "--metrics", default=None,
                        help="comma-separated metrics: time/s|ms|us|ns, avg_time/UNIT, count, "
                             "pct, rate (TFLOP/s and GB/s), [g|t]flop[8|16|32|64]/s, "
                             "[g|t]byte/s, or a metric of the file")
    parser.add_argument("-d", "--depth", type=int, default=100, help="levels of the tree shown")
    parser.add_argument("-i", "--include", help="keep only paths through frames matching REGEX")
    parser.add_argument("-e", "--exclude", help="drop frames matching REGEX and their children")
    parser.add_argument("-l", "--list", action="store_true", help="list the metrics available")
    parser.add_argument("--roofline", action="store_true",
                        help="also draw each kernel against the device's peak GB/s and TFLOP/s")
    parser.add_argument("-n", "--name", help="profile name when running a script")
    parser.add_argument("--context", default="shadow", choices=("shadow", "python"))
    parser.add_argument("--hook", default=None, choices=("triton",))
    parser.add_argument("--format", default="hatchet", choices=("hatchet", "chrome_trace"))
    return parser


def show(path: str, args) -> int:
    """Print the tree of the profile at `path` as `args` asks."""
    import compiler.inspect as door

    root, metadata = door.load_profile(path)
    if args.list:
        print("\n".join(door.profile_metric_choices(root)))
        return 0
    metrics = tuple(m.strip() for m in args.metrics.split(",")) if args.metrics \
        else door.default_profile_metrics()
    print(door.render_profile(root, metrics, depth=args.depth, include=args.include,
                              exclude=args.exclude))
    if args.roofline:
        print(door.draw_roofline(root, metadata.get("device", {})))
    timing = metadata.get("timing", {})
    if timing:
        method = timing.get("method")
        note = f"timed with {method}" + (" clock (interpreter)" if method == "wall" else "")
        if timing.get("why"):
            note += f" (fallback: {timing['why']})"
        print(note)
    return 0


def _user_error(error: BaseException, script: str) -> str:
    """`file:line: Type: message` at the script's innermost frame (no traceback of ours)."""
    frames = [f for f in traceback.extract_tb(error.__traceback__)
              if not f.filename.startswith(str(Path(__file__).resolve().parents[1]))]
    where = f"{frames[-1].filename}:{frames[-1].lineno}: " if frames else f"{script}: "
    return f"{where}{type(error).__name__}: {error}"


def _runner(command: list[str]):
    """(profile name, function running `command` in-process) for a script and its args or
    `pytest ...` (a leading `python` / `python -m` is allowed); None when there is no such
    script."""
    if Path(command[0]).name.startswith("python") and len(command) > 1:
        command = command[2:] if command[1] == "-m" else command[1:]
    if command[:1] == ["pytest"]:
        pytest_args = command[1:]

        def run_pytest():
            import pytest
            return int(pytest.main(pytest_args))
        return "pytest", run_pytest
    script = command[0] if command else ""
    if not Path(script).is_file():
        return None

    def run_script():
        saved_argv, saved_path = sys.argv, list(sys.path)
        sys.argv = list(command)
        sys.path.insert(0, str(Path(script).resolve().parent))
        try:
            runpy.run_path(script, run_name="__main__")
        except SystemExit as stop:
            return stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
        finally:
            sys.argv, sys.path[:] = saved_argv, saved_path
        return 0
    return Path(script).stem, run_script


def run(command: list[str], args) -> int:
    """Run `command` under one session, write the profile and print it."""
    import compiler.inspect as door

    found = _runner(command)
    if found is None:
        print(f"tile-explore prof: {' '.join(command)}: no such script (give -- script.py "
              f"args, or -- pytest args)", file=sys.stderr)
        return 2
    default_name, runner = found
    name = args.name or default_name
    status, error = 0, None

    def body():
        try:
            return runner()
        except Exception as failure:    # the user's code failed: keep the profile
            nonlocal error
            error = _user_error(failure, command[0])
            return 1
    status, paths = door.run_profiled(body, name, context=args.context, hook=args.hook,
                                      output_format=args.format)
    if error:
        print(error, file=sys.stderr)
    for path in paths:
        print(f"wrote {path}")
        if args.format == "hatchet":
            show(str(path), args)
    return status or 0


def main(argv: list[str]) -> int:
    """`tile-explore prof ...` (see module doc)."""
    own, command = (argv[:argv.index("--")], argv[argv.index("--") + 1:]) if "--" in argv \
        else (argv, [])
    args = prof_parser().parse_args(own)
    if command:
        return run(command, args)
    if not args.profile:
        prof_parser().print_usage(sys.stderr)
        print("tile-explore prof: give a .hatchet file, or -- script.py / -- pytest ...",
              file=sys.stderr)
        return 2
    import compiler.inspect as door
    try:
        return show(args.profile, args)
    except door.profile_format_error() as bad:
        print(f"tile-explore prof: {bad}", file=sys.stderr)
        return 2
