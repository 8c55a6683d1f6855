"""The backend interface and the NVIDIA backend: options, target, stages, and that a second
target needs nothing but one new backend class."""
from __future__ import annotations

import inspect
import re
from dataclasses import dataclass

import pytest

from compiler.codegen import backend as backend_module
from compiler.codegen.backend import (BACKENDS, BackendOptions, BaseBackend, GPUTarget,
                                      OptionError, get_backend, register_backend)
from compiler.codegen.nvidia_backend import NvidiaBackend, NvidiaOptions, parse_arch
from compiler.runtime import driver

no_gpu_only = pytest.mark.skipif(driver.gpu_available(), reason="this machine has a GPU")


@pytest.fixture
def nvidia():
    return NvidiaBackend(GPUTarget("nvidia", 90, 32))


def test_defaults(nvidia):
    opts = nvidia.parse_options({})
    assert isinstance(opts, NvidiaOptions)
    assert (opts.num_warps, opts.num_stages, opts.num_ctas, opts.arch) == (4, 3, 1, 90)
    assert opts.ptx_arch == "sm_90" and opts.enable_fp_fusion and not opts.debug


def test_explicit_options(nvidia):
    opts = nvidia.parse_options({"num_warps": 8, "num_stages": 4, "arch": "sm_80",
                                 "debug": True, "maxnreg": 128,
                                 "default_dot_input_precision": "ieee"})
    assert (opts.num_warps, opts.num_stages, opts.arch, opts.maxnreg) == (8, 4, 80, 128)
    assert opts.debug and opts.default_dot_input_precision == "ieee"
    assert nvidia.parse_options({"capability": (8, 6)}).arch == 86


@pytest.mark.parametrize("options,pattern", [
    ({"num_warp": 4}, "unknown option 'num_warp'.*did you mean 'num_warps'"),
    ({"num_warps": 3}, "num_warps' = 3 is not allowed.*power of 2"),
    ({"num_warps": "4"}, "num_warps' takes an integer"),
    ({"num_warps": True}, "num_warps' takes an integer"),
    ({"num_stages": 0}, "num_stages' = 0 is not allowed"),
    ({"num_ctas": 2}, "num_ctas' = 2 is not allowed"),
    ({"debug": 1}, "debug' takes True or False"),
    ({"arch": 91}, "arch' = 91 is not allowed.*compute capability"),
    ({"arch": "volta"}, "arch' takes a compute capability"),
    ({"arch": 90, "capability": 90}, "not both"),
    ({"maxnreg": 8}, "maxnreg' = 8 is not allowed"),
    ({"default_dot_input_precision": "fp8"}, "tf32 or tf32x3 or ieee"),
    ({"warp_size": 64}, "warp_size' = 64"),
])
def test_bad_options_are_explained(nvidia, options, pattern):
    with pytest.raises(OptionError, match=pattern):
        nvidia.parse_options(options)


@pytest.mark.parametrize("text,arch", [(90, 90), ("90", 90), ("sm_90", 90), ("sm_90a", 90),
                                       ((8, 0), 80), ("compute_86", 86)])
def test_arch_spellings(text, arch):
    assert parse_arch(text) == arch


def test_target_is_sm90_unless_requested():
    """The backend never asks the device (the runtime's driver does: `device_arch`)."""
    assert NvidiaBackend.default_target() == GPUTarget("nvidia", 90, 32)
    assert NvidiaBackend.default_target("sm_80").arch == 80
    assert NvidiaBackend().get_target().arch == 90
    assert get_backend().name == "nvidia"


def test_options_take_the_target_arch_by_default():
    backend = NvidiaBackend(NvidiaBackend.default_target(80))
    assert backend.parse_options({}).arch == 80
    assert backend.parse_options({"arch": 90}).arch == 90
    assert backend.hash() != NvidiaBackend(GPUTarget("nvidia", 90, 32)).hash()


def test_stages_in_order(nvidia):
    stages = {}
    nvidia.add_stages(stages, nvidia.parse_options())
    assert list(stages) == ["ttir", "ttgir", "llir", "ptx", "cubin", "sass"]
    assert all(callable(fn) for fn in stages.values())


def test_backend_refuses_a_foreign_target():
    with pytest.raises(ValueError, match="cannot compile for a 'amd' target"):
        NvidiaBackend(GPUTarget("amd", "gfx942", 64))


def test_unknown_backend():
    with pytest.raises(LookupError, match="unknown backend 'tpu'.*nvidia"):
        get_backend("tpu")


def test_base_backend_names_no_vendor():
    """The interface is target-agnostic: no vendor, ISA or driver names in its module."""
    source = inspect.getsource(backend_module).lower()
    for word in ("nvidia", "cuda", "ptx", "cubin", "sm_", "amd", "hip", "nvptx", "amdgcn"):
        assert not re.search(rf"\b{re.escape(word)}", source), word


def test_a_second_backend_is_one_new_class():
    """What an AMD backend module would contain, in miniature: its options, its target, its
    stages and its loader; the registry finds it by name and nothing else changes."""

    @dataclass(frozen=True)
    class ToyOptions(BackendOptions):
        arch: str = "gfx942"
        wave_size: int = 64

    class ToyBackend(BaseBackend):
        name = "toy-gpu"
        options_class = ToyOptions
        binary_ext = "hsaco"

        @classmethod
        def default_target(cls, requested=None):
            return GPUTarget(cls.name, requested or "gfx942", 64)

        def target_options(self, options):
            return {} if "arch" in options else {"arch": self.target.arch}

        def add_stages(self, stages, options):
            stages["ttir"] = lambda state: state.append("ttir")
            stages["ttgir"] = lambda state: state.append(f"ttgir/{options.num_warps}")
            stages["amdgcn"] = lambda state: state.append(f"amdgcn/{options.arch}")

    register_backend(ToyBackend)
    try:
        toy = get_backend("toy-gpu", None)
        opts = toy.parse_options({"num_warps": 8})
        assert opts.arch == "gfx942" and opts.wave_size == 64
        stages, state = {}, []
        toy.add_stages(stages, opts)
        for stage in stages.values():
            stage(state)
        assert state == ["ttir", "ttgir/8", "amdgcn/gfx942"]
        with pytest.raises(OptionError, match="unknown option 'maxnreg' for the toy-gpu"):
            toy.parse_options({"maxnreg": 64})
        assert get_backend().name == "nvidia"         # priority keeps the default unchanged
    finally:
        BACKENDS.pop("toy-gpu", None)


@no_gpu_only
def test_load_kernel_without_a_gpu_says_so():
    """Loading is the runtime driver's (the backend compiles only)."""
    with pytest.raises(driver.CudaUnavailable):
        driver.load_kernel("add_kernel", b"\x7fELF", 0)
