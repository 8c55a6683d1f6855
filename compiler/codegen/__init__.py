"""ttgir -> LLVM IR (llvmlite.ir) -> PTX (llvmlite's NVPTX backend) -> cubin (ptxas) -> SASS.

`lowering.lower_module` walks a ttgir module and calls one lowering function per op (registered
with `registry.lowers`, grouped by op family in the `lower_*` modules); `ptx.llvm_to_ptx`,
`cubin.assemble` and `sass.disassemble` are the later stages; `libdevice` links CUDA's
double-precision math library into kernels that call it; `linemap` maps PTX back to ttgir
lines; `nvidia_stages` lists every stage in order (the backend hands them to the driver).
"""
