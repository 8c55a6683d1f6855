"""`tile-explore serve [--host H] [--port P] FILE-or-options...`: the same app in a browser,
through textual-serve (each browser tab starts its own `tile-explore` with the given
arguments, its screen sent over a websocket)."""
from __future__ import annotations

import argparse
import shlex
import sys


def serve_parser() -> argparse.ArgumentParser:
    """The parser of `tile-explore serve`; what it does not know goes to the app."""
    parser = argparse.ArgumentParser(
        prog="tile-explore serve",
        description="Serve the explorer in a browser (textual-serve). The other arguments are "
                    "those of tile-explore itself: a kernel file, --trace, --from-triton ...")
    parser.add_argument("--host", default="localhost", help="address to listen on")
    parser.add_argument("--port", type=int, default=8000, help="port to listen on")
    return parser


def app_command(app_args: list) -> str:
    """The shell command textual-serve runs for each browser tab."""
    return " ".join(shlex.quote(part) for part in
                    [sys.executable, "-m", "explorer.cli", *app_args])


def main(argv: list) -> int:
    """Serve until interrupted; 2 with the reason when textual-serve is missing or no
    arguments for the app are given."""
    args, app_args = serve_parser().parse_known_args(argv)
    if not app_args:
        print("tile-explore serve: give a kernel file (or --trace trace.json) to serve",
              file=sys.stderr)
        return 2
    try:
        from textual_serve.server import Server
    except ImportError:
        print("tile-explore serve: textual-serve is not installed (pip install textual-serve)",
              file=sys.stderr)
        return 2
    server = Server(app_command(app_args), host=args.host, port=args.port,
                    title=f"tile-explore {' '.join(app_args)}")
    try:
        server.serve()
    except KeyboardInterrupt:
        pass
    return 0
