"""Verification and printing after passes are skipped only where they would say the same.

The trace instrumentation verifies after a pass only when the IR differs (`module_shape`) from
IR that verified after an earlier pass of the stage, and the printer hands back its last print
of an unchanged module. These tests break the IR in each way the shape must notice, after
passes that changed nothing, and check that the error still names the breaking pass; and that
unchanged IR really is neither verified nor printed again.
"""
from __future__ import annotations

import pytest

from compiler.dialects.tt import StoreOp
from compiler.ir import parse_module
from compiler.ir.attributes import IntegerAttr
from compiler.ir.printer import print_module, print_module_with_printer
from compiler.ir.shape import module_shape
from compiler.ir.types import IntegerType, TensorType
from compiler.passes.base import Pass
from compiler.passes.instrumentation import TraceInstrumentation
from compiler.passes.manager import PassFailure, PassManager
from compiler.trace import CompileTrace
from tests.cpu.test_pass_manager import IR as PASS_MANAGER_IR

IR = PASS_MANAGER_IR     # two equal addi (cse merges them), a splat, a load and a store


class Nothing(Pass):
    """Test pass: changes nothing."""

    name = "nothing"

    def run(self, module, ctx):
        pass


def _store(module):
    return next(op for op in module.walk() if isinstance(op, StoreOp))


def _splat_of_x(module):
    return next(op for op in module.walk() if op.results and op.results[0].type ==
                TensorType((2,), IntegerType(32)))


def _move_store_first(module):          # an operand defined after its use
    func = module.functions()[0]
    _store(module).move_before(func.regions[0].blocks[0].ops[0])


def _detach_parent(module):             # the op stays in its block, its parent link is cut
    _store(module).parent = None


def _retype_in_place(module):           # a result's type replaced, the op left as it was
    _splat_of_x(module).results[0].type = TensorType((0,), IntegerType(32))


def _bad_attribute(module):             # an attribute replaced in place, of the wrong type
    constant = next(op for op in module.walk() if "value" in op.attributes)
    constant.attributes["value"] = IntegerAttr(7, IntegerType(64))


def _drop_terminator(module):
    block = module.functions()[0].regions[0].blocks[0]
    block.ops.pop()


BREAKS = {"move": (_move_store_first, "does not dominate"),
          "parent": (_detach_parent, "parent link is broken"),
          "retype": (_retype_in_place, "tensor dims must be positive"),
          "attribute": (_bad_attribute, "value type i64 differs from result type i32"),
          "terminator": (_drop_terminator, "must end in a terminator")}


def _breaker(how):
    class Break(Pass):
        """Test pass: breaks the IR one way."""

        name = f"break-{how}"

        def run(self, module, ctx):
            BREAKS[how][0](module)
    return Break()


@pytest.mark.parametrize("snapshots", [True, False])
@pytest.mark.parametrize("how", sorted(BREAKS))
def test_a_pass_that_breaks_unchanged_ir_is_named(how, snapshots):
    trace = CompileTrace("k")
    instrumentation = TraceInstrumentation(trace, snapshots=snapshots)
    pm = PassManager("ttir", [Nothing(), "cse", Nothing(), _breaker(how), Nothing()],
                     [instrumentation])
    with pytest.raises(PassFailure) as err:
        pm.run(parse_module(IR))
    assert err.value.pass_name == f"break-{how}" and err.value.index == 3
    assert BREAKS[how][1] in str(err.value)
    assert trace.passes[-1].name == f"break-{how}" and "verifier" in trace.passes[-1].error


def test_unchanged_ir_is_verified_once(monkeypatch):
    import compiler.passes.instrumentation as instrumentation
    calls = []
    original = instrumentation.verify_module
    monkeypatch.setattr(instrumentation, "verify_module",
                        lambda module, *a: calls.append(1) or original(module, *a))
    trace = CompileTrace("k")

    class AddOne(Pass):
        """Test pass: adds 1 to the constant (a change)."""

        name = "add-one"

        def run(self, module, ctx):
            constant = next(op for op in module.walk() if "value" in op.attributes)
            old = constant.attributes["value"]
            constant.attributes["value"] = IntegerAttr(old.value + 1, old.type)

    pm = PassManager("ttir", [Nothing(), Nothing(), AddOne(), Nothing(), "cse", Nothing()],
                     [TraceInstrumentation(trace)])
    pm.run(parse_module(IR))
    assert len(calls) == 3          # after the first pass, add-one and cse (the changes)
    assert [r.changed for r in trace.passes] == [False, False, True, False, True, False]


def test_the_printer_reprints_only_a_changed_module():
    module = parse_module(IR)
    first = print_module_with_printer(module)
    assert print_module_with_printer(module) is first
    assert print_module_with_printer(module, shape=module_shape(module)) is first
    _store(module).move_before(module.functions()[0].regions[0].blocks[0].ops[-1])
    assert print_module_with_printer(module) is first      # moved onto itself: no change
    constant = next(op for op in module.walk() if "value" in op.attributes)
    constant.attributes["value"] = IntegerAttr(2, IntegerType(32))
    second = print_module_with_printer(module)
    assert second is not first and "arith.constant 2 : i32" in second[0]
    assert print_module(module) == second[0]


def test_a_renamed_value_or_moved_location_is_a_change():
    module = parse_module(IR)
    before = module_shape(module)
    _splat_of_x(module).results[0].name_hint = "renamed"
    assert module_shape(module) != before
    assert "%renamed" in print_module(module)
