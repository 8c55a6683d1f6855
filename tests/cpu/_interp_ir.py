"""Helpers for the interpreter tests: build small ttir kernels as text and run them."""
from __future__ import annotations

import numpy as np

from compiler.ir.parser import parse_module
from compiler.ir.verifier import verify_module
from compiler.runtime.interpreter import interpret


def module_from(text: str, name: str = "test.ttir"):
    """Parse and verify ttir text."""
    module = parse_module(text, name)
    verify_module(module)
    return module


def elementwise_kernel(body: str, in_types: list[str], out_type: str, n: int):
    """A one-program kernel @k(%in0, ..., %out) that loads `n` elements of each input into
    %a0, %a1, ... (a power-of-two block, masked to n), runs `body` (which defines %r; `$N`
    stands for the block size) and stores %r to %out under the same mask."""
    block = 1 << max(n - 1, 0).bit_length()
    params = [f"%in{i}: !tt.ptr<{t}>" for i, t in enumerate(in_types)]
    params.append(f"%out: !tt.ptr<{out_type}>")
    lines = [f"%offs = tt.make_range {{end = {block} : i32, start = 0 : i32}} : tensor<{block}xi32>",
             f"%n = arith.constant dense<{n}> : tensor<{block}xi32>",
             f"%mask = arith.cmpi slt, %offs, %n : tensor<{block}xi32>"]
    for i, t in enumerate(in_types):
        ptrs = f"tensor<{block}x!tt.ptr<{t}>>"
        lines += [f"%p{i} = tt.splat %in{i} : !tt.ptr<{t}> -> {ptrs}",
                  f"%q{i} = tt.addptr %p{i}, %offs : {ptrs}, tensor<{block}xi32>",
                  f"%a{i} = tt.load %q{i}, %mask : {ptrs}"]
    lines += [line.strip() for line in body.replace("$N", str(block)).strip().splitlines()]
    out_ptrs = f"tensor<{block}x!tt.ptr<{out_type}>>"
    lines += [f"%po = tt.splat %out : !tt.ptr<{out_type}> -> {out_ptrs}",
              f"%qo = tt.addptr %po, %offs : {out_ptrs}, tensor<{block}xi32>",
              f"tt.store %qo, %r, %mask : {out_ptrs}",
              "tt.return"]
    text = ("module {\n  tt.func public @k(" + ", ".join(params) + ") {\n"
            + "\n".join("    " + line for line in lines) + "\n  }\n}\n")
    return module_from(text)


def run_elementwise(body: str, inputs: list, in_types: list[str], out_type: str,
                    out_dtype) -> np.ndarray:
    """Run `elementwise_kernel` on 1-D `inputs` and return the stored output array."""
    n = len(inputs[0])
    module = elementwise_kernel(body, in_types, out_type, n)
    out = np.zeros(n, dtype=out_dtype)
    interpret(module, (1,), list(inputs) + [out])
    return out


def kernel(params: str, lines: list[str], extra_functions: str = ""):
    """A module with `extra_functions` and a public @k(params) whose body is `lines`."""
    body = "\n".join("    " + line for line in lines)
    text = (f"module {{\n{extra_functions}\n  tt.func public @k({params}) {{\n{body}\n"
            f"    tt.return\n  }}\n}}\n")
    return module_from(text)


def vector_pointers(ptr: str, elem: str, n: int, name: str) -> list[str]:
    """Lines defining %name: n consecutive pointers from %ptr (and %name_r, the range)."""
    ptrs = f"tensor<{n}x!tt.ptr<{elem}>>"
    return [f"%{name}_r = tt.make_range {{end = {n} : i32, start = 0 : i32}} : tensor<{n}xi32>",
            f"%{name}_s = tt.splat %{ptr} : !tt.ptr<{elem}> -> {ptrs}",
            f"%{name} = tt.addptr %{name}_s, %{name}_r : {ptrs}, tensor<{n}xi32>"]


def tile_pointers(ptr: str, elem: str, m: int, n: int, name: str) -> list[str]:
    """Lines defining %name: m x n pointers into a row-major m x n array at %ptr; also
    %name_rows / %name_cols (the row and column index of each element, m x n i32)."""
    t = f"tensor<{m}x{n}xi32>"
    return [
        f"%{name}_rm = tt.make_range {{end = {m} : i32, start = 0 : i32}} : tensor<{m}xi32>",
        f"%{name}_rn = tt.make_range {{end = {n} : i32, start = 0 : i32}} : tensor<{n}xi32>",
        f"%{name}_em = tt.expand_dims %{name}_rm {{axis = 1 : i32}} : tensor<{m}xi32> -> "
        f"tensor<{m}x1xi32>",
        f"%{name}_en = tt.expand_dims %{name}_rn {{axis = 0 : i32}} : tensor<{n}xi32> -> "
        f"tensor<1x{n}xi32>",
        f"%{name}_rows = tt.broadcast %{name}_em : tensor<{m}x1xi32> -> {t}",
        f"%{name}_cols = tt.broadcast %{name}_en : tensor<1x{n}xi32> -> {t}",
        f"%{name}_stride = arith.constant dense<{n}> : {t}",
        f"%{name}_row = arith.muli %{name}_rows, %{name}_stride : {t}",
        f"%{name}_off = arith.addi %{name}_row, %{name}_cols : {t}",
        f"%{name}_base = tt.splat %{ptr} : !tt.ptr<{elem}> -> tensor<{m}x{n}x!tt.ptr<{elem}>>",
        f"%{name} = tt.addptr %{name}_base, %{name}_off : tensor<{m}x{n}x!tt.ptr<{elem}>>, {t}",
    ]
