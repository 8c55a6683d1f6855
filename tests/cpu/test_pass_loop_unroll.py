"""loop-unroll: factor unrolling with a remainder loop, full unrolling of short loops."""
from compiler.ir import parse_module
from tests.cpu.pass_helpers import check_pass, kernel, run_pipeline


def loop(lb: str, ub: str, attrs: str = "") -> str:
    return kernel(f"""
        %c0 = arith.constant 0 : i32
        %c1 = arith.constant 1 : i32
        %c2 = arith.constant 2 : i32
        %c3 = arith.constant 3 : i32
        %c10 = arith.constant 10 : i32
        %r = scf.for %i = {lb} to {ub} step %c1 iter_args(%acc = %c0) -> (i32) {attrs}: i32 {{
          %a = arith.addi %acc, %i : i32
          scf.yield %a : i32
        }}
        tt.store %p, %r : !tt.ptr<i32>
    """, args="%p: !tt.ptr<i32>, %n: i32")


def test_factor_unroll_makes_main_and_remainder_loops():
    ir = loop("%c0", "%n", "{tt.loop_unroll_factor = 2 : i32} ")
    check_pass(ir, "loop-unroll", """
        CHECK: [[MAIN:%[0-9]+]] = scf.for %{{[a-z0-9_]+}} = %c0 to %{{[0-9]+}} step %c2_i32{{[_0-9]*}} iter_args
        CHECK-NOT: tt.loop_unroll_factor
        CHECK: arith.addi
        CHECK: arith.addi
        CHECK: arith.addi
        CHECK: scf.yield
        CHECK: scf.for %i = %{{[0-9]+}} to %n step %c1 iter_args(%acc = [[MAIN]])
        CHECK-NOT: tt.loop_unroll_factor
    """)


def test_short_constant_loop_with_factor_is_fully_unrolled():
    ir = loop("%c0", "%c2", "{tt.loop_unroll_factor = 4 : i32} ")
    text, trace = run_pipeline(ir, "loop-unroll")
    assert "scf.for" not in text
    assert trace.passes[0].patterns == {"full-unroll": 1}


def test_loops_without_request_stay_unless_option():
    ir = loop("%c0", "%c3")
    check_pass(ir, "loop-unroll", "CHECK: scf.for")
    check_pass(ir, "loop-unroll{max-trip-count=4}", """
        CHECK-NOT: scf.for
        CHECK: arith.addi %c0, %c0
        CHECK: arith.addi
        CHECK: arith.addi
    """)
    check_pass(ir, "loop-unroll{max-trip-count=2}", "CHECK: scf.for")


def _run_loop(text: str, n: int) -> int:
    """Evaluate the unrolled scalar kernel by hand: a tiny evaluator for arith on i32."""
    module = parse_module(text)
    func = module.functions()[0]
    env = {func.regions[0].blocks[0].args[1]: n}

    def run_block(block, values):
        for op in block.ops:
            if op.name == "arith.constant":
                env[op.result] = op.attributes["value"].value
            elif op.name.startswith("arith."):
                a, b = (env[v] for v in op.operands)
                fn = {"addi": a + b, "subi": a - b, "muli": a * b,
                      "divsi": int(a / b) if b else 0, "maxsi": max(a, b)}
                env[op.result] = fn[op.name.split(".")[1]]
            elif op.name == "scf.for":
                lb, ub, step, *inits = (env[v] for v in op.operands)
                carried = inits
                body = op.regions[0].blocks[0]
                for i in range(lb, ub, step):
                    env[body.args[0]] = i
                    for arg, v in zip(body.args[1:], carried):
                        env[arg] = v
                    carried = run_block(body, None)
                for r, v in zip(op.results, carried):
                    env[r] = v
            elif op.name == "scf.yield":
                return [env[v] for v in op.operands]
            elif op.name == "tt.store":
                return env[op.operands[1]]
        return None
    return run_block(func.regions[0].blocks[0], None)


def test_unrolled_loop_computes_the_same_sum():
    for factor in (2, 3, 4):
        ir = loop("%c0", "%n", f"{{tt.loop_unroll_factor = {factor} : i32}} ")
        text, _ = run_pipeline(ir, "loop-unroll")
        for n in (0, 1, 2, 5, 7, 10):
            assert _run_loop(text, n) == sum(range(n)), (factor, n)
