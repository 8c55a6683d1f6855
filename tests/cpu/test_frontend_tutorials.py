"""Kernels in the shape of Triton's tutorials (fused softmax with tl.range, layer-norm forward
with three loops and pointer `+=`, grouped matmul with tl.assume and a @jit activation):
the front end must accept them as written and give verified, round-tripping ttir."""
from __future__ import annotations

import compiler.language as tl
from compiler.frontend import generate_ttir
from compiler.ir import parse_module, print_module
from tests.cpu.filecheck import filecheck


class _Jit:
    def __init__(self, fn):
        self.fn = fn


def jit(fn):
    return _Jit(fn)


@jit
def softmax_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_rows, n_cols,
                   BLOCK_SIZE: tl.constexpr, num_stages: tl.constexpr):
    row_start = tl.program_id(0)
    row_step = tl.num_programs(0)
    for row_idx in tl.range(row_start, n_rows, row_step, num_stages=num_stages):
        row_start_ptr = input_ptr + row_idx * input_row_stride
        col_offsets = tl.arange(0, BLOCK_SIZE)
        input_ptrs = row_start_ptr + col_offsets
        mask = col_offsets < n_cols
        row = tl.load(input_ptrs, mask=mask, other=-float('inf'))
        row_minus_max = row - tl.max(row, axis=0)
        numerator = tl.exp(row_minus_max)
        denominator = tl.sum(numerator, axis=0)
        softmax_output = numerator / denominator
        output_row_start_ptr = output_ptr + row_idx * output_row_stride
        output_ptrs = output_row_start_ptr + col_offsets
        tl.store(output_ptrs, softmax_output, mask=mask)


@jit
def _layer_norm_fwd_fused(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    Y += row * stride
    X += row * stride
    mean = 0
    _mean = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        a = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        _mean += a
    mean = tl.sum(_mean, axis=0) / N
    _var = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        x = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        x = tl.where(cols < N, x - mean, 0.)
        _var += x * x
    var = tl.sum(_var, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        mask = cols < N
        w = tl.load(W + cols, mask=mask)
        b = tl.load(B + cols, mask=mask)
        x = tl.load(X + cols, mask=mask, other=0.).to(tl.float32)
        x_hat = (x - mean) * rstd
        y = x_hat * w + b
        tl.store(Y + cols, y, mask=mask)


@jit
def leaky_relu(x):
    return tl.where(x >= 0, x, 0.01 * x)


@jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                  stride_cm, stride_cn, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
                  BLOCK_SIZE_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr,
                  ACTIVATION: tl.constexpr):
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    tl.assume(pid_m >= 0)
    tl.assume(pid_n >= 0)
    tl.assume(stride_am > 0)
    offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
    offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)
        accumulator = tl.dot(a, b, accumulator)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    if ACTIVATION == "leaky_relu":
        accumulator = leaky_relu(accumulator)
    c = accumulator.to(tl.float16)
    offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, c, mask=c_mask)


def round_trip(module) -> str:
    text = print_module(module)
    assert print_module(parse_module(text)) == text
    return text


def test_fused_softmax_tutorial():
    sig = dict(output_ptr="*fp32", input_ptr="*fp32", input_row_stride="i32",
               output_row_stride="i32", n_rows="i32", n_cols="i32")
    text = round_trip(generate_ttir(softmax_kernel, sig, {"BLOCK_SIZE": 1024, "num_stages": 2}))
    filecheck(text, """
        CHECK: %row_step = tt.get_num_programs x : i32
        CHECK: scf.for %row_idx = %row_start to %n_rows step %row_step {tt.num_stages = 2 : i32} : i32 {
        CHECK: arith.constant dense<0xFF800000> : tensor<1024xf32>
        CHECK: tt.store
        CHECK: scf.yield
    """)


def test_layer_norm_forward_tutorial():
    sig = dict(X="*fp16", Y="*fp16", W="*fp16", B="*fp16", Mean="*fp32", Rstd="*fp32",
               stride="i32", N="i32", eps="fp32")
    text = round_trip(generate_ttir(_layer_norm_fwd_fused, sig, {"BLOCK_SIZE": 256}))
    filecheck(text, """
        CHECK: %Y_{{[0-9]+}} = tt.addptr %Y, {{.*}} : !tt.ptr<f16>, i32
        CHECK: scf.for %off = {{.*}} iter_args(%_mean_{{[0-9]+}} = %_mean) -> (tensor<256xf32>)
        CHECK: scf.for %off{{[_0-9]*}} = {{.*}} iter_args(%_var_{{[0-9]+}} = %_var) -> (tensor<256xf32>)
        CHECK: arith.select
        CHECK: tt.addptr %Mean, %row : !tt.ptr<f32>, i32
        CHECK-NEXT: tt.store {{.*}} : !tt.ptr<f32>
        CHECK: scf.for %off{{[_0-9]*}} = {{.*}} : i32 {
        CHECK: arith.truncf {{.*}} : tensor<256xf32> to tensor<256xf16>
        CHECK-NEXT: tt.store
    """)


def test_grouped_matmul_tutorial_with_activation():
    sig = dict(a_ptr="*fp16", b_ptr="*fp16", c_ptr="*fp16", M="i32", N="i32", K="i32",
               stride_am="i32", stride_bk="i32", stride_cm="i32")
    consts = dict(stride_ak=1, stride_bn=1, stride_cn=1, BLOCK_SIZE_M=64, BLOCK_SIZE_N=64,
                  BLOCK_SIZE_K=32, GROUP_SIZE_M=8, ACTIVATION="leaky_relu")
    text = round_trip(generate_ttir(matmul_kernel, sig, consts))
    filecheck(text, """
        CHECK: scf.for %k
        CHECK: tt.dot {{.*}} : tensor<64x32xf16> * tensor<32x64xf16> -> tensor<64x64xf32>
        CHECK: %accumulator_{{[0-9]+}} = tt.call @leaky_relu__fp32S64x64S({{.*}}) : (tensor<64x64xf32>) -> (tensor<64x64xf32>)
        CHECK: tt.func private @leaky_relu__fp32S64x64S
        CHECK: arith.cmpf oge
        CHECK: arith.select
    """)
    plain = round_trip(generate_ttir(matmul_kernel, sig, {**consts, "ACTIVATION": ""}))
    assert "tt.call" not in plain
