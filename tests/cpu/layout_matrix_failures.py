"""The cells of the layout matrix (tests/cpu/layout_matrix.py) that do not work yet, each with
the exact error `tests/cpu/test_layout_matrix.failure` reports for it (`stage: Type: message`).
The tests mark them xfail(strict=True) and check the error is still this one: a fix shows up as
XPASS (delete the line), a different failure as FAIL. `python -m tests.cpu.test_layout_matrix`
prints the cells that fail now, with their errors, in the form this list takes.

Every cell passes on the CPU now (ptxas, and the SIMT evaluator against the interpreter). The
158 that failed when the matrix was first run (every cell with a dot operand of a blocked
parent: the RegisterSlot model took a slice of such an operand for a slice of a blocked layout,
`'DotOperandEncoding' object has no attribute 'dim'` in tt.make_range) were fixed by answering
those slices from their linear layout (compiler/analysis/layouts.py: has_slot_model)."""

KNOWN: dict = {}
