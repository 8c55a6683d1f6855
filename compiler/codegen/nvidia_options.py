"""The NVIDIA backend's compile options: the target (compute capability), PTX version, register
cap, dot precision, warp size. A leaf module (no stage, no driver), so that the stage state, the
stages and the backend object can all name the one options class without an import cycle.
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any

from .backend import BackendOptions, OptionError

DEFAULT_ARCH = 90
#: Compute capabilities this backend accepts (the NVPTX targets of LLVM 20+, Volta onwards).
KNOWN_ARCHS = (70, 72, 75, 80, 86, 87, 89, 90, 100, 101, 103, 120, 121)
DOT_PRECISIONS = ("tf32", "tf32x3", "ieee")
#: PTX ISA versions (times ten) the NVPTX target of llvmlite's LLVM emits (`+ptxNN`).
PTX_VERSIONS = (60, 61, 62, 63, 64, 65, 70, 71, 72, 73, 74, 75, 76, 77, 78, 80, 81, 82, 83, 84,
                85, 86, 87, 88)
#: The PTX `.version` used when `ptx_version` is None (what the golden PTX files carry).
DEFAULT_PTX_VERSION = 80


@dataclass(frozen=True)
class NvidiaOptions(BackendOptions):
    """Compile options of the NVIDIA backend (the common ones plus NVIDIA's). They are the one
    definition of the target options: the compile driver's `CompileOptions` derives from this
    class and adds only its own fields."""

    arch: int = dataclasses.field(default=DEFAULT_ARCH, metadata={
        "check": lambda v: v in KNOWN_ARCHS,
        "allowed": "a compute capability such as 80 or 90 (or 'sm_90'); known: "
                   + ", ".join(map(str, KNOWN_ARCHS))})
    ptx_version: int | None = dataclasses.field(default=None, metadata={
        "check": lambda v: v in PTX_VERSIONS,
        "allowed": "a PTX ISA version times ten that LLVM's NVPTX emits, e.g. 80 for PTX 8.0 "
                   "(known: " + ", ".join(map(str, PTX_VERSIONS)) + "), or None for 8.0"})
    maxnreg: int | None = dataclasses.field(default=None, metadata={
        "check": lambda v: isinstance(v, int) and 16 <= v <= 255,
        "allowed": "an integer from 16 to 255, or None"})
    default_dot_input_precision: str = dataclasses.field(default="tf32", metadata={
        "check": lambda v: v in DOT_PRECISIONS, "allowed": " or ".join(DOT_PRECISIONS)})
    warp_size: int = dataclasses.field(default=32, metadata={
        "check": lambda v: v == 32, "allowed": "32 (NVIDIA warps have 32 threads)"})
    line_info: bool = True
    #: host tensor descriptors copied by TMA (cp.async.bulk.tensor with mbarriers) on sm_90+,
    #: as Triton does (the H200 tier checks both paths); `tma=False` keeps them on pointer loads
    tma: bool = True
    #: tf32 (m16n8k8) and int8 (m16n8k32) dots on mma.sync where wgmma cannot take them
    #: (sm_80+; on sm_90 below 64 rows per warp group or 2 warps); off, they stay on FMA.
    #: On by default since the H200 verified it (TILE_MMA_V2_TF32_INT8=0 turns it off).
    mma_v2_tf32_int8: bool = True
    #: tf32 mma.sync operands whose K is their shared buffer's contiguous dim (A row-major, B
    #: "col") read by `ldmatrix` (b16 form: an 8x8 b16 matrix is 8 rows of 4 tf32 words, lane l
    #: receiving word (l / 4, l % 4), the fragment's layout) instead of scalar loads, as
    #: Triton does. On by default since the H200 verified it (tests/gpu/test_tf32_ldmatrix_gpu.py;
    #: TILE_TF32_LDMATRIX=0 turns it off).
    tf32_ldmatrix: bool = True

    @property
    def ptx_arch(self) -> str:
        """The `.target` / ptxas -arch name, e.g. "sm_90"."""
        return f"sm_{self.arch}"

    @property
    def ptx_features(self) -> str:
        """The NVPTX target features selecting the PTX `.version` (e.g. "+ptx80")."""
        version = DEFAULT_PTX_VERSION if self.ptx_version is None else self.ptx_version
        return f"+ptx{version}"


#: the PTX `.version` that `tensormap.replace` needs (device-side tensor maps)...
TENSORMAP_MIN_PTX_VERSION = 83
#: ...and the one used for kernels that build tensor maps when no `ptx_version` is given
#: (what Triton 3.6 emits with the CUDA 12.6+ ptxas it is tested with, or newer)
TENSORMAP_PTX_VERSION = 86


def tensormap_ptx_version(ptx_version: int | None) -> int:
    """The PTX version of a kernel that builds tensor maps on the device: the options' own
    (`ptx_version`; an OptionError when it predates `tensormap.replace`), else 8.6."""
    if ptx_version is None:
        return TENSORMAP_PTX_VERSION
    if ptx_version < TENSORMAP_MIN_PTX_VERSION:
        raise OptionError(f"tl.make_tensor_descriptor is copied by TMA here, which needs PTX "
                          f"{TENSORMAP_MIN_PTX_VERSION / 10:.1f} or later (tensormap.replace), "
                          f"but ptx_version={ptx_version} was given; use ptx_version >= "
                          f"{TENSORMAP_MIN_PTX_VERSION} or tma=False")
    return ptx_version


def uses_tma(options) -> bool:
    """Whether a compile with `options` (None: a stand-in kernel without options) copies host
    tensor descriptors by TMA: the `tma` option on a target with TMA (sm_90 and later)."""
    return bool(getattr(options, "tma", False)) and getattr(options, "arch", 0) >= 90


def parse_arch(value: Any) -> int:
    """A compute capability from 90, "90", "sm_90", "sm90" (Triton's spelling), "sm_90a" or
    (9, 0)."""
    if isinstance(value, bool):
        raise OptionError(f"option 'arch' takes a compute capability, not {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, tuple) and len(value) == 2 and all(isinstance(v, int) for v in value):
        return value[0] * 10 + value[1]
    if isinstance(value, str):
        match = re.fullmatch(r"(?:sm_?|compute_)?(\d+)a?", value.strip())
        if match:
            return int(match.group(1))
    raise OptionError(f"option 'arch' takes a compute capability such as 90, 'sm_90' or (9, 0), "
                      f"not {value!r}")
