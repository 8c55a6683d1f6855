"""Region timestamps contain their region's work (issue 13 item 4): in the PTX and the SASS
of instrumented kernels, the instructions of a region's ops lie between the region's enter
and exit clock reads (LLVM used to sink `heavy_loop`'s FMA chain past the body's exit read,
so the body timed as 1% of the kernel); the ties change no result and cost a plain kernel
nothing."""
from __future__ import annotations

import re

import numpy as np
import pytest

import compiler
import compiler.language as tl
from compiler.analysis.profile_regions import PROFILE_GLOBAL, block_words, region_table_of_text
from compiler.codegen.lowering import LoweringOptions, lower_module
from compiler.compiler import compile as compile_kernel
from compiler.ir import parse_module, print_module
from compiler.passes.manager import DEFAULT_PIPELINES
from compiler.runtime.specialization import ASTSource
from tests.gpu.test_regions_gpu import heavy_loop

from .simt import GLOBAL_SHIFT, run_kernel


@compiler.jit
def scoped_dot(a_ptr, b_ptr, c_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    a = tl.load(a_ptr + r[:, None] * N + r[None, :])
    b = tl.load(b_ptr + r[:, None] * N + r[None, :])
    with tl.profile("dot"):
        c = tl.dot(a, b)
    tl.store(c_ptr + r[:, None] * N + r[None, :], c * 2.0 + 1.0)


@compiler.jit
def scoped_load(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    with tl.profile("load"):
        v = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, v * v + 1.0)


HEAVY = ASTSource(heavy_loop, {"out": "*fp32", "iters": "i32"}, {"BLOCK": 128}, {})


def _dot(n: int) -> ASTSource:
    """scoped_dot at n x n: 32 takes mma.sync (HMMA), 64 wgmma (HGMMA, a 64-register
    accumulator per thread, tied in two asms)."""
    return ASTSource(scoped_dot, {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32"},
                     {"N": n}, {})


LOAD = ASTSource(scoped_load, {"x_ptr": "*fp32", "out_ptr": "*fp32"}, {"BLOCK": 128}, {})
INSTRUMENTED = {"ttgir": DEFAULT_PIPELINES["ttgir"] + ",instrument-regions{slots=512}"}


def _compile(source, instrumented=True, sass=True):
    options = {"num_warps": 4, "build_sass": sass}
    if instrumented:
        options["pipelines"] = INSTRUMENTED
    return compile_kernel(source, options)


# ---- where each instruction came from, and every path through the code ------------------------
SASS_LINE = re.compile(r'//## File "[^"]*\.ttgir", line (\d+)')
SASS_INSTR = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
SASS_LABEL = re.compile(r"^(\.L_x_\d+):")
SASS_BRANCH = re.compile(r"^(@!?U?P\w+\s+)?BRA\s+`\((\.L_x_\d+)\)")
SASS_END = re.compile(r"^(@!?U?P\w+\s+)?EXIT\b")
PTX_LOC = re.compile(r"^\s*\.loc\s+1\s+(\d+)\s")
PTX_LABEL = re.compile(r"^(\$L__\w+):")
PTX_BRANCH = re.compile(r"^(@!?%p\d+\s+)?bra(?:\.uni)?\s+(\$L__\w+);")
PTX_END = re.compile(r"^(@!?%p\d+\s+)?(ret|exit);")
#: Per form: its line, instruction, label, branch and end patterns and its clock read.
FORMS = {"sass": (SASS_LINE, SASS_INSTR, SASS_LABEL, SASS_BRANCH, SASS_END, "SR_CLOCKLO"),
         "ptx": (PTX_LOC, None, PTX_LABEL, PTX_BRANCH, PTX_END, "%clock64")}


def listing(text: str, form: str) -> tuple:
    """([(ttgir line, instruction, branch target or None, "go"/"branch"/"jump"/"end")],
    {label: index}) of a PTX or SASS listing; the ttgir line comes from `.loc 1 N` (PTX,
    file 1 is the ttgir) or nvdisasm's `//## File "...ttgir", line N` (SASS)."""
    line_re, instr_re, label_re, branch_re, end_re, _ = FORMS[form]
    instrs, labels, line = [], {}, 0
    for raw in text.splitlines():
        stripped = raw.strip()
        m = line_re.search(raw)
        if m:
            line = int(m.group(1))
            continue
        m = label_re.match(stripped)
        if m:
            labels[m.group(1)] = len(instrs)
            continue
        if instr_re is not None:
            m = instr_re.search(raw)
            if m is None:
                continue
            stripped = m.group(2)
        elif not stripped.endswith(";") or stripped.startswith(("//", ".", "{", "}")):
            continue
        branch, end = branch_re.match(stripped), end_re.match(stripped)
        if branch:
            kind, target = ("branch" if branch.group(1) else "jump"), branch.group(2)
        elif end:
            kind, target = ("go" if end.group(1) else "end"), None
        else:
            kind, target = "go", None
        instrs.append((line, stripped, target, kind))
    return instrs, labels


def check_paths(text: str, form: str, region, work: str, anywhere: bool = False) -> int:
    """Along every control-flow path of the listing, every instruction containing `work`
    that a covered op of `region` made (`anywhere`: every one, whatever line it is
    attributed to) comes after one of the region's enter clock reads and before its exit
    read; each exit read closes an open region. Returns how many such instructions the
    listing holds (LLVM may duplicate a record's code into branches: each copy is one path)."""
    instrs, labels = listing(text, form)
    clock = FORMS[form][5]
    covered = set(region.ttgir_lines)

    def is_work(line, instr):
        return work in instr and (anywhere or line in covered)
    stack, seen = [(0, False)], set()
    while stack:
        index, inside = stack.pop()
        while index < len(instrs) and (index, inside) not in seen:
            seen.add((index, inside))
            line, instr, target, kind = instrs[index]
            if clock in instr and line == region.enter_line:
                inside = True
            elif clock in instr and line == region.exit_line:
                assert inside, f"{form}: exit read of {region.name!r} with no enter before it"
                inside = False
            elif is_work(line, instr):
                assert inside, (f"{form}: {instr!r} (ttgir line {line}) of {region.name!r} "
                                f"lies outside its clock reads on some path")
            if kind == "end":
                break
            if kind in ("branch", "jump"):
                stack.append((labels[target], inside))
                if kind == "jump":
                    break
            index += 1
    return sum(1 for line, instr, _, _ in instrs if is_work(line, instr))


def assert_inside(kernel, region_name: str, work: dict, anywhere: bool = False) -> int:
    """`check_paths` in the kernel's PTX and SASS (`work[form]`: what the instructions
    contain); the region's instructions must exist in both. Returns the SASS count."""
    table = {r.name: r for r in region_table_of_text(kernel.asm["ttgir"])}
    counts = {form: check_paths(kernel.asm[form], form, table[region_name], work[form],
                                anywhere) for form in ("ptx", "sass")}
    for form, count in counts.items():
        assert count, f"{form}: no {work[form]} of {region_name!r}"
    return counts["sass"]


def _needs_sass(kernel):
    if not kernel.asm.get("sass"):
        pytest.skip("ptxas/nvdisasm are not installed: " + "; ".join(kernel.trace.notes))


# ---- the work stays between the clock reads ----------------------------------------------------
def test_heavy_loop_body_fmas_lie_between_the_bodys_clock_reads():
    kernel = _compile(HEAVY)
    _needs_sass(kernel)
    body = next(r.name for r in region_table_of_text(kernel.asm["ttgir"])
                if r.name.endswith("body"))
    fmas = {"ptx": "fma.rn.f32", "sass": "FFMA"}     # the kernel's only FMAs are the body's
    assert assert_inside(kernel, body, fmas, anywhere=True) == 1024
    assert_inside(kernel, "kernel", fmas, anywhere=True)
    # the scope's store is not sunk past its exit (the records' own stores are theirs)
    assert assert_inside(kernel, "store", {"ptx": "st.global", "sass": "STG"}) == 1


@pytest.mark.parametrize("n, ptx, sass", [(32, "mma.sync", "HMMA"),
                                           (64, "wgmma.mma_async", "HGMMA")])
def test_a_profile_scope_keeps_its_dot_inside(n, ptx, sass):
    kernel = _compile(_dot(n))
    _needs_sass(kernel)
    assert assert_inside(kernel, "dot", {"ptx": ptx, "sass": sass}) > 0


def test_a_profile_scope_keeps_its_loads_inside():
    kernel = _compile(LOAD)
    _needs_sass(kernel)
    assert assert_inside(kernel, "load", {"ptx": "ld.global", "sass": "LDG"}) > 0


#: What a region's work looks like in each form: (PTX text, SASS text).
WORK = {"fma": ("fma.rn", "FFMA"), "add": ("add.f32", "FADD"), "mma": ("mma", "MMA"),
        "load": ("ld.global", "LDG"), "store": ("st.global", "STG")}


def _sample_source(name: str):
    from compiler.runtime.jit import JITFunction

    from .test_pipeline_samples import SAMPLES
    fn_obj, args, constexprs, _grid, _outputs = SAMPLES[name]()
    fn = JITFunction(fn_obj.fn)
    bound, key = fn.bind(*args, **constexprs)[:2]
    return fn.source_for(fn._specialization(key, bound))


@pytest.mark.parametrize("name", ["vector_add", "softmax", "layernorm", "matmul"])
def test_every_region_of_the_samples_keeps_its_work_on_every_path(name):
    kernel = compile_kernel(_sample_source(name), {"num_warps": 4, "build_sass": True,
                            "pipelines": {"ttgir": DEFAULT_PIPELINES["ttgir"] +
                                          ",instrument-regions{dots=true,memory=true}"}})
    _needs_sass(kernel)
    checked = 0
    for region in region_table_of_text(kernel.asm["ttgir"]):
        for ptx, sass in WORK.values():
            for form, work in (("ptx", ptx), ("sass", sass)):
                checked += check_paths(kernel.asm[form], form, region, work)
    assert checked > 0


def test_instrumenting_the_matmul_adds_no_shared_memory_traffic():
    # records naming a local_load's result must not make the FMA dot's operands registers
    # (the dot reads the buffer itself): that doubled the matmul's registers
    source = _sample_source("matmul")
    plain = compile_kernel(source, {"num_warps": 4})
    instrumented = compile_kernel(source, {"num_warps": 4, "pipelines": {
        "ttgir": DEFAULT_PIPELINES["ttgir"] + ",instrument-regions{dots=true,memory=true}"}})

    def shared(ptx):
        return sum(1 for line in ptx.splitlines() if ".shared." in line)
    assert shared(instrumented.asm["ptx"]) == shared(plain.asm["ptx"]) > 0


def test_the_exit_ties_what_the_region_hands_on_and_the_enter_what_flows_in():
    llir = _compile(HEAVY, sass=False).asm["llir"]
    uses = re.findall(r'asm sideeffect "", "([^"=]*)"', llir)
    ties = re.findall(r'asm sideeffect "", "(=[^"]*)"', llir)
    assert uses and all(set(c.split(",")) <= {"h", "r", "l"} for c in uses)
    assert ties and all(re.fullmatch(r"(=[hrl],)+(\d+,)*\d+|=[hrl],0", c) for c in ties)


# ---- results and cost ----------------------------------------------------------------------------
def _run(kernel, grid, args, slots=512, num_warps=4):
    """The kernel's lowered LLVM run on the SIMT evaluator with a profile buffer; the memory."""
    lowered = lower_module(parse_module(kernel.asm["ttgir"]), LoweringOptions(optimize=False))
    buffer = np.zeros(grid[0] * num_warps * block_words(slots), dtype=np.uint64)
    address = (sum(isinstance(a, np.ndarray) for a in args) + 1) << GLOBAL_SHIFT
    return run_kernel(lowered, grid, args, globals_={
        "profile buffer": buffer, PROFILE_GLOBAL: np.array([address], np.uint64)})


def test_pinned_kernels_compute_what_numpy_does():
    rng = np.random.default_rng(13)
    a, b = (rng.standard_normal((32, 32)).astype(np.float16) for _ in range(2))
    c = np.zeros((32, 32), np.float32)
    memory = _run(_compile(_dot(32), sass=False), (1,), [a, b, c])
    expected = (a.astype(np.float32) @ b.astype(np.float32)) * 2 + 1
    assert np.allclose(memory.read(2, c), expected, rtol=1e-2, atol=1e-2)
    x = rng.standard_normal(256).astype(np.float32)
    out = np.zeros(256, np.float32)
    memory = _run(_compile(LOAD, sass=False), (2,), [x, out])
    assert np.allclose(memory.read(1, out), x * x + 1)
    out = np.zeros(128, np.float32)
    memory = _run(_compile(HEAVY, sass=False), (1,), [out, 2])
    expected = np.arange(128, dtype=np.float64)
    for _ in range(2 * 1024):
        expected = expected * np.float32(0.999999) + 0.5
    assert np.allclose(memory.read(0, out), expected, rtol=1e-5)


def _without_records(ttgir: str) -> str:
    return "\n".join(line for line in ttgir.splitlines() if "tt.profile_" not in line)


def test_plain_kernels_get_no_ties_and_the_same_ptx_as_without_scopes():
    for source in (_dot(32), _dot(64), LOAD, HEAVY):
        plain = _compile(source, instrumented=False, sass=False)
        records = [line for line in plain.asm["ttgir"].splitlines() if "tt.profile_" in line]
        assert records and all(":" not in line.split("{")[0] for line in records)   # bare
        assert 'asm sideeffect "",' not in plain.asm["llir"]
        assert "%clock64" not in plain.asm["ptx"] and PROFILE_GLOBAL not in plain.asm["ptx"]
        stripped = print_module(parse_module(_without_records(plain.asm["ttgir"])))
        again = lower_module(parse_module(stripped))
        plain_llir = lower_module(parse_module(plain.asm["ttgir"])).llvm_ir

        def code(llir):
            return [line for line in llir.splitlines()
                    if line and not line.startswith("!") and "!dbg" not in line]
        assert code(again.llvm_ir) == code(plain_llir)


def test_wide_register_sets_are_tied_in_chunks_and_keep_their_types():
    from llvmlite import ir

    from compiler.codegen import lower_profile
    module = ir.Module()
    f32, f16, i1 = ir.FloatType(), ir.HalfType(), ir.IntType(1)
    ptr = ir.PointerType(ir.IntType(8), addrspace=1)
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [f32] * 70 + [f16, i1, ptr]), "k")
    b = ir.IRBuilder(fn.append_basic_block())
    registers = list(fn.args) + [ir.Constant(f32, 1.0)]
    tied = lower_profile._tie_after(b, registers)
    lower_profile._use_before(b, tied)
    b.ret_void()
    assert [t.type for t in tied] == [r.type for r in registers]
    assert tied[-1] is registers[-1]                       # a constant needs no tie
    text = str(module)
    ties = re.findall(r'asm sideeffect "", "(=[^"]*)"', text)
    uses = re.findall(r'asm sideeffect "", "([^="][^"]*)"', text)
    sizes = [len(c.split(",")) // 2 for c in ties]
    assert sizes == [32, 32, 9] and [len(c.split(",")) for c in uses] == [32, 32, 9]
    assert ties[-1].startswith("=r,=r,=r,=r,=r,=r,=h,=h,=l,")     # f32, f16 and i1, pointer
