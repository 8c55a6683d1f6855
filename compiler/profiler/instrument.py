"""Instrumentation mode: our kernels launched as region-instrumented variants, their profile
buffers read back and decoded.

`start(..., mode="instrumentation")` (or Proton's `backend="instrumentation"`, with
`mode="default"` / `"default:slots=512:dots=true"`) turns the mode on for as long as a session
that asked for it is open. Each launch of ours then runs a variant of its jit cache entry,
made once per entry: on the GPU the same specialization compiled with
`instrument-regions{...}` appended to the ttgir pipeline (so the compile trace shows the pass),
under the interpreter the entry's ttir with the pass run on a copy. A GPU variant allocates
the buffer its grid needs (`lower_profile.block_words` u64 words per warp), points the
kernel's `__tile_profile_buffer` global at it, and after the launch synchronizes and copies
it back. Plain launches are untouched: with the mode off nothing here runs.
"""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from compiler.analysis.profile_regions import (PROFILE_GLOBAL, RECORD_WORDS, block_words,
                                               region_table, region_table_of_text)
from compiler.ir.parser import parse_module
from compiler.profiler.regions import Decoded, decode_buffer, decode_interpreter

#: The pass the mode appends to the ttgir pipeline.
PASS_NAME = "instrument-regions"
#: First words of a mode string that mean "instrument with these options".
MODE_WORDS = ("instrumentation", "default")


def pass_text(mode) -> str:
    """The pass (with options) for a mode: None, "instrumentation", "default" or either with
    `:key=value` options (the pass's: loops, dots, memory, kernel, slots; Proton's
    `buffer_size` in bytes per warp sets slots)."""
    text = "default" if mode is None else str(mode)
    word, *options = text.split(":")
    if word not in MODE_WORDS:
        raise ValueError(f"profiler: instrumentation mode {text!r}; it starts with one of "
                         f"{', '.join(map(repr, MODE_WORDS))}")
    pairs = []
    for option in options:
        key, sep, value = option.partition("=")
        if not sep:
            raise ValueError(f"profiler: mode option {option!r} is not key=value")
        if key == "buffer_size":
            key, value = "slots", str(max(1, int(value) // (8 * RECORD_WORDS)))
        pairs.append(f"{key}={value}")
    text = PASS_NAME + ("{" + ",".join(pairs) + "}" if pairs else "")
    from compiler.passes.manager import PassManager
    PassManager("ttgir", text)          # unknown options and bad values are refused here
    return text


def _make_pass(text: str):
    from compiler.passes.manager import PassManager
    return PassManager("ttgir", text).passes[0]


class _Variant:
    """What both kinds of variant share: the plain entry's argument handling (the variant's
    kernel takes the same arguments) and the last launch's decoded records."""

    instrumented = True

    def __init__(self, plain, kernel, trace, table: list, slots: int):
        self.plain = plain
        self.kernel = kernel
        self.trace = trace
        self.table = table
        self.slots = slots
        self.spec = plain.spec
        self.select = plain.select
        self.num_warps = plain.num_warps
        self.takes_addresses = plain.takes_addresses
        self.last: Decoded | None = None

    def runtime_args(self, bound: tuple) -> tuple:
        """The arguments `launch` takes (the plain entry's)."""
        return self.plain.runtime_args(bound)

    def take(self) -> Decoded | None:
        """The last launch's records (once)."""
        decoded, self.last = self.last, None
        return decoded


class InterpreterVariant(_Variant):
    """An interpreter entry run instrumented; records are wall clock. When the entry was
    compiled through every stage too (a recorder such as the explorer's asked for it), the
    instrumented variant is compiled likewise and its ttgir interpreted, so the regions'
    ttgir lines are those of the variant's trace; else the pass runs on a copy of the entry's
    ttir and the regions keep only their Python lines."""

    def __init__(self, plain, jit, text: str):
        from compiler.passes.base import PassContext
        instrument = _make_pass(text)
        if getattr(plain.kernel, "options", None) is not None and jit is not None:
            compiled = _compile_variant(plain, jit, text)
            module = parse_module(compiled.asm["ttgir"])
            table = region_table_of_text(compiled.asm["ttgir"])
            kernel, trace = compiled, compiled.trace
        else:
            module = plain.module.clone()
            instrument.run(module, PassContext())
            table = region_table(module)
            for region in table:   # lines of the instrumented ttir, which no trace holds
                region.ttgir_lines, region.enter_line, region.exit_line = [], 0, 0
            kernel, trace = plain.kernel, plain.trace
        super().__init__(plain, kernel, trace, table, instrument.options["slots"])
        self.module = module
        self.name = plain.name

    def launch(self, grid, args, stream=None):
        """Interpret every program, keeping the region records."""
        from compiler.runtime.interpreter import interpret
        records = []
        interpret(self.module, grid, list(args), kernel_name=self.name, region_records=records)
        self.last = decode_interpreter(records)


def _compile_variant(plain, jit, text: str):
    """`plain`'s specialization compiled with its options and `text` appended to the ttgir
    pipeline."""
    from compiler.compiler import compile as compile_source
    from compiler.passes.manager import DEFAULT_PIPELINES
    options = getattr(plain.kernel, "options", None)
    if options is None or jit is None:
        raise ValueError("profiler: instrumentation needs a kernel compiled by @jit "
                         "(its options and source)")
    base = options.pipelines.get("ttgir", DEFAULT_PIPELINES["ttgir"])
    return compile_source(jit.source_for(plain.spec), replace(
        options, pipelines={**options.pipelines, "ttgir": f"{base},{text}"}))


class GpuVariant(_Variant):
    """A GPU entry's specialization compiled with the pass; see the module doc."""

    def __init__(self, plain, jit, text: str):
        compiled = _compile_variant(plain, jit, text)
        super().__init__(plain, compiled, compiled.trace,
                         region_table_of_text(compiled.asm["ttgir"]),
                         _make_pass(text).options["slots"])
        loaded = compiled.launcher()
        self._launch = loaded.launch_addresses if plain.takes_addresses else loaded.launch
        self._global = _module_global(loaded.loaded.module, PROFILE_GLOBAL)
        self._buffer = None

    def arm(self, grid) -> tuple:
        """Get the buffer ready for a launch over `grid`: at least the words it needs,
        zeroed, its address in the kernel's global; (programs, words)."""
        from compiler.runtime import driver
        from compiler.runtime.device_array import DeviceArray
        from compiler.runtime.grid import grid_dims
        programs = math.prod(grid_dims(grid))
        words = programs * self.num_warps * block_words(self.slots)
        if self._buffer is None or self._buffer.shape[0] < words:
            self._buffer = DeviceArray.empty((words,), np.uint64)
            address = np.array([self._buffer.data_ptr()], dtype=np.uint64)
            driver.memcpy_htod(self._global, address.ctypes.data, 8)
        driver.memset_d8(self._buffer.data_ptr(), 0, words * 8)
        return programs, words

    def launch_only(self, grid, args, stream=None) -> None:
        """Launch on the armed buffer, without waiting or reading it (for timing)."""
        self._launch(grid, args, stream)

    def launch(self, grid, args, stream=None):
        """Launch with a fresh buffer, wait for the kernel and decode its records."""
        from compiler.runtime import driver
        programs, words = self.arm(grid)
        self._launch(grid, args, stream)
        driver.synchronize()
        host = np.empty(words, dtype=np.uint64)
        driver.memcpy_dtoh(host.ctypes.data, self._buffer.data_ptr(), words * 8)
        self.last = decode_buffer(host, programs, self.num_warps, self.slots)


def _module_global(module, name: str) -> int:
    """The device address of global `name` of a loaded module (cuModuleGetGlobal)."""
    from compiler.runtime import driver
    address, _size = driver.check(driver.bindings().cuModuleGetGlobal(module.handle,
                                                                      name.encode()),
                                  f"cuModuleGetGlobal('{name}')")
    return int(address)


class Instrumentation:
    """The mode while it is on: the pass text and the variant made for each plain entry."""

    def __init__(self, text: str):
        self.text = text
        self._variants = {}              # id(plain entry) -> (plain entry, variant)

    def variant(self, entry, jit):
        """The instrumented variant of a jit cache entry (made on first use)."""
        if getattr(entry, "instrumented", False):
            return entry
        known = self._variants.get(id(entry))
        if known is None or known[0] is not entry:
            made = (InterpreterVariant(entry, jit, self.text) if hasattr(entry, "module")
                    else GpuVariant(entry, jit, self.text))
            known = self._variants[id(entry)] = (entry, made)
        return known[1]


def measure_overhead(kernel, grid, *args, mode: str = "instrumentation", **kwargs) -> dict:
    """The instrumentation's cost on one GPU kernel: `do_bench` medians of the plain kernel
    and of its instrumented variant (launches only; buffer set-up and read-back excluded),
    in ms, and the ratio. The kernel runs many times, so it must tolerate that."""
    from compiler.testing import do_bench
    jit = kernel.jit_function
    plain_ms = do_bench(lambda: kernel[grid](*args, **kwargs), return_mode="median")
    bound, key, _interpret, _stream, _unknown = jit._binder(*args, **kwargs)
    entry = jit._gpu_cache[key]
    text = pass_text(mode)
    variant = Instrumentation(text).variant(entry, jit)
    launch_args = entry.runtime_args(bound)
    variant.arm(grid)
    instrumented_ms = do_bench(lambda: variant.launch_only(grid, launch_args),
                               return_mode="median")
    return {"plain_ms": plain_ms, "instrumented_ms": instrumented_ms,
            "overhead": instrumented_ms / plain_ms, "pass": text}

