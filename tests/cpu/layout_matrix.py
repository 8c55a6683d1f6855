"""The layout test matrix of issue 9 as generated `.ttgir` kernels: every layout of `LAYOUTS`
(blocked of several shapes and orders, their slices, mma v2 and v3, dot operands of each,
`#ttg.linear`) x every op that applies to it (elementwise, reduce on each axis, scan,
broadcast, expand_dims, trans, reshape, store, atomic, a round trip through a shared buffer
(as f16: ldmatrix and stmatrix where the maps allow), convert_layout to every other layout of
the same shape).

Each case is one 4-warp kernel `@k(%x: !tt.ptr<f32>, %out: !tt.ptr<f32>)` that loads a
row-major f32 tile of `x` straight into the layout under test, applies the op and stores what
it made to `out`. The inputs are small integers, so every result (sums and scans included) is
exact and the SIMT evaluator, the interpreter and the GPU must agree bit for bit. Result
layouts that an op defines (trans, reshape) are the operand's linear layout transposed or
reshaped, written as `#ttg.linear`: the layouts that move no data.

`python -m tests.cpu.layout_matrix DIR` writes every case to DIR/<name>.ttgir.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

NUM_WARPS = 4
HEADER = ('module attributes {"ttg.num-ctas" = 1 : i32, "ttg.num-warps" = 4 : i32, '
          'ttg.target = "cuda:90", "ttg.threads-per-warp" = 32 : i32} {')

_MMA2 = ("#ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [2, 2], "
         "instrShape = [16, 8]}>")
_MMA3 = ("#ttg.nvidia_mma<{versionMajor = 3, versionMinor = 0, warpsPerCTA = [4, 1], "
         "instrShape = [16, 32, 16]}>")
_ROW = ("#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], "
        "order = [1, 0]}>")


def _blocked(size, threads, warps, order) -> str:
    return (f"#ttg.blocked<{{sizePerThread = {list(size)}, threadsPerWarp = {list(threads)}, "
            f"warpsPerCTA = {list(warps)}, order = {list(order)}}}>")


def _dot(op_idx: int, parent: str, k_width: int | None = 2) -> str:
    k = f", kWidth = {k_width}" if k_width else ""
    return f"#ttg.dot_op<{{opIdx = {op_idx}, parent = {parent}{k}}}>"


#: The 2-D layouts under test: name -> (encoding text, shape). Layouts of one shape are
#: converted into each other; their slices (dim 0 and dim 1) are layouts under test too.
LAYOUTS = {
    "blocked_row": (_ROW, (64, 32)),
    "blocked_col": (_blocked([4, 1], [8, 4], [1, 4], [0, 1]), (64, 32)),
    "blocked_wrap": (_blocked([2, 2], [2, 16], [2, 2], [1, 0]), (64, 32)),
    "mma_v2": (_MMA2, (64, 32)),
    "mma_v3": (_MMA3, (64, 32)),
    "dot_a_v2": (_dot(0, _MMA2), (64, 32)),
    "dot_b_v2": (_dot(1, _MMA2), (64, 32)),
    "dot_a_v3": (_dot(0, _MMA3), (64, 32)),
    "dot_a_fma": (_dot(0, _ROW, None), (64, 32)),
    "dot_b_fma": (_dot(1, _ROW, None), (64, 32)),
    "linear": ("#ttg.linear<{register = [[0, 1], [8, 0], [0, 8]], lane = [[0, 2], [0, 4], "
               "[1, 0], [2, 0], [4, 0]], warp = [[16, 0], [0, 0]], block = []}>", (64, 32)),
    "blocked_flat": (_blocked([1, 8], [1, 32], [2, 2], [1, 0]), (8, 128)),
    "blocked_flat_col": (_blocked([1, 1], [8, 4], [1, 4], [0, 1]), (8, 128)),
}


@dataclass(frozen=True)
class Layout:
    """A layout under test: its alias text, shape, and for a slice its parent and dim."""

    name: str
    text: str
    shape: tuple
    parent: str | None = None
    dim: int | None = None


def _slice_text(parent_text: str, dim: int) -> str:
    return f"#ttg.slice<{{dim = {dim}, parent = {parent_text}}}>"


@lru_cache(maxsize=None)
def all_layouts() -> dict:
    """Every layout under test by name: the 2-D ones and their slices (`<name>_s0`, `_s1`)."""
    out = {}
    for name, (text, shape) in LAYOUTS.items():
        out[name] = Layout(name, text, shape)
        for dim in (0, 1):
            kept = shape[1 - dim]
            out[f"{name}_s{dim}"] = Layout(f"{name}_s{dim}", _slice_text(text, dim), (kept,),
                                           name, dim)
    return out


def _parse(text: str):
    from compiler.dialects import ttg  # noqa: F401  (registers the layout parsers)
    from compiler.ir.parser import Parser
    return Parser(text).encoding_ref()


def _linear_text(layout) -> str:
    from compiler.analysis.layout_to_linear import to_linear_encoding
    return str(to_linear_encoding(layout))


def transposed_text(text: str, shape) -> str:
    """The `#ttg.linear` layout of the transpose of a 2-D tensor in `text`: no data moves."""
    from compiler.analysis.layout_to_linear import _permute_dims, to_linear_layout
    return _linear_text(_permute_dims(to_linear_layout(_parse(text), shape), [1, 0]))


def flattened_text(text: str, shape) -> str:
    """The `#ttg.linear` layout of a 2-D tensor in `text` reshaped (row-major) to 1-D."""
    from compiler.analysis.layout_to_linear import _reshape_row_major, to_linear_layout
    return _linear_text(_reshape_row_major(to_linear_layout(_parse(text), shape),
                                           [shape[0] * shape[1]]))


# ---- kernel text -------------------------------------------------------------------------------
class Kernel:
    """Builds one case's ttgir: layout aliases (each 2-D alias with its two slices) and the body
    of `@k(%x, %out)`."""

    def __init__(self):
        self.aliases: dict = {}
        self.lines: list = []
        self._n = 0

    def alias(self, name: str, text: str, rank: int) -> str:
        """Define `#name = text` (and `#name_s0`, `#name_s1` for rank 2); returns `#name`."""
        self.aliases[name] = text
        if rank == 2:
            for dim in (0, 1):
                self.aliases[f"{name}_s{dim}"] = f"#ttg.slice<{{dim = {dim}, parent = #{name}}}>"
        return f"#{name}"

    def fresh(self, stem: str) -> str:
        self._n += 1
        return f"%{stem}{self._n}"

    def emit(self, line: str) -> None:
        self.lines.append(line)

    def offsets(self, alias: str, shape, strides=None) -> str:
        """The tensor of element offsets `sum(coord[d] * strides[d])` (row-major by default)
        in layout `alias` (a 1-D or 2-D alias defined with `alias`)."""
        if len(shape) == 1:
            off = self.fresh("off")
            self.emit(f"{off} = tt.make_range {{end = {shape[0]} : i32, start = 0 : i32}} : "
                      f"tensor<{shape[0]}xi32, {alias}>")
            if strides and strides[0] != 1:
                return self._scale(off, strides[0], f"tensor<{shape[0]}xi32, {alias}>")
            return off
        m, n = shape
        strides = strides or (n, 1)
        full = f"tensor<{m}x{n}xi32, {alias}>"
        parts = []
        for axis, size, stride in ((0, m, strides[0]), (1, n, strides[1])):
            sliced = f"{alias}_s{1 - axis}"
            r = self.fresh("r")
            self.emit(f"{r} = tt.make_range {{end = {size} : i32, start = 0 : i32}} : "
                      f"tensor<{size}xi32, {sliced}>")
            shape2 = f"{size}x1" if axis == 0 else f"1x{size}"
            e = self.fresh("e")
            self.emit(f"{e} = tt.expand_dims {r} {{axis = {1 - axis} : i32}} : "
                      f"tensor<{size}xi32, {sliced}> -> tensor<{shape2}xi32, {alias}>")
            e = self._scale(e, stride, f"tensor<{shape2}xi32, {alias}>")
            if shape2 != f"{m}x{n}":
                b = self.fresh("b")
                self.emit(f"{b} = tt.broadcast {e} : tensor<{shape2}xi32, {alias}> -> {full}")
                e = b
            parts.append(e)
        off = self.fresh("off")
        self.emit(f"{off} = arith.addi {parts[0]}, {parts[1]} : {full}")
        return off

    def _scale(self, value: str, stride: int, ty: str) -> str:
        if stride == 1:
            return value
        c, out = self.fresh("c"), self.fresh("s")
        self.emit(f"{c} = arith.constant dense<{stride}> : {ty}")
        self.emit(f"{out} = arith.muli {value}, {c} : {ty}")
        return out

    def pointers(self, base: str, alias: str, shape, strides=None) -> tuple:
        """(pointer tensor, its type) for `base + offsets`."""
        off = self.offsets(alias, shape, strides)
        ty = f"tensor<{_dims(shape)}x!tt.ptr<f32>, {alias}>"
        s, p = self.fresh("sp"), self.fresh("p")
        self.emit(f"{s} = tt.splat {base} : !tt.ptr<f32> -> {ty}")
        self.emit(f"{p} = tt.addptr {s}, {off} : {ty}, tensor<{_dims(shape)}xi32, {alias}>")
        return p, ty

    def load(self, alias: str, shape, strides=None) -> str:
        p, ty = self.pointers("%x", alias, shape, strides)
        v = self.fresh("v")
        self.emit(f"{v} = tt.load {p} : {ty}")
        return v

    def store(self, value: str, alias: str, shape, mask: str | None = None) -> None:
        p, ty = self.pointers("%out", alias, shape)
        masked = f", {mask}" if mask else ""
        self.emit(f"tt.store {p}, {value}{masked} : {ty}")

    def text(self) -> str:
        aliases = "\n".join(f"#{name} = {text}" for name, text in self.aliases.items())
        body = "\n".join("    " + line for line in self.lines)
        return (f"{aliases}\n{HEADER}\n  tt.func public @k(%x: !tt.ptr<f32>, "
                f"%out: !tt.ptr<f32>) {{\n{body}\n    tt.return\n  }}\n}}\n")


def _dims(shape) -> str:
    return "x".join(str(s) for s in shape)


def _tensor(shape, alias: str) -> str:
    return f"tensor<{_dims(shape)}xf32, {alias}>"


def _combine(op: str, kind: str) -> list:
    return ["^bb0(%a: f32, %b: f32):", f"  %t = {op} %a, %b : f32", f"  {kind}.return %t : f32"]


# ---- the ops -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Case:
    """One cell of the matrix: its ttgir text and the sizes of x and out."""

    name: str
    layout: str
    op: str
    text: str
    x_size: int
    out_size: int

    def arrays(self, seed: int = 0) -> tuple:
        """(x, out): small integers in x, zeros in out."""
        rng = np.random.default_rng(seed)
        x = rng.integers(-8, 8, self.x_size).astype(np.float32)
        return x, np.zeros(self.out_size, np.float32)


def _under_test(kernel: Kernel, layout: Layout) -> str:
    """Define the layout under test as `#l` (a slice: its parent as `#p`, `#l` = `#p_s<dim>`)."""
    if layout.parent is None:
        return kernel.alias("l", layout.text, 2)
    parent_text, _ = LAYOUTS[layout.parent]
    kernel.alias("p", parent_text, 2)
    kernel.aliases["l"] = f"#p_s{layout.dim}"
    return "#l"


def _size(shape) -> int:
    return int(np.prod(shape))


def op_elementwise(k: Kernel, lay: Layout, l: str):
    ty = _tensor(lay.shape, l)
    v = k.load(l, lay.shape)
    k.emit(f"%two = arith.constant dense<2.000000e+00> : {ty}")
    k.emit(f"%y0 = arith.mulf {v}, %two : {ty}")
    k.emit(f"%y1 = arith.addf %y0, {v} : {ty}")
    k.emit(f"%y = arith.maximumf %y1, {v} : {ty}")
    k.store("%y", l, lay.shape)
    return _size(lay.shape), _size(lay.shape)


def _reduce_op(axis: int):
    def build(k: Kernel, lay: Layout, l: str):
        v = k.load(l, lay.shape)
        ty = _tensor(lay.shape, l)
        if len(lay.shape) == 1:
            k.emit(f'%s = "tt.reduce"({v}) <{{axis = 0 : i32}}> ({{')
            k.lines += ["  " + line for line in _combine("arith.addf", "tt.reduce")]
            k.emit(f"}}) : ({ty}) -> f32")
            k.emit("tt.store %out, %s : !tt.ptr<f32>")
            return _size(lay.shape), 1
        kept = (lay.shape[1 - axis],)
        rty = _tensor(kept, f"{l}_s{axis}")
        k.emit(f'%s = "tt.reduce"({v}) <{{axis = {axis} : i32}}> ({{')
        k.lines += ["  " + line for line in _combine("arith.addf", "tt.reduce")]
        k.emit(f"}}) : ({ty}) -> {rty}")
        k.store("%s", f"{l}_s{axis}", kept)
        return _size(lay.shape), kept[0]
    return build


def op_scan(k: Kernel, lay: Layout, l: str):
    axis = len(lay.shape) - 1
    v = k.load(l, lay.shape)
    ty = _tensor(lay.shape, l)
    k.emit(f'%s = "tt.scan"({v}) <{{axis = {axis} : i32, reverse = false}}> ({{')
    k.lines += ["  " + line for line in _combine("arith.addf", "tt.scan")]
    k.emit(f"}}) : ({ty}) -> {ty}")
    k.store("%s", l, lay.shape)
    return _size(lay.shape), _size(lay.shape)


def op_broadcast(k: Kernel, lay: Layout, l: str):
    m, n = lay.shape
    v = k.load(l, (m, 1), strides=(1, 0))
    k.emit(f"%y = tt.broadcast {v} : {_tensor((m, 1), l)} -> {_tensor((m, n), l)}")
    k.store("%y", l, (m, n))
    return m, m * n


def op_expand_dims(k: Kernel, lay: Layout, l: str):
    if lay.parent is None:                 # slice 0 of the layout -> the layout, shape 1 x n
        m, n = lay.shape
        src, src_shape, axis, dst, dst_shape = f"{l}_s0", (n,), 0, l, (1, n)
    else:                                  # the slice -> its parent
        axis = lay.dim
        src, src_shape, dst = l, lay.shape, "#p"
        dst_shape = (1, lay.shape[0]) if axis == 0 else (lay.shape[0], 1)
    v = k.load(src, src_shape)
    k.emit(f"%y = tt.expand_dims {v} {{axis = {axis} : i32}} : {_tensor(src_shape, src)} -> "
           f"{_tensor(dst_shape, dst)}")
    k.store("%y", dst, dst_shape)
    return src_shape[0], src_shape[0]


def op_trans(k: Kernel, lay: Layout, l: str):
    m, n = lay.shape
    t = k.alias("t", transposed_text(lay.text, lay.shape), 2)
    v = k.load(l, (m, n))
    k.emit(f"%y = tt.trans {v} {{order = array<i32: 1, 0>}} : {_tensor((m, n), l)} -> "
           f"{_tensor((n, m), t)}")
    k.store("%y", t, (n, m))
    return m * n, m * n


def op_reshape(k: Kernel, lay: Layout, l: str):
    m, n = lay.shape
    f = k.alias("f", flattened_text(lay.text, lay.shape), 1)
    v = k.load(l, (m, n))
    k.emit(f"%y = tt.reshape {v} : {_tensor((m, n), l)} -> {_tensor((m * n,), f)}")
    k.store("%y", f, (m * n,))
    return m * n, m * n


def _masked(k: Kernel, lay: Layout, l: str) -> tuple:
    """(value, pointers, pointer type, mask): the loaded tile and a mask keeping the offsets
    below 3/4 of the tile (a boundary that cuts rows and, in 1-D, registers)."""
    v = k.load(l, lay.shape)
    off = k.offsets(l, lay.shape)
    ity = f"tensor<{_dims(lay.shape)}xi32, {l}>"
    k.emit(f"%lim = arith.constant dense<{_size(lay.shape) * 3 // 4 + 1}> : {ity}")
    k.emit(f"%mask = arith.cmpi slt, {off}, %lim : {ity}")
    return v, "%mask"


def op_store(k: Kernel, lay: Layout, l: str):
    v, mask = _masked(k, lay, l)
    k.store(v, l, lay.shape, mask)
    return _size(lay.shape), _size(lay.shape)


def op_atomic(k: Kernel, lay: Layout, l: str):
    v, mask = _masked(k, lay, l)
    p, ty = k.pointers("%out", l, lay.shape)
    mty = f"tensor<{_dims(lay.shape)}xi1, {l}>"
    k.emit(f'%old = "tt.atomic_rmw"({p}, {v}, {mask}) <{{atomic_rmw_op = "fadd", '
           f'scope = "gpu", sem = "acq_rel"}}> : ({ty}, {_tensor(lay.shape, l)}, {mty}) -> '
           f"{_tensor(lay.shape, l)}")
    return _size(lay.shape), _size(lay.shape)


#: The buffer of the `shared` op: 16-byte groups along dim 1, swizzled over 4 rows (ldmatrix
#: and stmatrix rows where a tensor-core layout's map allows them).
SHARED = "#ttg.swizzled_shared<{vec = 8, perPhase = 1, maxPhase = 4, order = [1, 0]}>"


def op_shared(k: Kernel, lay: Layout, l: str):
    """The tile as f16 through an explicit shared buffer and back: local_alloc (stmatrix where
    the map allows, else vector stores), then local_load into the same layout."""
    m, n = lay.shape
    half = f"tensor<{m}x{n}xf16, {l}>"
    mem = f"!ttg.memdesc<{m}x{n}xf16, #s, #smem>"
    k.aliases["s"] = SHARED
    k.aliases["smem"] = "#ttg.shared_memory"
    v = k.load(l, lay.shape)
    k.emit(f"%h = arith.truncf {v} : {_tensor(lay.shape, l)} to {half}")
    k.emit(f"%buf = ttg.local_alloc %h : ({half}) -> {mem}")
    k.emit(f"%back = ttg.local_load %buf : {mem} -> {half}")
    k.emit(f"%y = arith.extf %back : {half} to {_tensor(lay.shape, l)}")
    k.store("%y", l, lay.shape)
    return m * n, m * n


def _convert_to(target: Layout):
    def build(k: Kernel, lay: Layout, l: str):
        if target.parent is None:
            dst = k.alias("d", target.text, 2)
        else:
            k.alias("dp", LAYOUTS[target.parent][0], 2)
            k.aliases["d"] = f"#dp_s{target.dim}"
            dst = "#d"
        v = k.load(l, lay.shape)
        k.emit(f"%y = ttg.convert_layout {v} : {_tensor(lay.shape, l)} -> "
               f"{_tensor(lay.shape, dst)}")
        k.store("%y", dst, lay.shape)
        return _size(lay.shape), _size(lay.shape)
    return build


def ops_for(layout: Layout) -> dict:
    """The ops that apply to a layout: {op name: builder}."""
    ops = {"elementwise": op_elementwise, "scan": op_scan, "store": op_store,
           "atomic": op_atomic, "expand_dims": op_expand_dims}
    if layout.parent is None:
        ops.update({"reduce0": _reduce_op(0), "reduce1": _reduce_op(1),
                    "broadcast": op_broadcast, "trans": op_trans, "reshape": op_reshape,
                    "shared": op_shared})
    else:
        ops["reduce0"] = _reduce_op(0)
    for other in all_layouts().values():
        if other.name != layout.name and other.shape == layout.shape and \
                _same_group(layout, other):
            ops[f"convert_to_{other.name}"] = _convert_to(other)
    return ops


def _same_group(a: Layout, b: Layout) -> bool:
    """Conversions are generated between 2-D layouts of one shape and between slices along
    the same dim (of parents of one shape)."""
    return (a.parent is None) == (b.parent is None) and a.dim == b.dim


def build_case(layout_name: str, op: str) -> Case:
    """The case `layout_name` x `op`."""
    layout = all_layouts()[layout_name]
    kernel = Kernel()
    l = _under_test(kernel, layout)
    x_size, out_size = ops_for(layout)[op](kernel, layout, l)
    return Case(f"{layout_name}-{op}", layout_name, op, kernel.text(), x_size, out_size)


@lru_cache(maxsize=None)
def case_names() -> tuple:
    """Every case of the matrix, `<layout>-<op>`."""
    return tuple(f"{name}-{op}" for name, layout in all_layouts().items()
                 for op in ops_for(layout))


def case(name: str) -> Case:
    layout, op = name.split("-", 1)
    return build_case(layout, op)


def main(folder: str) -> None:
    """Write every case as <folder>/<name>.ttgir."""
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    for name in case_names():
        (out / f"{name}.ttgir").write_text(case(name).text)
    print(f"wrote {len(case_names())} cases to {out}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "layout_matrix")
