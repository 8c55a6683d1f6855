"""reorder-broadcast: elementwise ops before splat and broadcast."""
from tests.cpu.pass_helpers import check_pass, kernel, patterns_fired


def test_elementwise_on_splats_becomes_scalar_then_splat():
    ir = kernel("""
        %a = tt.splat %n : i32 -> tensor<8xi32>
        %c3 = arith.constant dense<3> : tensor<8xi32>
        %m = arith.muli %a, %c3 : tensor<8xi32>
        %ps = tt.splat %p : !tt.ptr<f32> -> tensor<8x!tt.ptr<f32>>
        %q = tt.addptr %ps, %m : tensor<8x!tt.ptr<f32>>, tensor<8xi32>
        %v = tt.load %q : tensor<8x!tt.ptr<f32>>
        tt.store %q, %v : tensor<8x!tt.ptr<f32>>
    """)
    trace = check_pass(ir, "reorder-broadcast", """
        CHECK: [[K:%[a-z0-9_]+]] = arith.constant 3 : i32
        CHECK-NEXT: [[S:%[0-9]+]] = arith.muli %n, [[K]] : i32
        CHECK-NEXT: [[P:%[0-9]+]] = tt.addptr %p, [[S]] : !tt.ptr<f32>, i32
        CHECK-NEXT: tt.splat [[P]] : !tt.ptr<f32> -> tensor<8x!tt.ptr<f32>>
        CHECK-NOT: -> tensor<8xi32>
    """)
    assert patterns_fired(trace)["move-splat-after-elementwise"] == 2


def test_elementwise_on_broadcasts_of_one_shape():
    ir = kernel("""
        %r = tt.make_range {end = 4 : i32, start = 0 : i32} : tensor<4xi32>
        %e = tt.expand_dims %r {axis = 1 : i32} : tensor<4xi32> -> tensor<4x1xi32>
        %b1 = tt.broadcast %e : tensor<4x1xi32> -> tensor<4x8xi32>
        %s = tt.splat %n : i32 -> tensor<4x8xi32>
        %x = arith.addi %b1, %s : tensor<4x8xi32>
        %ps = tt.splat %p : !tt.ptr<f32> -> tensor<4x8x!tt.ptr<f32>>
        %q = tt.addptr %ps, %x : tensor<4x8x!tt.ptr<f32>>, tensor<4x8xi32>
        %v = tt.load %q : tensor<4x8x!tt.ptr<f32>>
        tt.store %q, %v : tensor<4x8x!tt.ptr<f32>>
    """)
    check_pass(ir, "reorder-broadcast", """
        CHECK: [[S:%[0-9]+]] = tt.splat %n : i32 -> tensor<4x1xi32>
        CHECK-NEXT: [[A:%[0-9]+]] = arith.addi %e, [[S]] : tensor<4x1xi32>
        CHECK-NEXT: [[P:%[0-9]+]] = tt.splat %p : !tt.ptr<f32> -> tensor<4x1x!tt.ptr<f32>>
        CHECK-NEXT: [[Q:%[0-9]+]] = tt.addptr [[P]], [[A]] : tensor<4x1x!tt.ptr<f32>>
        CHECK-NEXT: tt.broadcast [[Q]] : tensor<4x1x!tt.ptr<f32>> -> tensor<4x8x!tt.ptr<f32>>
    """)


def test_broadcasts_of_different_shapes_stay():
    ir = kernel("""
        %r = tt.make_range {end = 4 : i32, start = 0 : i32} : tensor<4xi32>
        %e0 = tt.expand_dims %r {axis = 0 : i32} : tensor<4xi32> -> tensor<1x4xi32>
        %e1 = tt.expand_dims %r {axis = 1 : i32} : tensor<4xi32> -> tensor<4x1xi32>
        %b0 = tt.broadcast %e0 : tensor<1x4xi32> -> tensor<4x4xi32>
        %b1 = tt.broadcast %e1 : tensor<4x1xi32> -> tensor<4x4xi32>
        %x = arith.addi %b0, %b1 : tensor<4x4xi32>
        %ps = tt.splat %p : !tt.ptr<f32> -> tensor<4x4x!tt.ptr<f32>>
        %q = tt.addptr %ps, %x : tensor<4x4x!tt.ptr<f32>>, tensor<4x4xi32>
        %v = tt.load %q : tensor<4x4x!tt.ptr<f32>>
        tt.store %q, %v : tensor<4x4x!tt.ptr<f32>>
    """)
    check_pass(ir, "reorder-broadcast", "CHECK: %x = arith.addi %b0, %b1 : tensor<4x4xi32>")


def test_loads_are_not_moved():
    ir = kernel("""
        %ps = tt.splat %p : !tt.ptr<f32> -> tensor<8x!tt.ptr<f32>>
        %v = tt.load %ps : tensor<8x!tt.ptr<f32>>
        tt.store %ps, %v : tensor<8x!tt.ptr<f32>>
    """)
    check_pass(ir, "reorder-broadcast", "CHECK: %v = tt.load %ps : tensor<8x!tt.ptr<f32>>")
