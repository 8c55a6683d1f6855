#!/usr/bin/env bash
# Triton's .ttgir layout tests of issue 9 (test_core.py, unmodified) on a machine without a GPU:
# the compatibility harness in mode gpu with `--device=cpu` and the tests/compat_simt.py plugin,
# which compiles each test's .ttgir with our compiler to cubin and runs the launch in the SIMT
# evaluator (values, alignment and bounds of every access checked). Run from the project root:
#   [SAMPLE=K] [XDIST=N] [K='pytest -k expression'] scripts/triton_layout_tests.sh OUT_DIR [pytest args]
# SAMPLE: at most K cases per test function (the harness's stable sample); XDIST: pytest-xdist
# workers; K: which tests (default: the twelve .ttgir layout tests; test_optimize_thread_locality,
# a @triton.jit test, is not one: its launch cannot be simulated). COMPAT_SIMT_PARSE_ONLY=1 only
# parses and verifies every case's text. Needs Triton's reference files in $TRITON_REF_DIR (default
# .triton-ref/) and the harness in $TRITON_COMPAT (default /work/shared/tools/triton-compat).
# Results: OUT_DIR/summary.md and OUT_DIR/results.jsonl.
set -euo pipefail
out=${1:?usage: $0 OUT_DIR [pytest args]}
shift
harness=${TRITON_COMPAT:-/work/shared/tools/triton-compat}
tests="test_convert2d or test_reduce_layouts or test_scan_layouts or test_store_op or test_convert1d"
tests+=" or test_chain_reduce or test_convert_warp_local or test_convert_mma2mma"
tests+=" or test_local_load_store"
exec "$harness/triton-compat" --mode gpu --files test_core.py --timeout 600 --out "$out" \
  --sample "${SAMPLE:-0}" ${XDIST:+--xdist "$XDIST"} \
  -- -p tests.compat_simt --device=cpu -k "${K:-$tests}" "$@"
