#!/bin/bash
# Issues 10 and 11's acceptance runs on the H200, one part per device call (each fits in 10 min).
# usage (from the project root on the device, PYTHONPATH holding the project):
#   scripts/h200_acceptance.sh PART OUT_DIR
# PART: tier      the GPU tier (tests/gpu, -n 12, then the timing tests alone)
#       matmul    bench/matmul_best_of.py (fp16/bf16 4096 and 8192, tf32, fp8: best of one list;
#                 CASES="tf32-4096 ..." keeps some)
#       attention bench/bench_attention.py (D64/D128, causal and not: best of one list)
#       tutorials bench/tutorials_vs_triton.py over REFS (Triton's tutorial files), POINTS x values
#       compat    Triton's suite, full (no sampling), the shards in SHARDS (e.g. "0/3 1/3": about
#                 4 device minutes each for ours; RUNNER: the triton-compat folder, REFS: Triton's
#                 files; OUT_DIR outside the project, so the shards partition the cases); merge the shards' folders afterwards, on any machine, with
#                 run_test_core.py --summarize OUT/compat_0_3,OUT/compat_1_3,... --out DIR
#       pending   the GPU tests of work not yet verified on the H200 (the mma.sync tf32/int8 path, the in-flight wgmma loop, fp8 FMA dots, descriptors, layer norm's locked backward), then
#                 Triton's test_dot tf32/int8 cases (the part testdot; RUNNER: the
#                 triton-compat folder)
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
    timeout ${BENCH_TIMEOUT:-560} python3 bench/matmul_best_of.py --out "$out" ${CASES:+--cases $CASES} ${ROUNDS:+--rounds $ROUNDS} 2>&1 | tee "$out/matmul.log" | tail -12 ;;
  attention)
    timeout ${BENCH_TIMEOUT:-560} python3 bench/bench_attention.py --out "$out" 2>&1 | tee "$out/attention.log" | tail -12 ;;
  tutorials)
    timeout ${BENCH_TIMEOUT:-560} python3 bench/tutorials_vs_triton.py --refs "${REFS:?set REFS to the folder of the tutorial files}" \
        --points ${POINTS:-1} --out "$out" ${ONLY:+--only $ONLY} 2>&1 | tee "$out/tutorials.log" | tail -40 ;;
  pending)
    TILE_REQUIRE_GPU=1 timeout 300 python3 -m pytest -q -n ${XDIST:-8} -p no:cacheprovider -rfE \
        tests/gpu/test_mma_v2_narrow_gpu.py tests/gpu/test_wgmma_loop_exit_wait_gpu.py \
        tests/gpu/test_fp8_fma_dot_gpu.py tests/gpu/test_tensor_descriptors_gpu.py \
        tests/gpu/test_frontend_semantics_gpu.py tests/gpu/test_memdesc_trans_gpu.py \
        tests/gpu/test_layernorm_backward_gpu.py 2>&1 \
        | tee "$out/pending.log" | grep -a "^FAILED\|^ERROR\| passed\| failed"
    bash "$0" testdot "$out" ;;
  compat)
    # The runner's shards hash each case's pytest node id, which holds the path of the copied
    # test files (OUT/compat_I_N/run/...) relative to pytest's rootdir. Inside this checkout
    # the rootdir is the project (pyproject.toml), so every shard would hash different ids:
    # overlapping random thirds, not a partition. Outside it, the ids are the same in every shard.
    case "$out/" in "$PWD"/*)
      echo "compat: OUT_DIR ($out) must be outside the project ($PWD), or the shards overlap" >&2
      exit 2 ;;
    esac
    for shard in ${SHARDS:?set SHARDS, e.g. "0/3 1/3"}; do
      timeout ${SHARD_TIMEOUT:-290} python3 "${RUNNER:?set RUNNER to the triton-compat folder}/run_test_core.py" \
          --mode gpu --xdist ${XDIST:-15} --timeout 60 --refs "${REFS:?set REFS}" --project "$PWD" \
          --shard "$shard" --out "$out/compat_${shard/\//_}" 2>&1 | tail -2
    done ;;
  testdot)
    timeout 240 python3 "${RUNNER:?set RUNNER to the triton-compat folder}/run_test_core.py" \
        --mode gpu --xdist ${XDIST:-8} --timeout 60 --refs "${REFS:?set REFS}" --project "$PWD" \
        --files test_core.py --out "$out/test_dot" -- -k "test_dot and (tf32 or int8)" 2>&1 | grep "^passed" ;;
  *) echo "unknown part '$part' (tier, matmul, attention, tutorials, compat, pending, testdot)" >&2; exit 2 ;;
esac
