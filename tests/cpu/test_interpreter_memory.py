"""The interpreter's memory model: masks and `other`, out-of-bounds errors that name the op and
source line, atomics with sequential semantics, grid order, strided arrays and argument checks."""
from __future__ import annotations

import numpy as np
import pytest

from compiler.runtime.interpreter import InterpreterError, interpret

from ._interp_ir import kernel, vector_pointers

RNG = np.random.default_rng(7)


def copy_kernel(n_block: int, with_other: bool, load_loc: str = "", store_loc: str = ""):
    """out[i] = x[i] for i < n (masked, block `n_block`), masked-off lanes load `other` = -1.5."""
    other = ", %other" if with_other else ""
    lines = [f"%offs = tt.make_range {{end = {n_block} : i32, start = 0 : i32}} : "
             f"tensor<{n_block}xi32>",
             f"%nn = tt.splat %n : i32 -> tensor<{n_block}xi32>",
             f"%mask = arith.cmpi slt, %offs, %nn : tensor<{n_block}xi32>",
             f"%other = arith.constant dense<-1.500000e+00> : tensor<{n_block}xf32>",
             f"%xs = tt.splat %x : !tt.ptr<f32> -> tensor<{n_block}x!tt.ptr<f32>>",
             f"%xp = tt.addptr %xs, %offs : tensor<{n_block}x!tt.ptr<f32>>, tensor<{n_block}xi32>",
             f"%v = tt.load %xp, %mask{other} : tensor<{n_block}x!tt.ptr<f32>> {load_loc}",
             f"%os = tt.splat %out : !tt.ptr<f32> -> tensor<{n_block}x!tt.ptr<f32>>",
             f"%op = tt.addptr %os, %offs : tensor<{n_block}x!tt.ptr<f32>>, tensor<{n_block}xi32>",
             f"tt.store %op, %v : tensor<{n_block}x!tt.ptr<f32>> {store_loc}"]
    return kernel("%x: !tt.ptr<f32>, %out: !tt.ptr<f32>, %n: i32", lines)


def test_masked_load_takes_other_and_zero_without_it():
    x = RNG.standard_normal(10).astype(np.float32)
    out = np.zeros(16, np.float32)
    interpret(copy_kernel(16, True), (1,), [x, out, 10])
    np.testing.assert_array_equal(out[:10], x)
    assert (out[10:] == -1.5).all()
    interpret(copy_kernel(16, False), (1,), [x, out, 10])
    assert (out[10:] == 0).all()


def test_masked_store_leaves_other_elements_alone(reference_dir):
    from compiler.ir.parser import parse_module
    module = parse_module((reference_dir / "add.ttir").read_text())
    n = 3000
    x, y = RNG.standard_normal(4096).astype(np.float32), RNG.standard_normal(4096).astype(np.float32)
    out = np.full(4096, 7.0, np.float32)
    interpret(module, (3,), [x, y, out, n])
    np.testing.assert_array_equal(out[:n], x[:n] + y[:n])
    assert (out[n:] == 7.0).all()


def test_out_of_bounds_load_names_op_location_and_address(reference_dir):
    from compiler.ir.parser import parse_module
    module = parse_module((reference_dir / "add.ttir").read_text())
    x = np.zeros(4000, np.float32)
    out = np.zeros(4000, np.float32)
    with pytest.raises(InterpreterError) as info:
        interpret(module, (4,), [x, x.copy(), out, 4100])      # n larger than the arrays
    message = str(info.value)
    assert message.startswith("triton_h200_kernels.py:9:16: error: tt.load in program (3, 0, 0)")
    assert "element 4000 of 'x_ptr', which has 4000 elements" in message
    assert "0x" in message and "mask the access" in message


def test_out_of_bounds_store_writes_nothing_and_shows_the_source_line(tmp_path):
    source = tmp_path / "kern.py"
    source.write_text("def k(x, out, n):\n    tl.store(out + offs, x)\n")
    module = copy_kernel(16, True, store_loc=f'loc("{source}":2:4)')
    x = RNG.standard_normal(16).astype(np.float32)
    out = np.full(12, 3.0, np.float32)
    with pytest.raises(InterpreterError) as info:
        interpret(module, (1,), [x, out, 16])
    message = str(info.value)
    assert message.startswith(f"{source}:2:4: error: tt.store")
    assert "element 12 of 'arg1'" in message
    assert message.endswith("    tl.store(out + offs, x)\n        ^")
    assert (out == 3.0).all()


def test_negative_offsets_and_null_pointers_are_caught():
    lines = ["%c = arith.constant -1 : i32",
             "%p = tt.addptr %x, %c : !tt.ptr<f32>, i32",
             "%v = tt.load %p : !tt.ptr<f32>",
             "tt.store %x, %v : !tt.ptr<f32>"]
    module = kernel("%x: !tt.ptr<f32>", lines)
    with pytest.raises(InterpreterError, match="element -1 of 'arg0'"):
        interpret(module, (1,), [np.zeros(4, np.float32)])
    with pytest.raises(InterpreterError, match="null pointer"):
        interpret(module, (1,), [None])


def atomic_kernel(kind: str, elem: str, n: int, masked: bool = False):
    """old[i] = atomic_<kind>(buf + idx[i], val[i]) for i < n (optionally masked by val > 0)."""
    mask_operand = ", %m" if masked else ""
    mask_type = f", tensor<{n}xi1>" if masked else ""
    lines = [*vector_pointers("idx", "i32", n, "pi"), f"%iv = tt.load %pi : tensor<{n}x!tt.ptr<i32>>",
             *vector_pointers("val", elem, n, "pv"), f"%vv = tt.load %pv : tensor<{n}x!tt.ptr<{elem}>>",
             f"%bs = tt.splat %buf : !tt.ptr<{elem}> -> tensor<{n}x!tt.ptr<{elem}>>",
             f"%bp = tt.addptr %bs, %iv : tensor<{n}x!tt.ptr<{elem}>>, tensor<{n}xi32>",
             f"%z = arith.constant dense<0> : tensor<{n}x{elem}>" if elem.startswith("i") else
             f"%z = arith.constant dense<0.000000e+00> : tensor<{n}x{elem}>",
             f"%m = arith.cmp{'i sgt' if elem.startswith('i') else 'f ogt'}, %vv, %z : "
             f"tensor<{n}x{elem}>",
             f'%old = "tt.atomic_rmw"(%bp, %vv{mask_operand}) <{{atomic_rmw_op = "{kind}", '
             f'scope = "gpu", sem = "acq_rel"}}> : (tensor<{n}x!tt.ptr<{elem}>>, '
             f"tensor<{n}x{elem}>{mask_type}) -> tensor<{n}x{elem}>",
             *vector_pointers("old_out", elem, n, "po"),
             f"tt.store %po, %old : tensor<{n}x!tt.ptr<{elem}>>"]
    return kernel(f"%idx: !tt.ptr<i32>, %val: !tt.ptr<{elem}>, %buf: !tt.ptr<{elem}>, "
                  f"%old_out: !tt.ptr<{elem}>", lines)


def test_atomic_add_with_repeated_addresses_is_sequential():
    n = 64
    idx = RNG.integers(0, 5, n).astype(np.int32)
    ones = np.ones(n, np.int32)
    buf = np.zeros(5, np.int32)
    old = np.zeros(n, np.int32)
    interpret(atomic_kernel("add", "i32", n), (1,), [idx, ones, buf, old])
    np.testing.assert_array_equal(buf, np.bincount(idx, minlength=5))
    np.testing.assert_array_equal(old, [int((idx[:i] == idx[i]).sum()) for i in range(n)])


def test_atomic_fadd_float_order_and_max_kinds():
    n = 32
    idx = RNG.integers(0, 3, n).astype(np.int32)
    vals = RNG.standard_normal(n).astype(np.float32)
    buf = np.zeros(3, np.float32)
    old = np.zeros(n, np.float32)
    interpret(atomic_kernel("fadd", "f32", n), (1,), [idx, vals, buf, old])
    expected = np.zeros(3, np.float32)
    for i, v in zip(idx, vals):
        expected[i] = expected[i] + v
    np.testing.assert_array_equal(buf, expected)

    ivals = RNG.integers(-50, 50, n).astype(np.int32)
    for kind, fn in [("max", max), ("min", min),
                     ("umax", lambda a, b: a if (a & 0xFFFFFFFF) > (b & 0xFFFFFFFF) else b)]:
        buf = np.zeros(3, np.int32)
        interpret(atomic_kernel(kind, "i32", n), (1,), [idx, ivals, buf, np.zeros(n, np.int32)])
        expected = [0, 0, 0]
        for i, v in zip(idx, ivals):
            expected[i] = fn(expected[i], int(v))
        assert buf.tolist() == expected, kind


def test_masked_atomic_skips_masked_lanes():
    n = 16
    idx = np.arange(n, dtype=np.int32) % 4
    vals = np.arange(-8, 8, dtype=np.int32)
    buf = np.zeros(4, np.int32)
    old = np.full(n, 99, np.int32)
    interpret(atomic_kernel("exch", "i32", n, masked=True), (1,), [idx, vals, buf, old])
    # lanes with val > 0 are 9..15; the last exchange per slot wins
    assert buf.tolist() == [4, 5, 6, 7]
    assert (old[:9] == 0).all()


def test_atomic_cas_lets_the_first_program_win():
    lines = ["%pid = tt.get_program_id x : i32",
             "%c0 = arith.constant 0 : i32",
             "%c1 = arith.constant 1 : i32",
             "%me = arith.addi %pid, %c1 : i32",
             '%old = "tt.atomic_cas"(%lock, %c0, %me) <{scope = "gpu", sem = "acq_rel"}> : '
             "(!tt.ptr<i32>, i32, i32) -> i32",
             "%slot = tt.addptr %out, %pid : !tt.ptr<i32>, i32",
             "tt.store %slot, %old : !tt.ptr<i32>"]
    module = kernel("%lock: !tt.ptr<i32>, %out: !tt.ptr<i32>", lines)
    lock = np.zeros(1, np.int32)
    out = np.full(4, -1, np.int32)
    interpret(module, (4,), [lock, out])
    assert lock[0] == 1 and out.tolist() == [0, 1, 1, 1]


def test_grid_runs_x_fastest():
    lines = ["%one = arith.constant 1 : i32",
             '%ticket = "tt.atomic_rmw"(%counter, %one) <{atomic_rmw_op = "add", scope = "gpu", '
             'sem = "acq_rel"}> : (!tt.ptr<i32>, i32) -> i32',
             "%x = tt.get_program_id x : i32", "%y = tt.get_program_id y : i32",
             "%z = tt.get_program_id z : i32",
             "%nx = tt.get_num_programs x : i32", "%ny = tt.get_num_programs y : i32",
             "%zy = arith.muli %z, %ny : i32", "%zyy = arith.addi %zy, %y : i32",
             "%lin0 = arith.muli %zyy, %nx : i32", "%lin = arith.addi %lin0, %x : i32",
             "%slot = tt.addptr %out, %lin : !tt.ptr<i32>, i32",
             "tt.store %slot, %ticket : !tt.ptr<i32>"]
    module = kernel("%counter: !tt.ptr<i32>, %out: !tt.ptr<i32>", lines)
    counter, out = np.zeros(1, np.int32), np.full(12, -1, np.int32)
    interpret(module, (3, 2, 2), [counter, out])
    assert out.tolist() == list(range(12))


def test_strided_views_are_read_and_written_in_place(reference_dir):
    from compiler.ir.parser import parse_module
    module = parse_module((reference_dir / "softmax.ttir").read_text())
    big_x = RNG.standard_normal((5, 1200)).astype(np.float32)
    big_y = np.full((5, 1200), 9.0, np.float32)
    x, y = big_x[:, 100:1100], big_y[:, :1000]          # non-contiguous views
    interpret(module, (5,), [y, x, 1200, 1200, 1000])
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(big_y[:, :1000], e / e.sum(axis=1, keepdims=True), rtol=1e-6)
    assert (big_y[:, 1000:] == 9.0).all()


def test_pointer_bitcast_reads_the_bits():
    lines = ['%ip = tt.bitcast %x : !tt.ptr<f32> -> !tt.ptr<i32>',
             *vector_pointers("ip", "i32", 8, "p"), "%v = tt.load %p : tensor<8x!tt.ptr<i32>>",
             *vector_pointers("out", "i32", 8, "o"), "tt.store %o, %v : tensor<8x!tt.ptr<i32>>"]
    module = kernel("%x: !tt.ptr<f32>, %out: !tt.ptr<i32>", lines)
    x = RNG.standard_normal(8).astype(np.float32)
    out = np.zeros(8, np.int32)
    interpret(module, (1,), [x, out])
    np.testing.assert_array_equal(out, x.view(np.int32))


def test_read_only_arrays_reject_stores():
    x = np.zeros(16, np.float32)
    out = np.zeros(16, np.float32)
    out.flags.writeable = False
    with pytest.raises(InterpreterError, match="read-only"):
        interpret(copy_kernel(16, True), (1,), [x, out, 16])


def test_bad_arguments_are_reported_clearly():
    module = copy_kernel(16, True)
    x = np.zeros(16, np.float32)
    with pytest.raises(InterpreterError, match=r"takes 3 arguments \(arg0, arg1, arg2\), got 2"):
        interpret(module, (1,), [x, x])
    with pytest.raises(InterpreterError, match="points to f32 but the array holds float64"):
        interpret(module, (1,), [x, np.zeros(16), 16])
    with pytest.raises(InterpreterError, match="does not fit in 32 bits"):
        interpret(module, (1,), [x, x.copy(), 2 ** 40])
    with pytest.raises(InterpreterError, match="needs an array, got int"):
        interpret(module, (1,), [5, x, 16])


def test_torch_cpu_tensors_are_written_in_place():
    torch = pytest.importorskip("torch")
    x = torch.randn(16)
    out = torch.zeros(16)
    interpret(copy_kernel(16, True), (1,), [x, out, 16])
    assert torch.equal(out, x)


class FakeDeviceArray:
    """Stands for an array in GPU memory: reachable only through copies, like DeviceArray."""

    def __init__(self, host: np.ndarray):
        self._data = host.copy()
        self.copies_back = 0

    def to_numpy(self) -> np.ndarray:
        return self._data.copy()

    def copy_from_numpy(self, host: np.ndarray) -> None:
        self._data[...] = host
        self.copies_back += 1


def test_device_arrays_are_staged_through_the_host():
    x = RNG.standard_normal(16).astype(np.float32)
    device_x, device_out = FakeDeviceArray(x), FakeDeviceArray(np.zeros(16, np.float32))
    interpret(copy_kernel(16, True), (1,), [device_x, device_out, 12])
    out = device_out.to_numpy()
    np.testing.assert_array_equal(out[:12], x[:12])
    assert (out[12:] == -1.5).all() and device_out.copies_back == 1


def test_scalar_arguments_take_the_parameter_types():
    lines = ["tt.store %pi, %i : !tt.ptr<i32>", "tt.store %pf, %f : !tt.ptr<f16>",
             "tt.store %pb, %b : !tt.ptr<bf16>", "tt.store %pl, %l : !tt.ptr<i64>"]
    module = kernel("%pi: !tt.ptr<i32>, %pf: !tt.ptr<f16>, %pb: !tt.ptr<bf16>, "
                    "%pl: !tt.ptr<i64>, %i: i32, %f: f16, %b: bf16, %l: i64", lines)
    i, f, b, l = (np.zeros(1, np.int32), np.zeros(1, np.float16), np.zeros(1, np.uint16),
                  np.zeros(1, np.int64))
    interpret(module, (1,), [i, f, b, l, 2 ** 31 + 5, 0.1, 1.0 + 2 ** -8 + 2 ** -10, -3])
    assert i[0] == -(2 ** 31) + 5                           # u32 bits read as i32
    assert f[0] == np.float16(0.1)
    assert b[0] == 0x3F81                                   # rounded to the nearest bf16
    assert l[0] == -3
