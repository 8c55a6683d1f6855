"""Hand-written PTX kernels for the runtime's GPU tests and the launch benchmark.

They are written directly in PTX (no compiler of ours involved), so a failure in the runtime
tests points at the runtime: module loading, argument packing, launch, shared memory.
"""

#: out[i] = x[i] + y[i] for i < n; params (ptr x, ptr y, ptr out, i32 n).
VADD = r"""
.version 7.8
.target sm_70
.address_size 64

.visible .entry vadd(
    .param .u64 vadd_x,
    .param .u64 vadd_y,
    .param .u64 vadd_out,
    .param .u32 vadd_n
)
{
    .reg .pred %p<2>;
    .reg .b32 %r<6>;
    .reg .f32 %f<4>;
    .reg .b64 %rd<11>;

    ld.param.u64 %rd1, [vadd_x];
    ld.param.u64 %rd2, [vadd_y];
    ld.param.u64 %rd3, [vadd_out];
    ld.param.u32 %r1, [vadd_n];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.s32 %r5, %r2, %r3, %r4;
    setp.ge.s32 %p1, %r5, %r1;
    @%p1 bra DONE;
    cvta.to.global.u64 %rd4, %rd1;
    cvta.to.global.u64 %rd5, %rd2;
    cvta.to.global.u64 %rd6, %rd3;
    mul.wide.s32 %rd7, %r5, 4;
    add.s64 %rd8, %rd4, %rd7;
    add.s64 %rd9, %rd5, %rd7;
    add.s64 %rd10, %rd6, %rd7;
    ld.global.f32 %f1, [%rd8];
    ld.global.f32 %f2, [%rd9];
    add.f32 %f3, %f1, %f2;
    st.global.f32 [%rd10], %f3;
DONE:
    ret;
}
"""

#: Writes each scalar parameter, converted to f64, into out[0..6]:
#: params (ptr out, f32 a, f64 b, i64 k, i8 flag (an i1), i32 m, f16 h, bf16 g).
PARAMS = r"""
.version 7.8
.target sm_80
.address_size 64

.visible .entry params(
    .param .u64 params_out,
    .param .f32 params_a,
    .param .f64 params_b,
    .param .u64 params_k,
    .param .u8 params_flag,
    .param .u32 params_m,
    .param .b16 params_h,
    .param .b16 params_g
)
{
    .reg .b16 %h<4>;
    .reg .b32 %r<4>;
    .reg .f32 %f<4>;
    .reg .f64 %fd<8>;
    .reg .b64 %rd<4>;

    ld.param.u64 %rd1, [params_out];
    cvta.to.global.u64 %rd2, %rd1;
    ld.param.f32 %f1, [params_a];
    cvt.f64.f32 %fd1, %f1;
    st.global.f64 [%rd2], %fd1;
    ld.param.f64 %fd2, [params_b];
    st.global.f64 [%rd2+8], %fd2;
    ld.param.u64 %rd3, [params_k];
    cvt.rn.f64.s64 %fd3, %rd3;
    st.global.f64 [%rd2+16], %fd3;
    ld.param.u8 %h1, [params_flag];
    cvt.u32.u16 %r1, %h1;
    cvt.rn.f64.u32 %fd4, %r1;
    st.global.f64 [%rd2+24], %fd4;
    ld.param.u32 %r2, [params_m];
    cvt.rn.f64.s32 %fd5, %r2;
    st.global.f64 [%rd2+32], %fd5;
    ld.param.b16 %h2, [params_h];
    cvt.f32.f16 %f2, %h2;
    cvt.f64.f32 %fd6, %f2;
    st.global.f64 [%rd2+40], %fd6;
    ld.param.b16 %h3, [params_g];
    cvt.u32.u16 %r3, %h3;
    shl.b32 %r3, %r3, 16;
    mov.b32 %f3, %r3;
    cvt.f64.f32 %fd7, %f3;
    st.global.f64 [%rd2+48], %fd7;
    ret;
}
"""

#: Uses `shared_bytes` of dynamic shared memory: thread t writes t at byte offset
#: (shared_bytes - 4 * (t + 1)), synchronizes, and copies it to out[t]. Params (ptr out,
#: i32 shared_bytes).
SHARED = r"""
.version 7.8
.target sm_70
.address_size 64

.extern .shared .align 16 .b8 dyn_smem[];

.visible .entry shared_probe(
    .param .u64 shared_probe_out,
    .param .u32 shared_probe_bytes
)
{
    .reg .b32 %r<8>;
    .reg .b64 %rd<6>;

    ld.param.u64 %rd1, [shared_probe_out];
    ld.param.u32 %r1, [shared_probe_bytes];
    mov.u32 %r2, %tid.x;
    add.s32 %r3, %r2, 1;
    shl.b32 %r3, %r3, 2;
    sub.s32 %r4, %r1, %r3;
    mov.u32 %r5, dyn_smem;
    add.s32 %r6, %r5, %r4;
    st.shared.u32 [%r6], %r2;
    bar.sync 0;
    ld.shared.u32 %r7, [%r6];
    cvta.to.global.u64 %rd2, %rd1;
    mul.wide.u32 %rd3, %r2, 4;
    add.s64 %rd4, %rd2, %rd3;
    st.global.u32 [%rd4], %r7;
    ret;
}
"""

#: An empty kernel with one pointer and one i32 parameter, for launch-overhead measurements.
EMPTY = r"""
.version 7.8
.target sm_70
.address_size 64

.visible .entry empty(
    .param .u64 empty_p,
    .param .u32 empty_n
)
{
    ret;
}
"""
