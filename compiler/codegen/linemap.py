"""Line maps from PTX back to ttgir: every PTX instruction follows a `.loc FILE LINE COL`
directive whose line is a ttgir op's line (the lowering sets it), so runs of instructions under
one `.loc` become that op's PTX line ranges.

LLVM writes `.loc 1 0 0` for an instruction it merged from several ops (hoisted or sunk out of
branches); such an instruction is attributed to the op of the next instruction that has a line
(it computes that op's input), or the previous one at the end of the function."""
from __future__ import annotations

import re

_LOC = re.compile(r"^\s*\.loc\s+(\d+)\s+(\d+)\s+(\d+)")
_FILE = re.compile(r'^\s*\.file\s+(\d+)\s+"([^"]*)"')
_SASS_LOC = re.compile(r'^\s*//## File "([^"]*)", line (\d+)')
_SASS_INSTRUCTION = re.compile(r"^\s*/\*[0-9a-f]{4,}\*/\s")


def is_instruction(line: str) -> bool:
    """Whether a PTX line (inside a function body) is an instruction, not a directive, label,
    comment or brace."""
    s = line.strip()
    if not s or s.startswith(("//", ".", "$", "{", "}", ")", "(")):
        return False
    if s.endswith(":") and " " not in s:
        return False
    return True


def ptx_files(ptx_text: str) -> dict:
    """{file index: file name} from the `.file` directives."""
    out = {}
    for line in ptx_text.splitlines():
        m = _FILE.match(line)
        if m:
            out[int(m.group(1))] = m.group(2)
    return out


def instruction_lines(ptx_text: str) -> list:
    """[(1-based PTX line, ttgir line)] for every instruction inside function bodies (None only
    when the PTX has no `.loc` at all)."""
    out = []
    current = None
    depth = 0
    for number, line in enumerate(ptx_text.splitlines(), start=1):
        stripped = line.strip()
        m = _LOC.match(line)
        if m:
            current = int(m.group(2))
            continue
        if stripped.startswith(".section"):
            break
        if stripped == "{":
            depth += 1
            continue
        if stripped == "}":
            depth -= 1
            continue
        if depth > 0 and is_instruction(line) and not stripped.startswith(".reg"):
            out.append((number, current or None))
    return _fill_merged(out)


def _fill_merged(pairs: list) -> list:
    """Give instructions under `.loc 1 0 0` the line of the next located instruction."""
    filled = list(pairs)
    following = None
    for i in range(len(filled) - 1, -1, -1):
        number, line = filled[i]
        if line is None:
            filled[i] = (number, following)
        else:
            following = line
    previous = None
    for i, (number, line) in enumerate(filled):
        if line is None:
            filled[i] = (number, previous)
        else:
            previous = line
    return filled


def ptx_line_map(ptx_text: str) -> dict:
    """{ttgir line: [[first PTX line, last PTX line], ...]} (1-based, ranges in order)."""
    return _group_ranges(instruction_lines(ptx_text))


def _group_ranges(pairs) -> dict:
    """{ttgir line: [[first, last], ...]} from (text line, ttgir line or None) pairs in order:
    consecutive lines of one op make one range; a None breaks the run."""
    result: dict = {}
    previous = None
    for number, ttgir_line in pairs:
        if ttgir_line is None:
            previous = None
            continue
        ranges = result.setdefault(ttgir_line, [])
        if previous == ttgir_line and ranges:
            ranges[-1][1] = number
        else:
            ranges.append([number, number])
        previous = ttgir_line
    return result


def python_line_map(op_python: dict) -> dict:
    """{python line: [ttgir lines]} from the lowering's {ttgir line: "file:line:col"}."""
    out: dict = {}
    for ttgir_line, where in sorted(op_python.items()):
        py_line = int(where.rsplit(":", 2)[1])
        out.setdefault(py_line, []).append(ttgir_line)
    return out


def sass_line_map(sass_text: str) -> dict:
    """{ttgir line: [[first SASS line, last SASS line], ...]} from nvdisasm `-g` output, where
    `//## File "NAME", line N` comments name the ttgir line (the PTX `.loc` line, which the
    lowering sets to the op's ttgir line) of the instructions that follow. Comments for other
    files than the first `.ttgir` one (inlined libdevice, say) break the run."""
    pairs = []
    current = None
    ttgir_file = None
    for number, line in enumerate(sass_text.splitlines(), start=1):
        m = _SASS_LOC.match(line)
        if m:
            name, value = m.group(1), int(m.group(2))
            if ttgir_file is None and name.endswith(".ttgir"):
                ttgir_file = name
            current = value if ttgir_file is None or name == ttgir_file else None
        elif _SASS_INSTRUCTION.match(line):
            pairs.append((number, current))
    return _group_ranges(pairs)
