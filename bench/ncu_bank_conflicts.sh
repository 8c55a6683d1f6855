#!/bin/bash
# Shared-memory bank conflicts of our sample kernels (ncu counters), one CSV per sample.
# Run on the GPU machine from the project root: PYTHONPATH=. bash bench/ncu_bank_conflicts.sh (needs ncu with counter access).
M=l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,smsp__inst_executed_op_shared_ld.sum,smsp__inst_executed_op_shared_st.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum
OUT=${OUT:-.}; mkdir -p $OUT/ncu
for s in softmax layernorm matmul attention vector_add; do
  timeout 100 ncu --metrics $M --csv --target-processes all python3 sample_kernels/$s.py > $OUT/ncu/$s.csv 2> $OUT/ncu/$s.err
  echo "$s rc=$? $(grep -c '"l1tex' $OUT/ncu/$s.csv) metric rows"
done
