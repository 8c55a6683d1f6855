#!/bin/bash
# Issues 10 and 11's acceptance runs on the H200, one part per device call (each fits in 10 min).
# usage (from the project root on the device, PYTHONPATH holding the project):
#   scripts/h200_acceptance.sh PART OUT_DIR
# PART: tier      the GPU tier (tests/gpu, -n 12, then the timing tests alone)
#       matmul    bench/matmul_best_of.py (fp16/bf16 4096 and 8192, tf32, fp8: best of one list)
#       attention bench/bench_attention.py (D64/D128, causal and not: best of one list)
#       tutorials bench/tutorials_vs_triton.py over REFS (Triton's tutorial files), POINTS x values
# Every speed is a ratio to Triton 3.6 measured in the same process or run.
set -o pipefail
part=$1; out=$(mkdir -p "$2" && cd "$2" && pwd)
export PYTHONUNBUFFERED=1 MPLBACKEND=Agg
case $part in
  tier)
    TILE_REQUIRE_GPU=1 timeout ${TIER_TIMEOUT:-300} python3 -m pytest tests/gpu -q -n ${XDIST:-12} \
        -m "not timing" -p no:cacheprovider -rfE 2>&1 | grep -v "PytestBenchmarkWarning\|warner(" \
        | tee "$out/tier.log" | grep -a "^FAILED\|^ERROR\| passed\| failed"
    TILE_REQUIRE_GPU=1 timeout 120 python3 -m pytest tests/gpu -q -m timing -p no:cacheprovider \
        -rfE 2>&1 | tail -5 | tee "$out/timing.log" ;;
  matmul)
    timeout ${BENCH_TIMEOUT:-560} python3 bench/matmul_best_of.py --out "$out" 2>&1 | tee "$out/matmul.log" | tail -12 ;;
  attention)
    timeout ${BENCH_TIMEOUT:-560} python3 bench/bench_attention.py --out "$out" 2>&1 | tee "$out/attention.log" | tail -12 ;;
  tutorials)
    timeout ${BENCH_TIMEOUT:-560} python3 bench/tutorials_vs_triton.py --refs "${REFS:?set REFS to the folder of the tutorial files}" \
        --points ${POINTS:-1} --out "$out" ${ONLY:+--only $ONLY} 2>&1 | tee "$out/tutorials.log" | tail -40 ;;
  *) echo "unknown part '$part' (tier, matmul, attention, tutorials)" >&2; exit 2 ;;
esac
