"""`triton.knobs`: the settings Triton code reads or sets, each backed by the environment
variable our compiler reads at its edge (so setting a knob has the effect of setting that
variable; with `propagate_env` true, the default, the variable is written too).

Groups and knobs (Triton's name -> our variable):
  cache.dir                      -> TILE_CACHE_DIR       (disk cache folder)
  compilation.always_compile     -> TILE_ALWAYS_COMPILE  (skip the disk cache)
  compilation.dump_ir            -> TILE_KERNEL_DUMP     (dump every stage)
  compilation.override           -> TILE_OVERRIDE_DIR    (stage override folder)
  compilation.front_end_debugging-> TILE_DEBUG           (keep the compiler's tracebacks)
  compilation.allow_non_constexpr_globals -> TILE_ALLOW_NON_CONSTEXPR_GLOBALS (kernels read
                                    any global; read when a kernel is defined or compiled)
  runtime.interpret              -> TILE_INTERPRET       (run kernels in the interpreter)
  runtime.debug                  -> TILE_DEBUG
  runtime.override_arch          -> TILE_OVERRIDE_ARCH   (compile for this arch, e.g. "sm80";
                                                          TRITON_OVERRIDE_ARCH is read too)
  nvidia.ptxas.path              -> TILE_PTXAS_PATH      (`nvidia.ptxas.version` asks that ptxas)
  nvidia.mma_v2_tf32_int8        -> TILE_MMA_V2_TF32_INT8 (ours, not Triton's: tf32 and int8 dots
                                                          that wgmma cannot take on mma.sync)
  nvidia.tf32_ldmatrix           -> TILE_TF32_LDMATRIX   (ours: tf32 mma.sync operands read by
                                                          ldmatrix; on, =0 keeps scalar loads)
A knob Triton has and we do not is refused with an AttributeError naming the ones we have.
"""
from __future__ import annotations

import os
import re
import subprocess

#: Whether setting a knob writes its environment variable (Triton's `knobs.propagate_env`).
propagate_env = True

_TRUE = ("1", "true", "yes", "on")


class env_knob:
    """One knob: a descriptor reading its environment variable `key` (a value set on the
    group wins), converted by `kind` (bool, str or int)."""

    def __init__(self, key: str, kind: type = str, default=None):
        self.key, self.kind, self.default = key, kind, default

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, group, owner=None):
        if group is None:
            return self
        if self.name in group._set:
            return group._set[self.name]
        raw = os.environ.get(self.key)
        if raw is None:
            return self.default
        if self.kind is bool:
            return raw.strip().lower() in _TRUE
        return self.kind(raw)

    def __set__(self, group, value):
        group._set[self.name] = value
        if propagate_env:
            if value is None:
                os.environ.pop(self.key, None)
            else:
                os.environ[self.key] = ("1" if value else "0") if self.kind is bool else str(value)


class base_knobs:
    """A group of knobs; `copy()` and `reset()` as Triton's test helpers use them."""

    def __init__(self):
        object.__setattr__(self, "_set", {})

    @property
    def knob_descriptors(self) -> dict:
        """Knob name -> its `env_knob`."""
        return {name: value for klass in type(self).__mro__
                for name, value in vars(klass).items() if isinstance(value, env_knob)}

    def copy(self):
        """A group with the same set values."""
        other = type(self)()
        other._set.update(self._set)
        return other

    def reset(self):
        """Forget the values set on the group (the environment decides again)."""
        self._set.clear()
        return self

    def __setattr__(self, name, value):
        if name not in self.knob_descriptors and not isinstance(
                getattr(type(self), name, None), property):
            raise AttributeError(f"knob '{type(self).__name__[:-6]}.{name}' is not supported by "
                                 f"this compiler; supported: {', '.join(self.knob_descriptors)}")
        object.__setattr__(self, name, value)

    def __getattr__(self, name):
        raise AttributeError(f"knob '{type(self).__name__[:-6]}.{name}' is not supported by this "
                             f"compiler; supported: {', '.join(self.knob_descriptors)}")


class cache_knobs(base_knobs):
    dir = env_knob("TILE_CACHE_DIR", str, os.path.expanduser("~/.cache/tile-explore"))


class compilation_knobs(base_knobs):
    always_compile = env_knob("TILE_ALWAYS_COMPILE", bool, False)
    dump_ir = env_knob("TILE_KERNEL_DUMP", bool, False)
    override = env_knob("TILE_OVERRIDE_DIR", str, None)
    front_end_debugging = env_knob("TILE_DEBUG", bool, False)
    allow_non_constexpr_globals = env_knob("TILE_ALLOW_NON_CONSTEXPR_GLOBALS", bool, False)


class runtime_knobs(base_knobs):
    interpret = env_knob("TILE_INTERPRET", bool, False)
    debug = env_knob("TILE_DEBUG", bool, False)
    override_arch = env_knob("TILE_OVERRIDE_ARCH", str, None)


class ptxas_knobs(base_knobs):
    path = env_knob("TILE_PTXAS_PATH", str, None)

    @property
    def version(self) -> str:
        """The "major.minor" release of the ptxas the compiler uses (`ptxas --version`)."""
        from compiler.codegen.toolchain import find_tool
        tool = find_tool("ptxas")
        if tool is None:
            raise FileNotFoundError("ptxas not found (set knobs.nvidia.ptxas.path or "
                                    "TILE_PTXAS_PATH)")
        text = subprocess.run([tool, "--version"], capture_output=True, text=True).stdout
        match = re.search(r"release (\d+\.\d+)", text)
        if match is None:
            raise RuntimeError(f"cannot read the version from `{tool} --version`: {text!r}")
        return match.group(1)


class nvidia_knobs(base_knobs):
    #: tf32 (m16n8k8) and int8 (m16n8k32) dots on mma.sync (MMA v2) where wgmma cannot take
    #: them (sm_80+; on sm_90 dots of 2 warps or below 64 rows per warp group), as Triton
    #: does; off (TILE_MMA_V2_TF32_INT8=0), they stay on FMA (the values are right either way).
    #: On by default since the H200 verified it (tests/gpu/test_mma_v2_narrow_gpu.py and
    #: Triton's 402 tf32/int8 test_dot cases). The compile option `mma_v2_tf32_int8` reads it.
    mma_v2_tf32_int8 = env_knob("TILE_MMA_V2_TF32_INT8", bool, True)
    #: tf32 mma.sync operands whose K is contiguous in their shared buffer read by ldmatrix
    #: (b16 form, four tf32 words a row) instead of scalar loads, as Triton does. On by default
    #: since the H200 verified it (tests/gpu/test_tf32_ldmatrix_gpu.py; TILE_TF32_LDMATRIX=0
    #: keeps the scalar loads). The compile option `tf32_ldmatrix` reads it.
    tf32_ldmatrix = env_knob("TILE_TF32_LDMATRIX", bool, True)

    @property
    def ptxas(self) -> ptxas_knobs:
        """The ptxas knobs (`path`, `version`)."""
        return _PTXAS


_PTXAS = ptxas_knobs()
cache = cache_knobs()
compilation = compilation_knobs()
runtime = runtime_knobs()
nvidia = nvidia_knobs()
