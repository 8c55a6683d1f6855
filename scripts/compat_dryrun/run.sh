#!/bin/bash
# Triton's language tests against the GPU path, on a CPU-only machine (see dryrun_plugin.py).
# usage: scripts/compat_dryrun/run.sh OUT_DIR [pytest args: files, -k ...]
#   SAMPLE=3 (default) keeps the runner's stable sample of at most 3 cases per test function;
#   results land in OUT_DIR/results.jsonl (the runner's format).
# Needs: the shared runner (RUNNER_DIR), Triton's test files (REFS), the venv.
set -e
here=$(cd "$(dirname "$0")" && pwd); project=$(cd "$here/../.." && pwd)
out=$(mkdir -p "$1" && cd "$1" && pwd); shift
RUNNER_DIR=${RUNNER_DIR:-/work/shared/tools/triton-compat}
REFS=${REFS:-$project/.triton-ref}
export PYTHONPATH=$here:$RUNNER_DIR:$project
export COMPAT_HARNESS_ACTIVE=1 COMPAT_MODE=gpu COMPAT_REFS=$REFS COMPAT_OUT=$out
export COMPAT_SAMPLE=${SAMPLE:-3} COMPAT_SHARD= PYTHONHASHSEED=0 OMP_NUM_THREADS=1
unset TILE_INTERPRET TRITON_INTERPRET
mkdir -p "$out/run"
cp "$REFS"/test_*.py "$REFS"/conftest.py "$out/run/"
cd "$out/run"
[ $# -eq 0 ] && set -- test_core.py test_standard.py test_random.py
exec python -m pytest "$@" -p run_test_core \
    -p dryrun_plugin --device=cpu --timeout=300 -q -rN --no-header -p no:cacheprovider \
    --tb=short -o console_output_style=count --continue-on-collection-errors
