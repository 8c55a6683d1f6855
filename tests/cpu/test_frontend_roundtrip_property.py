"""Property test: random kernels (expression trees over loads of random dtypes, with runtime
ifs and loops) compile to verified ttir that prints, parses and prints back identically.

Hypothesis writes each kernel's source to a temporary file and imports it, because the front
end reads a kernel's source from its file."""
from __future__ import annotations

import importlib.util
import itertools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compiler.frontend import CompilationError, generate_ttir
from compiler.ir import parse_module, print_module
from compiler.ir.verifier import verify_module

DTYPES = ["i8", "i16", "i32", "i64", "u8", "u32", "fp16", "bf16", "fp32", "fp64"]
BINARY = ["+", "-", "*", "/", "//", "%", "&", "|", "^", "<<", ">>", "<", "==", ">="]
CALLS = ["tl.maximum({a}, {b})", "tl.minimum({a}, {b})", "tl.where({a} < {b}, {a}, {b})"]
UNARY = ["-{a}", "tl.abs({a})", "tl.exp(({a}).to(tl.float32))", "({a}).to(tl.float16)",
         "tl.sum({a}, axis=0) + {a}", "tl.cumsum({a}, axis=0)"]
LEAVES = ["a", "b", "c", "2", "3.5", "n", "tl.arange(0, 16)"]

_counter = itertools.count()


def expressions(depth: int):
    """A strategy for expression source text over the leaves."""
    if depth == 0:
        return st.sampled_from(LEAVES)
    sub = expressions(depth - 1)
    return st.one_of(
        st.sampled_from(LEAVES),
        st.builds(lambda a, op, b: f"({a} {op} {b})", sub, st.sampled_from(BINARY), sub),
        st.builds(lambda f, a, b: f.format(a=a, b=b), st.sampled_from(CALLS), sub, sub),
        st.builds(lambda f, a: "(" + f.format(a=a) + ")", st.sampled_from(UNARY), sub),
    )


def kernel_source(expr: str, shape: str) -> str:
    body = {
        "plain": "    r = {e}\n",
        "if": "    r = a\n    if n > 3:\n        r = {e}\n    else:\n        r = a + 1\n",
        "loop": "    r = a\n    for i in range(0, n):\n        r = r + ({e}).to(r.dtype)\n",
    }[shape].format(e=expr)
    return ("import compiler.language as tl\n\n\n"
            "def kernel(A, B, C, OUT, n):\n"
            "    offs = tl.arange(0, 16)\n"
            "    a = tl.load(A + offs)\n"
            "    b = tl.load(B + offs)\n"
            "    c = tl.load(C)\n"
            + body +
            "    tl.store(OUT + offs, r)\n")


def load_kernel(tmp_path, source: str):
    path = tmp_path / f"random_kernel_{next(_counter)}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.kernel


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(expr=expressions(3), shape=st.sampled_from(["plain", "if", "loop"]),
       da=st.sampled_from(DTYPES), db=st.sampled_from(DTYPES), dc=st.sampled_from(DTYPES),
       dout=st.sampled_from(DTYPES))
def test_random_kernels_round_trip(tmp_path, expr, shape, da, db, dc, dout):
    kernel = load_kernel(tmp_path, kernel_source(expr, shape))
    signature = {"A": "*" + da, "B": "*" + db, "C": "*" + dc, "OUT": "*" + dout, "n": "i32"}
    try:
        module = generate_ttir(kernel, signature, {})
    except CompilationError as err:
        # Rejections must be positioned errors inside the kernel, never internal failures.
        assert "internal compiler error" not in err.message, str(err)
        assert err.line >= 5 and err.source_line.strip(), str(err)
        return
    text = print_module(module)
    again = parse_module(text)
    verify_module(again)
    assert print_module(again) == text
