"""Reading the real Triton's compile artifacts into our trace format: its per-pass IR dumps
(`MLIR_ENABLE_DUMP`, mlir_dump.py), its stage files (`TRITON_KERNEL_DUMP`, kernel_dump.py),
TritonParse's ndjson logs (tritonparse_log.py), and running a script under Triton with those
dumps switched on (run.py). The explorer reaches these through compiler.inspect."""
