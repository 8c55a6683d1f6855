"""Hand-written ttir kernels that give every ttir pass something to do (for pipeline tests)."""

# Loops (with an unroll request and invariant code), a constant-condition if, splats,
# broadcasts, addptr chains, a select of equal values, and a private helper to inline.
# out[i] = sum_{k<n} (x[i] * 3 + k) for i < 8, plus a 2-D broadcast write of x.
LOOPS = """
module {
  tt.func private @scale(%v: tensor<8xf32>, %s: f32) -> tensor<8xf32> {
    %ss = tt.splat %s : f32 -> tensor<8xf32>
    %r = arith.mulf %v, %ss : tensor<8xf32>
    tt.return %r : tensor<8xf32>
  }
  tt.func public @loops(%x_ptr: !tt.ptr<f32>, %out_ptr: !tt.ptr<f32>, %grid_ptr: !tt.ptr<f32>, %n: i32) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c2 = arith.constant 2 : i32
    %zero = arith.constant 0 : i32
    %three = arith.constant 3.000000e+00 : f32
    %true = arith.constant true : i1
    %r = tt.make_range {end = 8 : i32, start = 0 : i32} : tensor<8xi32>
    %xs = tt.splat %x_ptr : !tt.ptr<f32> -> tensor<8x!tt.ptr<f32>>
    %off0 = arith.addi %r, %r : tensor<8xi32>
    %half = arith.subi %off0, %r : tensor<8xi32>
    %zs = tt.splat %zero : i32 -> tensor<8xi32>
    %xq0 = tt.addptr %xs, %half : tensor<8x!tt.ptr<f32>>, tensor<8xi32>
    %xq = tt.addptr %xq0, %zs : tensor<8x!tt.ptr<f32>>, tensor<8xi32>
    %x = tt.load %xq : tensor<8x!tt.ptr<f32>>
    %x3 = tt.call @scale(%x, %three) : (tensor<8xf32>, f32) -> (tensor<8xf32>)
    %init = arith.constant dense<0.000000e+00> : tensor<8xf32>
    %acc:2 = scf.for %k = %c0 to %n step %c1 iter_args(%a = %init, %dead = %c0) -> (tensor<8xf32>, i32) {tt.loop_unroll_factor = 2 : i32} : i32 {
      %inv = arith.muli %c2, %c1 : i32
      %kk = arith.muli %k, %c1 : i32
      %kf = arith.sitofp %kk : i32 to f32
      %ks = tt.splat %kf : f32 -> tensor<8xf32>
      %t = arith.addf %x3, %ks : tensor<8xf32>
      %t2 = arith.select %true, %t, %t : i1, tensor<8xf32>
      %an = arith.addf %a, %t2 : tensor<8xf32>
      %d2 = arith.addi %dead, %inv : i32
      scf.yield %an, %d2 : tensor<8xf32>, i32
    }
    %res = scf.if %true -> (tensor<8xf32>) {
      scf.yield %acc#0 : tensor<8xf32>
    } else {
      %neg = arith.negf %acc#0 : tensor<8xf32>
      scf.yield %neg : tensor<8xf32>
    }
    %os = tt.splat %out_ptr : !tt.ptr<f32> -> tensor<8x!tt.ptr<f32>>
    %oq = tt.addptr %os, %r : tensor<8x!tt.ptr<f32>>, tensor<8xi32>
    tt.store %oq, %res : tensor<8x!tt.ptr<f32>>
    %row = tt.expand_dims %r {axis = 1 : i32} : tensor<8xi32> -> tensor<8x1xi32>
    %col = tt.expand_dims %r {axis = 0 : i32} : tensor<8xi32> -> tensor<1x8xi32>
    %eight = arith.constant dense<8> : tensor<8x1xi32>
    %rows = arith.muli %row, %eight : tensor<8x1xi32>
    %rowsb = tt.broadcast %rows : tensor<8x1xi32> -> tensor<8x8xi32>
    %colsb = tt.broadcast %col : tensor<1x8xi32> -> tensor<8x8xi32>
    %idx = arith.addi %rowsb, %colsb : tensor<8x8xi32>
    %gs = tt.splat %grid_ptr : !tt.ptr<f32> -> tensor<8x8x!tt.ptr<f32>>
    %gq = tt.addptr %gs, %idx : tensor<8x8x!tt.ptr<f32>>, tensor<8x8xi32>
    %xe = tt.expand_dims %x {axis = 0 : i32} : tensor<8xf32> -> tensor<1x8xf32>
    %xb = tt.broadcast %xe : tensor<1x8xf32> -> tensor<8x8xf32>
    %two = arith.constant dense<2.000000e+00> : tensor<8x8xf32>
    %xb2 = arith.mulf %xb, %two : tensor<8x8xf32>
    tt.store %gq, %xb2 : tensor<8x8x!tt.ptr<f32>>
    tt.return
  }
}
"""


def loops_expected(x, n):
    """What LOOPS computes, in numpy: (out, grid)."""
    import numpy as np
    out = sum((x * np.float32(3) + np.float32(k) for k in range(n)), np.zeros(8, np.float32))
    grid = np.broadcast_to(x * np.float32(2), (8, 8)).copy()
    return out.astype(np.float32), grid


# A dot whose zero accumulator gets an add folded in, in a loop whose load may alias a store.
DOT = """
module {
  tt.func public @dot(%a_ptr: !tt.ptr<f32>, %b_ptr: !tt.ptr<f32>, %c_ptr: !tt.ptr<f32>) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c2 = arith.constant 2 : i32
    %r = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %row = tt.expand_dims %r {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
    %col = tt.expand_dims %r {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
    %sixteen = arith.constant dense<16> : tensor<16x1xi32>
    %rows = arith.muli %row, %sixteen : tensor<16x1xi32>
    %rowsb = tt.broadcast %rows : tensor<16x1xi32> -> tensor<16x16xi32>
    %colsb = tt.broadcast %col : tensor<1x16xi32> -> tensor<16x16xi32>
    %idx = arith.addi %rowsb, %colsb : tensor<16x16xi32>
    %as = tt.splat %a_ptr : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
    %aq = tt.addptr %as, %idx : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
    %bs = tt.splat %b_ptr : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
    %bq = tt.addptr %bs, %idx : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
    %cs = tt.splat %c_ptr : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
    %cq = tt.addptr %cs, %idx : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
    %zero = arith.constant dense<0.000000e+00> : tensor<16x16xf32>
    scf.for %k = %c0 to %c2 step %c1 : i32 {
      %a = tt.load %aq : tensor<16x16x!tt.ptr<f32>>
      %b = tt.load %bq : tensor<16x16x!tt.ptr<f32>>
      %c = tt.load %cq : tensor<16x16x!tt.ptr<f32>>
      %m = tt.dot %a, %b, %zero, inputPrecision = ieee : tensor<16x16xf32> * tensor<16x16xf32> -> tensor<16x16xf32>
      %s = arith.addf %c, %m : tensor<16x16xf32>
      tt.store %cq, %s : tensor<16x16x!tt.ptr<f32>>
      scf.yield
    }
    tt.return
  }
}
"""
