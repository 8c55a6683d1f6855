"""Passes declare the module properties they need and give; impossible pass orders stop with a
PassOrderError naming the pass, what is missing and which pass provides it (issue 14, item 2)."""
from __future__ import annotations

import pytest

from compiler.ir import parse_module
from compiler.passes.manager import DEFAULT_PIPELINES, PassManager, load_all_passes
from compiler.passes.requirements import (INLINED, LAYOUTS, NUM_WARPS, PROPERTIES,
                                          SHARED_ALLOCATED, PassOrderError, check_pipeline,
                                          default_stage_input, describe_pass, properties_of)
from tests.cpu.test_compile_driver import compile_kernel, source
from tests.cpu.ttir_samples import LOOPS

NEEDS_TTGIR = "needs ttgir \\(every tensor has a layout; ttg.num-warps set\\)"


@pytest.mark.parametrize("pipelines,match", [
    ({"ttgir": "coalesce"}, "ttgir pass #0 'coalesce' " + NEEDS_TTGIR +
     ".*add convert-triton-to-tritongpu before it"),
    ({"ttgir": "remove-layout-conversions,convert-triton-to-tritongpu"},
     "'remove-layout-conversions' " + NEEDS_TTGIR),
    ({"ttir": "inline,coalesce"}, "ttir pass #1 'coalesce' " + NEEDS_TTGIR +
     ".*add convert-triton-to-tritongpu before it \\(or move coalesce to the ttgir pipeline\\)"),
    ({"ttgir": ""}, "the llir stage " + NEEDS_TTGIR + ", but tt.make_range makes "
     "tensor<.*> without a layout: add convert-triton-to-tritongpu to the ttgir pipeline"),
    ({"ttgir": "pipeline,allocate-shared-memory"}, "'pipeline' " + NEEDS_TTGIR),
])
def test_impossible_orders_say_what_is_missing_and_what_to_add(pipelines, match):
    with pytest.raises(PassOrderError, match=match) as info:
        compile_kernel(source(64), pipelines=pipelines, stop_after="ptx")
    assert set(info.value.missing) <= set(PROPERTIES)


def test_the_pass_manager_checks_before_each_pass_without_running_it():
    module = parse_module(LOOPS)
    with pytest.raises(PassOrderError, match="ttgir pass #1 'coalesce'") as info:
        PassManager("ttgir", "cse,coalesce").run(module)
    assert info.value.pass_name == "coalesce" and info.value.position == 1
    assert set(info.value.missing) == {LAYOUTS, NUM_WARPS}


def test_check_pipeline_simulates_without_ir():
    held = check_pipeline(DEFAULT_PIPELINES["ttgir"], "ttgir", then="llir")
    assert {LAYOUTS, NUM_WARPS, INLINED, SHARED_ALLOCATED} <= held
    assert INLINED in default_stage_input("ttgir") and LAYOUTS not in default_stage_input("ttgir")
    with pytest.raises(PassOrderError, match="'coalesce' needs"):
        check_pipeline("coalesce", "ttgir")
    assert LAYOUTS in check_pipeline("coalesce", "ttgir", given={LAYOUTS, NUM_WARPS})
    with pytest.raises(PassOrderError, match="the llir stage needs ttir \\(no tt.call left\\)"
                                             ".*add inline to the ttir pipeline"):
        check_pipeline(DEFAULT_PIPELINES["ttgir"], "ttgir", given=(), then="llir")
    # a later pass that breaks what an earlier one made is seen too
    held = check_pipeline("convert-triton-to-tritongpu,allocate-shared-memory,coalesce", "ttgir")
    assert SHARED_ALLOCATED not in held


def test_every_pass_declares_and_properties_check_modules():
    passes = load_all_passes()
    for name, cls in passes.items():
        described = describe_pass(cls)
        assert set(described) == {"requires", "establishes", "invalidates"}
        if cls.stage == "ttgir" and name != "convert-triton-to-tritongpu":
            assert LAYOUTS in cls.requires, name
    for prop in PROPERTIES:
        assert prop.provider in passes
    module = parse_module(LOOPS)
    assert LAYOUTS not in properties_of(module) and NUM_WARPS not in properties_of(module)
    ttgir = compile_kernel(source(64), stop_after="ttgir").ttgir_module
    assert {LAYOUTS, NUM_WARPS, INLINED, SHARED_ALLOCATED} <= properties_of(ttgir)


def test_default_and_valid_orders_still_compile():
    kernel = compile_kernel(source(64), pipelines={
        "ttgir": "convert-triton-to-tritongpu,remove-layout-conversions,coalesce"},
        stop_after="ptx")
    assert ".entry scale_kernel" in kernel.asm["ptx"]


def test_check_pipelines_chains_the_stages_for_editors():
    from compiler.passes.requirements import check_pipelines
    assert {LAYOUTS, NUM_WARPS, INLINED} <= check_pipelines({})
    with pytest.raises(PassOrderError, match="ttir pass #1 'coalesce'"):
        check_pipelines({"ttir": "inline,coalesce"})
    with pytest.raises(PassOrderError, match="the llir stage needs ttir \\(no tt.call left\\)"):
        check_pipelines({"ttir": "cse"})
    module = compile_kernel(source(64), stop_after="ttir")
    front_end = parse_module(module.trace.stage_inputs["ttir"])
    assert INLINED in check_pipelines({"ttir": "cse"}, given=properties_of(front_end))
    with pytest.raises(PassOrderError, match="the llir stage needs ttgir"):
        check_pipelines({"ttgir": "cse"}, given=properties_of(front_end))
