"""The `tile-explore` command: open the explorer on a kernel file or a saved trace, or run a
headless mode (`--dump`, `--json`, `compare`).

    tile-explore FILE [--kernel NAME] [--dump DIR] [--json] [--passes STAGE=PIPELINE]...
                 [--no-gpu] [-- script args]
    tile-explore --trace trace.json
    tile-explore --triton FILE [-- script args]      the real Triton's passes, same views
    tile-explore --from-triton DUMP                  an MLIR_ENABLE_DUMP text, a
                                                     TRITON_KERNEL_DUMP folder or a TritonParse log
    tile-explore compare FILE --pipeline A --pipeline B [--stage ttgir] [-- script args]
    tile-explore compare FILE --against-triton [--triton-dump DUMP] [-- script args]
    tile-explore serve [--host H] [--port P] FILE ...   the app in a browser (textual-serve)
"""
from __future__ import annotations

import argparse
import contextlib
import json
import sys
from pathlib import Path

from compiler.trace import load_traces
from explorer import bisect, prof
from explorer.metrics import format_table, metric_rows, trace_metrics
from explorer.timing import add_gpu_timing, gpu_present, interpreter_note, why_not_timed


class CompilerMissing(RuntimeError):
    """The compiler (its door, `compiler.inspect`) cannot be imported."""


def _door():
    """The compiler's public API for tools, or CompilerMissing saying why it cannot be used."""
    try:
        import compiler.inspect as door
    except ImportError as error:
        raise CompilerMissing(f"compiler.inspect is not available ({error}); it is needed to "
                              "run kernel files and recompile") from None
    return door


class ProgressLine:
    """The one status line `run_file` rewrites on a terminal's stderr while a script runs.
    The script's own output goes through `wrap(stream)`, which clears the line first, so a
    print never lands in the middle of it (the next tick redraws it below)."""

    def __init__(self, stream) -> None:
        self.stream = stream
        self.shown = False

    def show(self, progress) -> None:
        """`run_file`'s progress callback: rewrite the line."""
        self.stream.write("\r" + progress.line() + "\x1b[K")
        self.stream.flush()
        self.shown = True

    def clear(self) -> None:
        """Erase the line if it is on screen."""
        if self.shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self.shown = False

    def wrap(self, stream):
        """`stream` with every write preceded by `clear()`."""
        return _ClearingStream(stream, self)


class _ClearingStream:
    """A text stream that clears a ProgressLine before each write (all else delegated)."""

    def __init__(self, stream, line: ProgressLine) -> None:
        self._stream, self._line = stream, line

    def write(self, text: str) -> int:
        if text:
            self._line.clear()
        return self._stream.write(text)

    def __getattr__(self, name):
        return getattr(self._stream, name)


def _progress_line(stream=None) -> ProgressLine | None:
    """A ProgressLine on a terminal's stderr (None when stderr is not a terminal: logs and
    pipes get no progress noise)."""
    stream = stream or sys.stderr
    return ProgressLine(stream) if stream.isatty() else None


def _load_trace_file(path: str) -> list:
    """The traces of a saved trace.json; a missing or unreadable file is a `TraceFileError`."""
    if not Path(path).is_file():
        raise TraceFileError(f"{path}: no such trace file")
    try:
        return load_traces(path)
    except json.JSONDecodeError as error:
        raise TraceFileError(f"{path}:{error.lineno}:{error.colno}: not a trace file (invalid "
                             f"JSON: {error.msg})") from None
    except (ValueError, TypeError, KeyError, AttributeError) as error:
        raise TraceFileError(f"{path}: not a trace this version can read ({error})") from None


class TraceFileError(ValueError):
    """A trace file that is missing or cannot be read."""


def _split_script_args(argv: list[str]) -> tuple[list[str], list[str]]:
    if "--" in argv:
        at = argv.index("--")
        return argv[:at], argv[at + 1:]
    return argv, []


def explore_parser() -> argparse.ArgumentParser:
    """The parser of the main mode."""
    parser = argparse.ArgumentParser(
        prog="tile-explore",
        description="Explore what the compiler did to the kernels of a Python file.",
        epilog="Also: tile-explore compare FILE --pipeline A --pipeline B [--stage ttgir]")
    parser.add_argument("file", nargs="?", help="kernel file to run as __main__ (or a trace .json)")
    parser.add_argument("--trace", help="open a saved trace.json instead of running a file")
    parser.add_argument("--kernel", help="only this kernel")
    parser.add_argument("--dump", metavar="DIR", help="write every stage and pass snapshot, exit")
    parser.add_argument("--json", action="store_true", help="print a JSON summary, exit")
    parser.add_argument("--passes", action="append", default=[], metavar="STAGE=PIPELINE",
                        help="override a stage's pass pipeline (repeatable)")
    parser.add_argument("--no-gpu", action="store_true", help="run through the interpreter")
    parser.add_argument("--signature", action="append", default=[], metavar="KERNEL=TYPES",
                        help="compile KERNEL for these argument types, e.g. "
                             "'add_kernel=*fp32,*fp32,*fp32,i32' (repeatable; for kernels the "
                             "script defines but does not launch)")
    parser.add_argument("--constexpr", action="append", default=[],
                        metavar="[KERNEL.]NAME=VALUE",
                        help="a constexpr for --signature kernels and unlaunched ones "
                             "(repeatable), e.g. BLOCK=1024")
    parser.add_argument("--triton", action="store_true",
                        help="run FILE under the real Triton (installed) with its IR dumps on")
    parser.add_argument("--from-triton", metavar="DUMP",
                        help="open the real Triton's artifacts: an MLIR_ENABLE_DUMP text, a "
                             "TRITON_KERNEL_DUMP folder or a TritonParse .ndjson log")
    return parser


def compare_parser() -> argparse.ArgumentParser:
    """The parser of `tile-explore compare`."""
    parser = argparse.ArgumentParser(prog="tile-explore compare",
                                     description="Compare two pass pipelines on a file's kernels.")
    parser.add_argument("file")
    parser.add_argument("--pipeline", action="append", default=[],
                        help="a pipeline string (give it twice: A and B)")
    parser.add_argument("--stage", default="ttgir", choices=("ttir", "ttgir"))
    parser.add_argument("--no-gpu", action="store_true")
    parser.add_argument("--against-triton", action="store_true",
                        help="our pipeline beside the real Triton's, per stage")
    parser.add_argument("--triton-dump", metavar="DUMP",
                        help="with --against-triton: read Triton's artifacts from DUMP instead "
                             "of running FILE under Triton")
    return parser


def summary(traces: list, messages: list, error: str | None) -> dict:
    """The `--json` summary: per kernel its specialization, launches, passes and metrics."""
    kernels = []
    for trace in traces:
        kernels.append({
            "kernel": trace.kernel_name, "specialization": trace.specialization,
            "launches": [{"grid": list(l.grid), "backend": l.backend, "time_ms": l.time_ms}
                         for l in trace.launches],
            "passes": len(trace.passes), "changed_passes": sum(p.changed for p in trace.passes),
            "failed_passes": [p.name for p in trace.passes if p.error],
            "stages": [s for s, text in trace.stages.items() if text],
            "pipelines": {stage: [p.name for p in trace.passes_of(stage)]
                          for stage in ("ttir", "ttgir", "llir") if trace.passes_of(stage)},
            "metrics": trace_metrics(trace), "notes": trace.notes,
        })
    return {"kernels": kernels, "messages": messages, "error": error}


def _dump(traces: list, folder: Path) -> None:
    """One sub-folder per kernel and a trace.json of all (compiler.dump's layout)."""
    _door().dump_traces(traces, folder)
    print(f"wrote {len(traces)} kernel trace(s) under {folder}")


def _open_app(traces, messages, recompiler=None, **prompt) -> int:
    from explorer.app import ExplorerApp          # textual only when the app opens
    ExplorerApp(traces, messages, recompiler=recompiler, **prompt).run()
    return 0


def explore(argv: list[str]) -> int:
    """The main mode: run or load, then dump, print JSON, or open the app."""
    own, script_args = _split_script_args(argv)
    args = explore_parser().parse_args(own)
    if args.triton or args.from_triton:
        return _explore_triton(args, script_args)
    trace_file = args.trace or (args.file if args.file and args.file.endswith(".json") else None)
    if trace_file:
        traces = _load_trace_file(trace_file)
        if args.kernel:
            traces = [t for t in traces if t.kernel_name == args.kernel]

        def reopen(trace, pipelines):
            return _door().recompile(trace, pipelines, isolated=True).trace
        return _finish(args, traces, [f"opened from {trace_file}"], None, recompiler=reopen)
    if not args.file:
        explore_parser().print_usage(sys.stderr)
        print("tile-explore: give a kernel file or --trace trace.json", file=sys.stderr)
        return 2
    if not Path(args.file).is_file():
        print(f"tile-explore: {args.file}: no such file", file=sys.stderr)
        return 2
    door = _door()
    pipelines = door.parse_stage_overrides(args.passes)
    specs = door.parse_kernel_specs(args.signature, args.constexpr)
    line = _progress_line()
    # in headless modes the script's own prints go to stderr, so stdout stays parseable
    out, err = (sys.stderr if args.json else sys.stdout), sys.stderr
    if line is not None:
        out, err = line.wrap(out), line.wrap(err)
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        result = door.run_file(args.file, script_args, interpret=args.no_gpu,
                               pipelines=pipelines, only_kernel=args.kernel,
                               progress=line.show if line else None, specs=specs)
    if line is not None:
        line.clear()

    def recompiler(trace, pipelines):
        arguments = result.recorder.arguments_of(trace) if result.recorder else None
        return door.recompile_for_editor(trace, pipelines, result.kernels.get(trace.kernel_name),
                                         arguments)

    compiled = {trace.kernel_name for trace in result.traces}
    prompt = {"signature_compiler": lambda text: door.compile_with_signature(result.kernels, text),
              "uncompiled": sorted(set(result.kernels) - compiled)}
    interpreted = interpreter_note(result.traces, declined=args.no_gpu)
    messages = ([interpreted] if interpreted else []) + list(result.messages)
    return _finish(args, result.traces, messages, result.error, recompiler, **prompt)


def _triton_traces(file: str | None, dump: str | None, script_args: list) -> tuple:
    """(traces, messages, error) of the real Triton: read from `dump`, or `file` run under it."""
    door = _door()
    if dump:
        return door.load_triton(dump), [f"the real Triton's artifacts, read from {dump}"], None
    if not file or not Path(file).is_file():
        raise ValueError(f"{file}: no such file" if file else "--triton needs a kernel file")
    run = door.run_under_triton(file, script_args)
    return run.traces, run.messages, run.error


def _explore_triton(args, script_args) -> int:
    """`--triton FILE` / `--from-triton DUMP`: Triton's traces in the same views (no
    recompiling: our compiler cannot rerun Triton's pipeline)."""
    traces, messages, error = _triton_traces(None if args.from_triton else args.file,
                                             args.from_triton, script_args)
    if args.kernel:
        traces = [t for t in traces if t.kernel_name == args.kernel]
    if error and not traces and not (args.json or args.dump):
        print(error, file=sys.stderr)
        return 1
    return _finish(args, traces, messages, error, recompiler=None)


def _finish(args, traces, messages, error, recompiler, **prompt) -> int:
    if args.json:
        print(json.dumps(summary(traces, messages, error), indent=1, default=str))
        if error:
            print(error, file=sys.stderr)
        return 1 if error else 0
    if args.dump:
        if error:
            print(error, file=sys.stderr)
        _dump(traces, Path(args.dump))
        return 1 if error else 0
    return _open_app(traces, ([error] if error else []) + messages, recompiler,   # error first
                     **prompt)


def compare(argv: list[str]) -> int:
    """`compare`: recompile each kernel with pipelines A and B and print the metrics table."""
    own, script_args = _split_script_args(argv)
    args = compare_parser().parse_args(own)
    if args.against_triton:
        return compare_against_triton(args, script_args)
    if len(args.pipeline) != 2:
        print("tile-explore compare: give --pipeline exactly twice (A and B)", file=sys.stderr)
        return 2
    door = _door()
    for pipeline in args.pipeline:
        door.check_pipeline(pipeline)
    with contextlib.redirect_stdout(sys.stderr):      # stdout is for the table
        result = door.run_file(args.file, script_args, interpret=args.no_gpu)
    if result.error:
        print(result.error, file=sys.stderr)
    for message in result.messages:
        print(f"note: {message}", file=sys.stderr)
    if not result.traces:
        print("tile-explore compare: no kernel was compiled", file=sys.stderr)
        return 1
    gpu = gpu_present()
    for trace in result.traces:
        arguments = result.recorder.arguments_of(trace) if result.recorder else None
        untimed = why_not_timed(trace, arguments, gpu, declined=args.no_gpu)
        metrics = [_pipeline_metrics(trace, result.kernels.get(trace.kernel_name), pipeline,
                                     args.stage, None if untimed else arguments)
                   for pipeline in args.pipeline]
        print(f"\n{trace.kernel_name}  (A = {args.pipeline[0]!r}, B = {args.pipeline[1]!r})")
        print(format_table(metric_rows(*metrics), ("metric", "A", "B", "Δ")))
        if untimed:
            print(f"runtime —: {untimed}")
    return 0


def compare_against_triton(args, script_args) -> int:
    """`compare FILE --against-triton`: our compile and Triton's, stage by stage."""
    from explorer.triton_compare import pair_traces, stage_metrics
    theirs, messages, error = _triton_traces(args.file, args.triton_dump, script_args)
    for message in messages:
        print(f"note: {message}", file=sys.stderr)
    if error:
        print(error, file=sys.stderr)
    if not theirs:
        print("tile-explore compare: Triton compiled no kernel", file=sys.stderr)
        return 1
    with contextlib.redirect_stdout(sys.stderr):      # stdout is for the table
        result = _door().run_file(args.file, script_args, interpret=args.no_gpu)
    if result.error:
        print(result.error, file=sys.stderr)
    for ours, triton in pair_traces(result.traces, theirs):
        name = (ours or triton).kernel_name
        left = stage_metrics(ours) if ours else {}
        right = stage_metrics(triton) if triton else {}
        print(f"\n{name}  (A = ours, B = Triton)"
              + ("" if ours else "  [only Triton compiled it]")
              + ("" if triton else "  [Triton did not compile it]"))
        print(format_table(metric_rows(left or {k: None for k in right}, right),
                           ("metric", "ours", "Triton", "Δ")))
    return 1 if result.error and not result.traces else 0


def _pipeline_metrics(trace, kernel, pipeline: str, stage: str, arguments) -> dict:
    """Recompile with `pipeline` for `stage` and measure it (timed on the GPU when the recorded
    launch's `arguments` are given); a failing pipeline is reported and gives no metrics."""
    try:
        compiled = _door().recompile(trace, {stage: pipeline}, kernel)
    except CompilerMissing:
        raise
    except Exception as failure:   # a bad pipeline is reported, the other still runs
        print(f"{trace.kernel_name}: pipeline {pipeline!r} failed: {failure}", file=sys.stderr)
        return {}
    if arguments is not None:
        try:
            add_gpu_timing(compiled, arguments)
        except Exception as failure:   # the build's other metrics still count
            print(f"{trace.kernel_name}: timing pipeline {pipeline!r} failed: {failure}",
                  file=sys.stderr)
    return trace_metrics(compiled.trace, stage)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `tile-explore` console script."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and argv[0] == "prof":
            return prof.main(argv[1:])
        if argv and argv[0] == "bisect":
            return bisect.main(argv[1:])
        if argv and argv[0] == "compare":
            return compare(argv[1:])
        if argv and argv[0] == "serve":
            from explorer import serve
            return serve.main(argv[1:])
        return explore(argv)
    except CompilerMissing as missing:
        print(f"tile-explore: {missing}", file=sys.stderr)
        return 3
    except ValueError as bad:
        print(f"tile-explore: {bad}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
