"""Mutants of printed IR, and the property every mutant must have: the parser and verifier
either accept it (and then print -> parse -> print is the identity) or reject it with a
ParseError / VerificationError that carries file:line:col, the line and a caret; nothing else
(no internal exception, no "malformed" safety-net message).

`MUTATIONS` are plain functions `(random.Random, text) -> text`; the hypothesis test
(tests/cpu/test_fuzz_ir.py) and the larger run (scripts/fuzz_ir.py) both draw from them.
"""
from __future__ import annotations

import random
import re
from dataclasses import dataclass, field

from compiler.ir import default_context, parse_module, print_module, verify_module
from compiler.ir.parser import ParseError
from compiler.ir.verifier_errors import VerificationError

LOCATED = re.compile(r"^[^\n]*:\d+:\d+: error: [^\n]*\n[^\n]*\n *\^", re.S)
SAFETY_NET = ("malformed input (", "malformed op (")

TYPES = ["i1", "i8", "i16", "i32", "i64", "f16", "bf16", "f32", "f64", "!tt.ptr<f32>",
         "!tt.ptr<i32>", "tensor<128xf32>", "i0", "i99999999999", "tensor<0xf32>"]
NUMBERS = ["0", "-1", "1", "3", "7", "128", "1024", "99999999999", "4294967296",
           "1" + "0" * 50, "-9223372036854775809", "1e400", "0x7FC00000", "0xFFFFFFFFFFFFFFFFFF",
           "nan", "inf", "2.5", "-0"]
UNICODE = ["é", "∀", "😀", "\u0000", "\r", "\t", '"', "\\", "\u202e", "\ufeff", "ſ"]
FIELDS = ["sizePerThread", "threadsPerWarp", "warpsPerCTA", "order", "dim", "parent", "opIdx",
          "versionMajor", "instrShape", "vec", "perPhase", "maxPhase", "kWidth"]


def _lines(text: str) -> list[str]:
    return text.split("\n")


def delete_line(rng, text):
    lines = _lines(text)
    del lines[rng.randrange(len(lines))]
    return "\n".join(lines)


def duplicate_line(rng, text):
    lines = _lines(text)
    i = rng.randrange(len(lines))
    lines.insert(i, lines[i])
    return "\n".join(lines)


def swap_lines(rng, text):
    lines = _lines(text)
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    lines[i], lines[j] = lines[j], lines[i]
    return "\n".join(lines)


def _replace_match(rng, text, pattern, replacement):
    matches = list(re.finditer(pattern, text))
    if not matches:
        return text
    m = rng.choice(matches)
    new = replacement(m) if callable(replacement) else replacement
    return text[:m.start()] + new + text[m.end():]


def change_type(rng, text):
    return _replace_match(rng, text, r"\b(i1|i8|i16|i32|i64|f16|bf16|f32|f64)\b",
                          lambda m: rng.choice(TYPES))


def change_shape(rng, text):
    return _replace_match(rng, text, r"\b\d+x", lambda m: rng.choice(NUMBERS[:9] + ["0"]) + "x")


def change_ssa_name(rng, text):
    names = re.findall(r"%[A-Za-z0-9_]+", text) or ["%x"]
    return _replace_match(rng, text, r"%[A-Za-z0-9_]+",
                          lambda m: rng.choice(names + ["%undefined", "%0#7"]))


def change_number(rng, text):
    return _replace_match(rng, text, r"(?<![\w#%])-?\d+(\.\d+)?(e[-+]?\d+)?\b",
                          lambda m: rng.choice(NUMBERS))


def change_attribute(rng, text):
    return _replace_match(rng, text, r"\b(\w+) = ([^,}]+)",
                          lambda m: f"{m.group(1)} = " + rng.choice(
                              ["128 : i1", '"x"', "[1, 2]", "true", "unit", "#blocked",
                               "array<i32: 1>", "dense<1> : tensor<4xi32>", "3.5 : f32",
                               "@nowhere", m.group(2) + m.group(2)]))


def change_op_name(rng, text):
    names = sorted(default_context().ops)
    return _replace_match(rng, text, r"\b(arith|math|scf|tt|ttg|gpu)\.[a-z_.]+\b",
                          lambda m: rng.choice(names + ["tt.nothing", "foo.bar"]))


def change_predicate(rng, text):
    return _replace_match(rng, text, r"\b(arith\.cmp[if]) (\w+),",
                          lambda m: f"{m.group(1)} " + rng.choice(
                              ["slt", "ult", "oeq", "une", "true", "bogus", "x"]) + ",")


def drop_encoding_field(rng, text):
    return _replace_match(rng, text, r"(%s) = (\[[^\]]*\]|#?\w+)(, )?" % "|".join(FIELDS), "")


def truncate(rng, text):
    return text[:rng.randrange(len(text) + 1)]


def deep_nesting(rng, text):
    depth = rng.choice([70, 300, 3000])
    kind = rng.randrange(4)
    if kind == 0:
        nested = "tensor<" * depth + "f32" + ">" * depth
        return _replace_match(rng, text, r"\bf32\b", nested)
    if kind == 1:
        return _replace_match(rng, text, r"loc\(#loc\d*\)",
                              "loc(" + "callsite(" * depth + "unknown" +
                              " at unknown)" * depth + ")")
    if kind == 2:
        return _replace_match(rng, text, r"\{\w+ = ", lambda m: m.group(0) + "[" * depth + "1" +
                              "]" * depth + ", x = ")
    body = "scf.if %c {\n" * depth + "}\n" * depth
    return _replace_match(rng, text, r"\n(\s+)tt\.return", lambda m: "\n" + body + m.group(0))


def loc_alias_chain(rng, text):
    """A location alias that refers to itself or to a bad body."""
    return _replace_match(rng, text, r"^(#loc\d*) = loc\((.*)\)$",
                          lambda m: f"{m.group(1)} = loc(" + rng.choice(
                              [m.group(1), '"f":x:1', '"unterminated', "callsite(#loc at",
                               '"a"(' * 200 + "unknown" + ")" * 200]) + ")")


def insert_unicode(rng, text):
    i = rng.randrange(len(text) + 1)
    return text[:i] + rng.choice(UNICODE) + text[i:]


def huge_number(rng, text):
    return _replace_match(rng, text, r"(?<![\w#%])\d+\b",
                          lambda m: rng.choice(["9" * rng.choice([20, 400, 5000]), "1" + "0" * 39,
                                                str(2 ** 63), str(2 ** 64)]))


MUTATIONS = [delete_line, duplicate_line, swap_lines, change_type, change_shape,
             change_ssa_name, change_number, change_attribute, change_predicate, change_op_name,
             drop_encoding_field, truncate, deep_nesting, loc_alias_chain, insert_unicode,
             huge_number]


def mutate(rng: random.Random, text: str, rounds: int = 1) -> str:
    """`text` after `rounds` random mutations."""
    for _ in range(rounds):
        text = rng.choice(MUTATIONS)(rng, text)
    return text


@dataclass
class Outcome:
    """How the parser and verifier took one input."""

    kind: str                  # parsed-ok, parse-error, verify-error, unlocated, safety-net,
    message: str = ""          # round-trip, crash
    details: dict = field(default_factory=dict)


def check(text: str, name: str = "mutant.ttgir") -> Outcome:
    """Run the property on one input (see module docstring)."""
    try:
        module = parse_module(text, name)
        verify_module(module)
    except (ParseError, VerificationError) as err:
        message = str(err)
        kind = "parse-error" if isinstance(err, ParseError) else "verify-error"
        if any(s in message for s in SAFETY_NET):
            return Outcome("safety-net", message)
        if not LOCATED.match(message):
            return Outcome("unlocated", message)
        return Outcome(kind, message)
    except Exception as err:  # noqa: BLE001  (what the fuzzer is looking for)
        return Outcome("crash", f"{type(err).__name__}: {err}")
    try:
        first = print_module(module)
        again = parse_module(first, name)
        verify_module(again)
        second = print_module(again)
    except Exception as err:  # noqa: BLE001
        return Outcome("round-trip", f"{type(err).__name__}: {err}")
    if first != second:
        return Outcome("round-trip", "print -> parse -> print changed the text")
    return Outcome("parsed-ok")


BAD = ("unlocated", "safety-net", "round-trip", "crash")
