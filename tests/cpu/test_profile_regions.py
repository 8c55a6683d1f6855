"""In-kernel regions (issue 13 item 4): the record ops, the instrument-regions pass (IR,
PTX, ptxas), the lowering's buffer run on the SIMT evaluator and decoded, the interpreter's
wall-clock regions through the profiler, the decoder on synthetic buffers, the trace field."""
from __future__ import annotations

import json

import numpy as np
import pytest

import compiler
import compiler.language as tl
import compiler.profiler as proton
import compiler.profiler.language as pl
from compiler.analysis.profile_regions import region_table, region_table_of_text
from compiler.analysis.profile_regions import (HEADER_WORDS, KIND_SHIFT, PROFILE_GLOBAL,
                                            RECORD_WORDS, WARP_SHIFT, block_words)
from compiler.codegen.lowering import LoweringOptions, lower_module
from compiler.compiler import compile as compile_kernel
from compiler.dialects.tt import ProfileEnterOp, ProfileExitOp
from compiler.ir import parse_module, print_module
from compiler.ir.traits import MemoryWrite, Pure
from compiler.passes.manager import DEFAULT_PIPELINES, PipelineError
from compiler.profiler.instrument import pass_text
from compiler.profiler.regions import (ENTER, EXIT, decode_buffer, decode_interpreter,
                                       region_stats, spans, warp_events)
from compiler.profiler.state import STATE
from compiler.runtime.specialization import ASTSource
from compiler.trace import CompileTrace

from .filecheck import filecheck
from .pass_helpers import run_pipeline
from .simt import GLOBAL_SHIFT, run_kernel


@compiler.jit
def loop_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), tl.float32)
    for i in range(n):
        with tl.profile("load"):
            v = tl.load(x_ptr + offs + i)
        acc += v
    tl.store(out_ptr + offs, acc)


@compiler.jit
def dot_kernel(a_ptr, b_ptr, c_ptr):
    r = tl.arange(0, 16)
    a = tl.load(a_ptr + r[:, None] * 16 + r[None, :])
    b = tl.load(b_ptr + r[:, None] * 16 + r[None, :])
    pl.enter_scope("mma")
    c = tl.dot(a, b)
    pl.exit_scope("mma")
    tl.store(c_ptr + r[:, None] * 16 + r[None, :], c)


def _line(text: str) -> int:
    """The 1-based line of this file where `text` first appears."""
    with open(__file__) as f:
        return next(n for n, line in enumerate(f, 1) if text in line)


LOOP, LOAD, ADD = (_line("for i in range(n):"), _line("v = tl.load(x_ptr + offs + i)"),
                   _line("acc += v"))
BODY = f"loop L{LOOP} body"


def _loop_source():
    return ASTSource(loop_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"},
                     {"BLOCK": 128}, {})


def _instrumented(source, options: str = "", num_warps: int = 4):
    text = "instrument-regions" + ("{" + options + "}" if options else "")
    return compile_kernel(source, {"num_warps": num_warps, "pipelines": {
        "ttgir": DEFAULT_PIPELINES["ttgir"] + "," + text}})


@pytest.fixture(autouse=True)
def no_sessions_left():
    yield
    for session in list(STATE.sessions):
        proton.finalize(session)


# ---- the ops -----------------------------------------------------------------------------------
RECORDS_IR = """
module {
  tt.func public @k(%p: !tt.ptr<f32>) {
    tt.profile_enter 0 "a" {kind = "scope"}
    tt.profile_enter 0 "a" {kind = "scope"}
    tt.profile_exit 0 "a" {kind = "scope"}
    tt.profile_exit 0 "a" {kind = "scope"}
    tt.return
  }
}
"""


def test_record_ops_round_trip_and_are_effects_not_pure():
    module = parse_module(RECORDS_IR)
    text = print_module(module)
    assert 'tt.profile_enter 0 "a" {kind = "scope"}' in text
    assert print_module(parse_module(text)) == text
    for cls in (ProfileEnterOp, ProfileExitOp):
        assert cls.class_has_trait(MemoryWrite) and not cls.class_has_trait(Pure)
    out, _ = run_pipeline(RECORDS_IR, "canonicalize,cse,licm,dce")
    assert out.count("tt.profile_enter") == 2 and out.count("tt.profile_exit") == 2


PINNED_IR = """
module {
  tt.func public @k(%p: !tt.ptr<f32>, %n: i32) {
    tt.profile_enter 0 "a" %p, %n {kind = "scope"} : !tt.ptr<f32>, i32
    %x = arith.addi %n, %n : i32
    tt.profile_exit 0 "a" %x {kind = "scope"} : i32
    tt.return
  }
}
"""


def test_records_with_pinned_values_round_trip_and_check_their_types():
    text = print_module(parse_module(PINNED_IR))
    assert 'tt.profile_enter 0 "a" %p, %n {kind = "scope"} : !tt.ptr<f32>, i32' in text
    assert 'tt.profile_exit 0 "a" %x {kind = "scope"} : i32' in text
    assert print_module(parse_module(text)) == text
    with pytest.raises(Exception, match="operand #1 has type i32, but f32 is written"):
        parse_module(PINNED_IR.replace("!tt.ptr<f32>, i32\n", "!tt.ptr<f32>, f32\n"))
    with pytest.raises(Exception, match="2 operands but 1 types written"):
        parse_module(PINNED_IR.replace("!tt.ptr<f32>, i32\n", "!tt.ptr<f32>\n"))


def test_an_unclosed_scope_is_refused_where_it_starts():
    bad = PINNED_IR.replace('    tt.profile_exit 0 "a" %x {kind = "scope"} : i32\n', "")
    module = parse_module(bad)
    from compiler.passes.ttgir_instrument_regions import pin_regions
    from compiler.ir.verifier_errors import VerificationError
    with pytest.raises(VerificationError, match="has no tt.profile_exit 0 later in its block"):
        pin_regions(module)


def test_record_op_verifier_wants_a_region_id():
    from compiler.ir.verifier import verify_module
    bad = RECORDS_IR.replace('tt.profile_enter 0 "a" {kind = "scope"}\n    tt.profile_enter',
                             'tt.profile_enter 0 "a" {kind = "scope"}\n    "tt.profile_enter"'
                             '() {name = "a"} : () -> ()\n    tt.profile_enter', 1)
    with pytest.raises(Exception, match="region"):
        verify_module(parse_module(bad))


# ---- the pass ----------------------------------------------------------------------------------
def test_pass_wraps_loop_bodies_memory_groups_and_the_kernel():
    # each record carries the values its clock read is ordered against (region_flow): an
    # enter the values of its own block flowing in (the loop body: its induction variable
    # and iteration argument; the kernel: its arguments), an exit the values used after it
    # (the loop body: the yielded sum); loop invariants (%offs_4) and constants are left out,
    # and so (below) are values only ops inside a covered loop use
    kernel = _instrumented(_loop_source(), "memory=true")
    filecheck(kernel.asm["ttgir"], f"""
        CHECK: tt.profile.slots = 256 : i32
        CHECK: tt.profile_enter [[K:[0-9]+]] "kernel" %x_ptr, %n, %out_ptr {{kind = "kernel"}}
        CHECK-SAME: : !tt.ptr<f32>, i32, !tt.ptr<f32>
        CHECK: scf.for [[IV:%[a-z_0-9]+]] = {{{{.*}}}} iter_args([[ACC:%[a-z_0-9]+]] =
        CHECK-NEXT: tt.profile_enter [[L:[0-9]+]] "{BODY}" [[IV]], [[ACC]] {{kind = "loop"}}
        CHECK: tt.profile_enter 0 "load" [[IV]] {{kind = "scope"}} : i32
        CHECK: [[PTR:%[a-z_0-9]+]] = tt.addptr
        CHECK-NEXT: tt.profile_enter [[M:[0-9]+]] "memory L{LOAD}" [[PTR]]
        CHECK-NEXT: [[V:%[a-z_0-9]+]] = tt.load
        CHECK-NEXT: tt.profile_exit [[M]] "memory L{LOAD}" [[V]]
        CHECK: tt.profile_exit 0 "load" [[V]]
        CHECK: [[SUM:%[a-z_0-9]+]] = arith.addf [[ACC]], [[V]]
        CHECK-NEXT: tt.profile_exit [[L]] "{BODY}" [[SUM]] {{kind = "loop"}}
        CHECK-NEXT: scf.yield [[SUM]]
        CHECK: tt.store
        CHECK-NEXT: tt.profile_exit {{{{[0-9]+}}}} "memory L{{{{[0-9]+}}}}" {{kind = "memory"}}
        CHECK: tt.profile_exit [[K]] "kernel" {{kind = "kernel"}}
        CHECK-NEXT: tt.return
    """)
    record = [p for p in kernel.trace.passes if p.name == "instrument-regions"][0]
    assert record.changed and record.patterns == {"instrument-loop": 1, "instrument-memory": 2,
                                                  "instrument-kernel": 1}
    assert record.doc.startswith("Puts `tt.profile_enter`")


def test_pass_options_dots_and_whole_loops():
    kernel = _instrumented(ASTSource(dot_kernel, {"a_ptr": "*fp32", "b_ptr": "*fp32",
                                                  "c_ptr": "*fp32"}, {}, {}), "dots=true")
    filecheck(kernel.asm["ttgir"], """
        CHECK: tt.profile_enter 0 "mma" {kind = "scope"}
        CHECK: [[A:%[a-z_0-9]+]] = ttg.local_load
        CHECK-NEXT: [[B:%[a-z_0-9]+]] = ttg.local_load
        CHECK-NEXT: tt.profile_enter [[D:[0-9]+]] "dot L{{[0-9]+}}" [[A]], [[B]] {kind = "dot"}
        CHECK-NEXT: [[C:%[a-z_0-9]+]] = tt.dot [[A]], [[B]]
        CHECK-NEXT: tt.profile_exit [[D]] "dot L{{[0-9]+}}" [[C]]
        CHECK-NEXT: tt.profile_exit 0 "mma" [[C]]
    """)
    whole = _instrumented(_loop_source(), "loops=whole,kernel=false").asm["ttgir"]
    filecheck(whole, f"""
        CHECK-NOT: "kernel"
        CHECK: tt.profile_enter [[W:[0-9]+]] "loop L{LOOP}" %n {{kind = "loop"}} : i32
        CHECK-NEXT: [[R:%[0-9]+]] = scf.for
        CHECK: scf.yield
        CHECK-NEXT: }}
        CHECK-NEXT: tt.profile_exit [[W]] "loop L{LOOP}" [[R]] {{kind = "loop"}}
    """)
    with pytest.raises(PipelineError):
        pass_text("instrumentation:bogus=1")


def test_region_table_maps_ids_to_ttgir_and_python_lines():
    kernel = _instrumented(_loop_source())
    ttgir = kernel.asm["ttgir"]
    table = {r.name: r for r in region_table_of_text(ttgir)}
    lines = ttgir.splitlines()
    load = table["load"]
    assert load.kind == "scope" and load.python_lines == [f"{__file__}:{LOAD}"]
    assert all("tt.load" in lines[n - 1] or "addptr" in lines[n - 1] or "splat" in lines[n - 1]
               or "addi" in lines[n - 1] for n in load.ttgir_lines)
    assert "profile_enter" in lines[load.enter_line - 1]
    body = table[BODY]
    assert set(load.ttgir_lines) < set(body.ttgir_lines)
    assert {f"{__file__}:{LOAD}", f"{__file__}:{ADD}"} <= set(body.python_lines)


# ---- the PTX -----------------------------------------------------------------------------------
def test_ptx_reads_the_clocks_and_bounds_its_stores():
    kernel = _instrumented(_loop_source(), "slots=64")
    ptx = kernel.asm["ptx"]
    assert f".visible .global .align 8 .u64 {PROFILE_GLOBAL}" in ptx
    assert ptx.count("%globaltimer;") >= 4 and ptx.count("%clock64;") >= 4
    assert "setp.lt.u32" in ptx and ", 64;" in ptx           # record slot < slots
    assert "st.global.b64" in ptx or "st.global.u64" in ptx
    if not kernel.asm.get("cubin"):
        pytest.skip("ptxas is not installed: " + "; ".join(kernel.trace.notes))
    assert kernel.trace.cubin_info["registers"] > 0            # ptxas accepted it


def test_without_the_pass_user_scopes_cost_nothing():
    kernel = compile_kernel(_loop_source(), {"num_warps": 4})
    assert "tt.profile_enter 0" in kernel.asm["ttgir"]
    assert "globaltimer" not in kernel.asm["ptx"] and PROFILE_GLOBAL not in kernel.asm["ptx"]


# ---- the lowering's buffer, run on the SIMT evaluator ----------------------------------------
def test_lowered_records_land_in_each_warps_block_and_overflow_is_counted():
    ttgir = _instrumented(_loop_source(), "slots=8", num_warps=2).asm["ttgir"]
    lowered = lower_module(parse_module(ttgir), LoweringOptions(optimize=False))
    n, programs = 3, 2
    x = np.arange(programs * 128 + n, dtype=np.float32)
    out = np.zeros(programs * 128, dtype=np.float32)
    words = programs * 2 * block_words(8)
    buffer = np.zeros(words + 16, dtype=np.uint64)             # 16 guard words stay zero
    address = 3 << GLOBAL_SHIFT              # buffer 3: after x and out (no kernel names it)
    memory = run_kernel(lowered, (programs,), [x, out, n],
                        globals_={"profile buffer": buffer,
                                  PROFILE_GLOBAL: np.array([address], np.uint64)})
    got = memory.read(1, out)
    expected = sum(x[i:i + programs * 128] for i in range(n))
    assert np.allclose(got, expected)
    raw = memory.read(2, buffer)
    assert not raw[words:].any()
    decoded = decode_buffer(raw, programs, 2, 8)
    # per warp: kernel enter, 3 x (body enter, load enter, load exit, body exit), kernel exit
    assert decoded.overflow == {(p, w): 14 - 8 for p in range(programs) for w in range(2)}
    assert {(r.program, r.warp) for r in decoded.records} == {(p, w) for p in range(2)
                                                              for w in range(2)}
    assert [r.kind for r in decoded.records[:3]] == [ENTER, ENTER, ENTER]
    table = region_table_of_text(ttgir)
    stats = {s["name"]: s for s in region_stats(decoded, table)}
    assert stats["load"]["count"] == 2 * 4                     # two whole iterations stored
    assert stats["load"]["cycles"]["min"] > 0


# ---- the decoder on synthetic buffers ----------------------------------------------------------
def _block(records, slots, made=None):
    block = np.zeros(block_words(slots), dtype=np.uint64)
    block[0] = len(records) if made is None else made
    for i, (region, kind, warp, program, ns, cycles) in enumerate(records[:slots]):
        at = HEADER_WORDS + i * RECORD_WORDS
        block[at:at + 4] = [region | kind << KIND_SHIFT | warp << WARP_SHIFT, program, ns,
                            cycles]
    return block


def test_decoder_pairs_records_and_summarizes_over_warps():
    slots = 4
    w0 = [(0, ENTER, 0, 0, 100, 1000), (0, EXIT, 0, 0, 150, 1100),
          (0, ENTER, 0, 0, 160, 1200), (0, EXIT, 0, 0, 200, 1260)]
    w1 = [(0, ENTER, 1, 0, 100, 1000), (0, EXIT, 1, 0, 400, 1400)]
    p1w0 = [(0, ENTER, 0, 1, 500, 7000), (0, EXIT, 0, 1, 520, 7030)]
    p1w1 = [(1, ENTER, 1, 1, 600, 9000)]
    buffer = np.concatenate([_block(w0, slots, made=6), _block(w1, slots),
                             _block(p1w0, slots), _block(p1w1, slots)])
    decoded = decode_buffer(buffer, 2, 2, slots)
    assert decoded.overflow == {(0, 0): 2} and decoded.lost == 2
    done, unpaired = spans(decoded)
    assert len(done) == 4 and unpaired == 1
    from compiler.analysis.profile_regions import Region
    stats = region_stats(decoded, [Region(0, "loop", "loop")])
    assert len(stats) == 1
    loop = stats[0]
    assert loop["count"] == 4 and loop["warps"] == 3
    assert loop["cycles"] == {"min": 30, "median": 160, "max": 400, "total": 590}
    assert loop["ns"]["total"] == 50 + 40 + 300 + 20
    events = warp_events(decoded, [Region(0, "loop", "loop")])
    tracks = {e["tid"] for e in events if e["ph"] == "X"}
    assert tracks == {0, 1, 2}
    with pytest.raises(ValueError, match="need"):
        decode_buffer(buffer[:-1], 2, 2, slots)


def test_interpreter_records_decode_as_wall_time():
    decoded = decode_interpreter([(0, ENTER, 0, 0, 10), (0, EXIT, 0, 0, 25)])
    stats = region_stats(decoded, [])
    assert decoded.source == "interpreter" and "cycles" not in stats[0]
    assert stats[0]["ns"]["total"] == 15 and stats[0]["name"] == "region 0"


# ---- through the profiler, interpreted -----------------------------------------------------------
def test_instrumentation_mode_puts_interpreter_regions_under_the_kernel(tmp_path):
    x = np.arange(512, dtype=np.float32)
    out = np.zeros(256, dtype=np.float32)
    session = proton.start(str(tmp_path / "regions"), mode="instrumentation")
    with proton.scope("fwd"):
        loop_kernel[(2,)](x, out, 5, BLOCK=128, interpret=True)
    profile = STATE.sessions[session].profile
    assert np.allclose(out, sum(x[i:i + 256] for i in range(5)))
    kernel = next(iter(profile.root.children["fwd"].children.values()))
    regions = {name: node for name, node in kernel.children.items()}
    assert {n.kind for n in regions.values()} == {"region"}
    assert regions["load"].metrics["region_executions"] == 2 * 5
    assert regions[BODY].metrics["region_executions"] == 2 * 5
    assert regions["kernel"].metrics["region_executions"] == 2
    wall = "region time (wall, interpreter)"
    assert regions["kernel"].metrics[wall] >= regions[BODY].metrics[wall] > 0
    assert regions["load"].attributes["python_lines"] == [f"{__file__}:{LOAD}"]
    assert profile.metadata["instrumentation"]["time_source"] == "interpreter"
    from compiler.profiler.export import write_profile
    from compiler.profiler.viewer import load, render
    hatchet_path = write_profile(profile, tmp_path / "regions", "hatchet")
    text = render(load(hatchet_path)[0], metrics=("time/ms", "count", "region_executions"))
    assert f"{BODY}" in text and "load" in text
    hatchet = pytest.importorskip("hatchet")
    graph = hatchet.GraphFrame.from_literal(json.loads(hatchet_path.read_text())[:1])
    frame = graph.dataframe
    assert int(frame[frame["name"] == "load"]["region_executions"].iloc[0]) == 10
    trace_path, = proton.finalize(session, "chrome_trace")
    events = json.loads(trace_path.read_text())["traceEvents"]
    assert {e["name"] for e in events if e.get("cat") == "region"} >= {"load", "kernel"}
    assert {e["args"]["name"] for e in events if e.get("ph") == "M" and e["pid"] == 1
            and e["name"] == "thread_name"} == {"program 0 warp 0", "program 1 warp 0"}


def test_mode_off_runs_the_plain_kernel_and_bad_modes_are_refused(tmp_path):
    x = np.arange(300, dtype=np.float32)
    out = np.zeros(128, dtype=np.float32)
    session = proton.start(str(tmp_path / "plain"))
    loop_kernel[(1,)](x, out, 2, BLOCK=128, interpret=True)
    kernel = next(iter(STATE.sessions[session].profile.root.children.values()))
    assert kernel.children == {}
    proton.deactivate(session)
    with pytest.raises(ValueError, match="mode"):
        proton.start(str(tmp_path / "bad"), mode="sampling")
    assert pass_text("default:buffer_size=4096") == "instrument-regions{slots=128}"
    assert proton.start(str(tmp_path / "proton-style"), backend="instrumentation", mode="default") >= 0


# ---- the trace field ---------------------------------------------------------------------------
def test_trace_regions_field_round_trips_and_old_traces_load():
    trace = CompileTrace("k", regions=[{"id": 0, "name": "load", "ttgir_lines": [3],
                                        "cycles": {"median": 10}}])
    again = CompileTrace.from_json(trace.to_json())
    assert again.regions == trace.regions
    old = json.loads(trace.to_json())
    del old["regions"]
    assert CompileTrace.from_dict(old).regions == []


# ---- front-end errors --------------------------------------------------------------------------
@compiler.jit
def unnamed_scope(x):
    with tl.profile(3):
        pass


@compiler.jit
def bound_scope(x):
    with tl.profile("a") as p:  # noqa: F841
        pass


@pytest.mark.parametrize("kernel, message, col", [
    (unnamed_scope, "a profile scope needs a constant, non-empty string name, got 3", 9),
    (bound_scope, "`with` blocks are not supported in kernels, except", 4)])
def test_scope_errors_point_at_the_with(kernel, message, col):
    from compiler.frontend.errors import CompilationError
    with pytest.raises(CompilationError) as info:
        ASTSource(kernel, {"x": "*fp32"}, {}, {}).make_ttir({"num_warps": 4})
    assert message in str(info.value) and info.value.col == col
    assert info.value.line == _line("with tl.profile(3)" if col == 9 else 'as p:')


def test_under_a_full_compile_recorder_regions_point_into_the_variants_ttgir(tmp_path):
    from compiler.runtime import recording
    x = np.arange(100, dtype=np.float32)
    out = np.zeros(32, dtype=np.float32)
    with recording.record(full_compile=True) as recorder:     # BLOCK=32: a new entry, compiled
        session = proton.start(str(tmp_path / "explorer"), mode="instrumentation")
        loop_kernel[(1,)](x, out, 3, BLOCK=32, interpret=True)
        proton.deactivate(session)
    assert np.allclose(out, x[:32] + x[1:33] + x[2:34])
    trace = next(t for t in recorder.traces if t.regions)
    assert any(p.name == "instrument-regions" for p in trace.passes)
    lines = trace.stages["ttgir"].splitlines()
    load = next(r for r in trace.regions if r["name"] == "load")
    assert "tt.profile_enter 0" in lines[load["enter_line"] - 1]
    assert any("tt.load" in lines[n - 1] for n in load["ttgir_lines"])
    assert load["count"] == 3 and "cycles" not in load          # wall clock, interpreter


def test_proton_language_through_the_triton_alias():
    from compiler import triton_alias
    with triton_alias.installed():
        import triton.profiler.language as proton_language
        assert proton_language is pl


# ---- the GPU variant's launch path, with the device faked by the SIMT evaluator -------------
class _FakeDevice:
    """Device memory as numpy arrays at fake addresses, the kernel global included; launches
    run the variant's lowered (unoptimized) IR on the SIMT evaluator."""

    GLOBAL = 0x7000

    def __init__(self):
        self.arrays = {}                 # address -> numpy array
        self.global_value = 0

    def empty(self, shape, dtype):
        array = np.zeros(shape, dtype=dtype)
        address = 0x10000 * (len(self.arrays) + 1)
        self.arrays[address] = array
        return type("FakeArray", (), {"shape": array.shape,
                                      "data_ptr": staticmethod(lambda: address)})()

    def memcpy_htod(self, dst, src_host_address, nbytes):
        import ctypes
        assert dst == self.GLOBAL and nbytes == 8
        self.global_value = ctypes.c_uint64.from_address(src_host_address).value

    def memset_d8(self, dst, value, nbytes):
        self.arrays[dst].view(np.uint8)[:nbytes] = value

    def memcpy_dtoh(self, dst_host_address, src, nbytes):
        import ctypes
        ctypes.memmove(dst_host_address, self.arrays[src].ctypes.data, nbytes)

    def launcher(self, compiled):
        device = self

        def launch(grid, args, stream=None):
            lowered = lower_module(parse_module(compiled.asm["ttgir"]),
                                   LoweringOptions(optimize=False))
            profile = device.arrays[device.global_value]
            arrays = [a for a in args if isinstance(a, np.ndarray)]
            memory = run_kernel(lowered, grid, list(args), globals_={
                "profile": profile,
                PROFILE_GLOBAL: np.array([(len(arrays) + 1) << GLOBAL_SHIFT], np.uint64)})
            for index, array in enumerate(arrays):
                array[...] = memory.read(index, array)
            profile[...] = memory.read(len(arrays), profile)

        module = type("Module", (), {"handle": "fake module"})()
        loaded = type("Loaded", (), {"module": module})()
        return type("FakeLauncher", (), {"launch": staticmethod(launch), "loaded": loaded})()


def test_gpu_variant_arms_launches_and_decodes_on_a_faked_device(monkeypatch):
    from compiler.profiler import instrument
    from compiler.runtime import driver
    from compiler.runtime.device_array import DeviceArray
    device = _FakeDevice()
    bindings = type("Bindings", (), {"cuModuleGetGlobal": staticmethod(
        lambda handle, name: (0, device.GLOBAL, 8))})()
    monkeypatch.setattr(driver, "bindings", lambda: bindings)
    for name in ("memcpy_htod", "memset_d8", "memcpy_dtoh"):
        monkeypatch.setattr(driver, name, getattr(device, name))
    monkeypatch.setattr(driver, "synchronize", lambda device=0: None)
    monkeypatch.setattr(DeviceArray, "empty", staticmethod(device.empty))
    from compiler.compiler import CompiledKernel
    monkeypatch.setattr(CompiledKernel, "launcher", lambda self: device.launcher(self))
    plain_kernel = compile_kernel(_loop_source(), {"num_warps": 2})
    plain = type("Plain", (), {"kernel": plain_kernel, "spec": None, "select": None,
                               "num_warps": 2, "takes_addresses": False,
                               "runtime_args": lambda self, bound: bound})()
    monkeypatch.setattr(loop_kernel, "source_for", lambda spec: _loop_source())
    variant = instrument.Instrumentation(pass_text("instrumentation:slots=32")).variant(
        plain, loop_kernel)
    assert isinstance(variant, instrument.GpuVariant) and variant.slots == 32
    x = np.arange(2 * 128 + 4, dtype=np.float32)
    out = np.zeros(2 * 128, dtype=np.float32)
    variant.launch((2,), (x, out, 4))
    assert np.allclose(out, sum(x[i:i + 256] for i in range(4)))
    decoded = variant.take()
    assert decoded.source == "gpu" and decoded.lost == 0
    stats = {s["name"]: s for s in region_stats(decoded, variant.table)}
    assert stats[BODY]["count"] == 2 * 2 * 4 and stats["kernel"]["warps"] == 4
    assert stats["kernel"]["cycles"]["min"] > stats[BODY]["cycles"]["max"] > 0
    assert any(p.name == "instrument-regions" for p in variant.trace.passes)
