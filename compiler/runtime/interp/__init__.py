"""The numpy interpreter of ttir, split by concern.

`compiler.runtime.interpreter.interpret` is the entry point; the modules here hold its parts:
`values` (IR types as numpy dtypes, bf16 emulation, casts), `memory` (virtual addresses of the
argument arrays, checked loads, stores and atomics), `arguments` (binding launch arguments),
`elementwise` (arith and math semantics), `tensor_ops` (tt and ttg semantics), `combine`
(reductions and scans over combine regions), `control` (scf, calls, regions) and `errors`.
"""
