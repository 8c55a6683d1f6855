"""What a launch's arguments say about the kernel to compile, and the ASTSource that holds it.

Each argument is reduced to a short *specialization entry* that goes into the in-memory cache
key, following Triton: an array becomes its pointer type (`"*fp32"`), with `":16"` appended
when its address is a multiple of 16 bytes; a Python int becomes `"i32"`/`"i64"`/`"u64"` by
range, with `":16"` when divisible by 16, or the marker `EQUAL_TO_1` when it is exactly 1 (the
kernel is then compiled with that parameter as the constant 1); floats are `"fp32"`, bools
`"i1"`, `None` is a constant. Signature strings (`"*fp32"`, `"i32"`, `"*fp16:16"`) stand for
themselves, which is how `warmup` compiles without real arguments. Entries are computed by a
per-type handler chosen once per Python type, so the per-launch cost is a dict lookup and a
call. `ASTSource` gathers the function, signature, constants and attributes for the compiler
and hashes everything that can change the generated code.
"""
from __future__ import annotations

import hashlib
import inspect
import re
import types
from dataclasses import dataclass, field

from compiler.tools.tensor_descriptor import TensorDescriptor

# ---------------------------------------------------------------------------------------------
# Type strings

#: dtype name (numpy's, torch's without "torch.", ml_dtypes') -> Triton's short type name.
DTYPE_NAMES = {
    "bool": "i1", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
    "float16": "fp16", "half": "fp16", "bfloat16": "bf16", "float32": "fp32", "float": "fp32",
    "float64": "fp64", "double": "fp64",
    "float8_e4m3fn": "fp8e4nv", "float8_e5m2": "fp8e5",
}

#: Every scalar type a signature string may name.
SCALAR_TYPES = frozenset(DTYPE_NAMES.values())

#: triton.language dtype names (a `reinterpret` wrapper's dtype) -> the short name.
_LANGUAGE_NAMES = {"int1": "i1", **{short: short for short in SCALAR_TYPES
                                    if short.startswith(("fp", "bf"))}}

_SIGNATURE_RE = re.compile(r"^(\*?)(\w+)(?::(16|1))?$")

#: Entry of an int argument equal to 1: compiled as the constant 1 (Triton's equal_to_1).
EQUAL_TO_1 = "constexpr=1"
#: Entry of a `None` argument: compiled as the constant None.
NONE_ENTRY = "constexpr=None"


class UnsupportedArgument:
    """Entry of an argument a kernel cannot take (`what` describes it); the launch reports it
    by parameter name."""

    __slots__ = ("what",)

    def __init__(self, what: str):
        self.what = what


class IntOutOfRange(UnsupportedArgument):
    """Entry of a Python int that fits no kernel integer type (beyond u64 or i64)."""

    __slots__ = ()


class ArgumentOverflow(ValueError, OverflowError):
    """An int argument outside every 64-bit range (Triton raises OverflowError for it)."""

    def __eq__(self, other):
        return isinstance(other, UnsupportedArgument) and other.what == self.what

    def __hash__(self):
        return hash(("unsupported", self.what))


def dtype_type_name(dtype) -> str | None:
    """Triton's short name ("fp32", "i64", "bf16") for a numpy/torch/DeviceArray dtype."""
    name = getattr(dtype, "name", None)
    if not isinstance(name, str):
        name = str(dtype)
    if name.startswith("torch."):
        name = name[len("torch."):]
    return DTYPE_NAMES.get(name) or _LANGUAGE_NAMES.get(name)


def parse_signature_string(text: str) -> tuple[str, bool]:
    """Split `"*fp32:16"` into (`"*fp32"`, divisible_by_16); raise ValueError if malformed."""
    match = _SIGNATURE_RE.match(text.strip())
    if match is None or match.group(2) not in SCALAR_TYPES:
        allowed = ", ".join(sorted(SCALAR_TYPES))
        raise ValueError(f"'{text}' is not a signature string: write a type such as 'i32' or "
                         f"'*fp32' (optionally with ':16' for 16-divisible); types: {allowed}")
    return match.group(1) + match.group(2), match.group(3) == "16"


# ---------------------------------------------------------------------------------------------
# Per-argument entries

def _int_entry(value: int) -> str:
    """Entry of a specialized Python int: type by range, `:16`, or EQUAL_TO_1."""
    if value == 1:
        return EQUAL_TO_1
    if -0x80000000 <= value <= 0x7FFFFFFF:
        return "i32" if value & 15 else "i32:16"
    if -0x8000000000000000 <= value <= 0x7FFFFFFFFFFFFFFF:
        return "i64" if value & 15 else "i64:16"
    if 0 <= value <= 0xFFFFFFFFFFFFFFFF:
        return "u64" if value & 15 else "u64:16"
    return IntOutOfRange("an int outside the 64-bit range")


def _int_entry_unspecialized(value: int) -> str:
    """Entry of a `do_not_specialize` int: its type by range only."""
    if -0x80000000 <= value <= 0x7FFFFFFF:
        return "i32"
    if -0x8000000000000000 <= value <= 0x7FFFFFFFFFFFFFFF:
        return "i64"
    if 0 <= value <= 0xFFFFFFFFFFFFFFFF:
        return "u64"
    return IntOutOfRange("an int outside the 64-bit range")


class _PointerTypes(dict):
    """dtype -> ("*T", "*T:16"), filled on first sight of each dtype."""

    def __missing__(self, dtype):
        name = dtype_type_name(dtype)
        value = (UnsupportedArgument(f"an array of {dtype}"),) * 2 if name is None else \
            ("*" + name, "*" + name + ":16")
        self[dtype] = value
        return value


_POINTER_TYPES = _PointerTypes()


def _data_ptr_entry(arg):
    """torch tensors, DeviceArray: anything with `data_ptr()` and `dtype`."""
    return _POINTER_TYPES[arg.dtype][not arg.data_ptr() & 15]


def _ndarray_entry(arg):
    """numpy arrays: the host address decides divisibility."""
    return _POINTER_TYPES[arg.dtype][not arg.__array_interface__["data"][0] & 15]


def _cuda_interface_entry(arg):
    """Objects exposing `__cuda_array_interface__` (cupy, numba, ...)."""
    import numpy as np

    interface = arg.__cuda_array_interface__
    return _POINTER_TYPES[np.dtype(interface["typestr"])][not interface["data"][0] & 15]


def _numpy_scalar_handler(type_):
    """numpy scalars: their dtype gives the type; integers are specialized like Python ints."""
    import numpy as np

    name = dtype_type_name(np.dtype(type_))
    if name is None:
        return lambda arg: UnsupportedArgument(f"a numpy {type_.__name__}")
    if issubclass(type_, np.integer):
        def entry(arg):
            value = int(arg)
            if value == 1:
                return EQUAL_TO_1
            return name if value & 15 else name + ":16"
        return entry
    return lambda arg: name


def _handler_for(arg):
    """Pick how to turn arguments of `arg`'s type into entries (done once per type)."""
    type_ = type(arg)
    if type_ is float:
        return lambda value: "fp32"
    if type_ is type(None):
        return lambda value: NONE_ENTRY
    if type_ is str:
        return lambda value: value
    if _is_numpy_scalar(type_):
        return _numpy_scalar_handler(type_)
    if issubclass(type_, bool):
        return lambda value: "i1"
    if issubclass(type_, int):
        return _int_entry
    if issubclass(type_, float):
        return lambda value: "fp32"
    if callable(getattr(arg, "data_ptr", None)) and hasattr(arg, "dtype"):
        return _data_ptr_entry
    if hasattr(arg, "__cuda_array_interface__"):
        return _cuda_interface_entry
    if hasattr(arg, "__array_interface__") and hasattr(arg, "dtype"):
        return _ndarray_entry
    if isinstance(arg, TensorDescriptor):
        return _descriptor_entry
    what = getattr(type_, "kernel_argument_note", None) or f"a {type_.__name__}"
    return lambda value: UnsupportedArgument(what)


# ---------------------------------------------------------------------------------------------
# Tensor descriptors: one parameter, several kernel arguments

#: Where a descriptor entry's list of 16-divisible fields starts (`tensordesc<...>:16=0,2`).
DESCRIPTOR_DIVISIBLE = ":16="
_DESCRIPTOR_PREFIX = "tensordesc<"


def is_descriptor_type(type_name) -> bool:
    """Whether a signature type (`tensordesc<fp16[64, 64]>`) stands for a tensor descriptor."""
    return isinstance(type_name, str) and type_name.startswith(_DESCRIPTOR_PREFIX)


def _address(array) -> int:
    """The address of a descriptor's base (device or host array)."""
    if callable(getattr(array, "data_ptr", None)):
        return array.data_ptr()
    interface = getattr(array, "__cuda_array_interface__", None) or \
        getattr(array, "__array_interface__", None)
    return interface["data"][0] if interface else 1


def _descriptor_entry(desc):
    """A host `TensorDescriptor`: its signature type (element type, block shape, padding:
    what the kernel is compiled for) and which of its kernel fields (`kernel_fields`: base
    address, shape, strides but the last) are multiples of 16, as `tensordesc<fp16[8, 32]>:16=0,2`."""
    element = dtype_type_name(getattr(desc.base, "dtype", None))
    if element is None:
        return UnsupportedArgument(f"a TensorDescriptor over {type(desc.base).__name__} "
                                   f"(no known dtype)")
    if any(not -0x80000000 <= int(d) <= 0x7FFFFFFF for d in desc.shape):
        return UnsupportedArgument(f"a TensorDescriptor of shape {list(desc.shape)} (the shape "
                                   f"is passed as int32)")
    fields = desc.kernel_fields()
    divisible = [i for i, value in enumerate([_address(fields[0])] + list(fields[1:]))
                 if value % 16 == 0]
    entry = desc.signature_type(element)
    return entry + DESCRIPTOR_DIVISIBLE + ",".join(map(str, divisible)) if divisible else entry


class DescriptorFields(tuple):
    """A host descriptor's kernel fields as the launcher packs them (the base an address), with
    what a kernel compiled with TMA also takes: its tensor map (`tensor_map`)."""

    #: (element, address, shape, strides, block shape, padding) for `tensor_map`, or None
    #: when the base has no known element type (such a launch is refused before the map)
    map_args = None
    _map = None
    _map_made = False

    def tensor_map(self) -> bytes | None:
        """The descriptor's CUtensorMap (`tensor_map.of_descriptor`), made once per object:
        a launch cache hit (`_descriptor_launch`) hands back the same object."""
        if not self._map_made:
            from compiler.runtime import tensor_map
            self._map = (tensor_map.descriptor_map(*self.map_args)
                         if self.map_args is not None else None)
            self._map_made = True
        return self._map


#: A host descriptor over a CUDA tensor, by (dtype, address, shape, strides, block shape,
#: padding) -> its launch (`_descriptor_launch`). Tutorial 06's forward builds four
#: descriptors per call; deriving each one's entry and fields again was the largest part of
#: the launch's host time after the tensor maps were cached (H200, cProfile). Only plain
#: values are kept (no tensor), so the cache holds no memory alive.
_LAUNCH_CACHE: dict = {}
_LAUNCH_CACHE_LIMIT = 4096


def _descriptor_launch(desc):
    """A host `TensorDescriptor` at launch: its entry and its kernel fields, the base as the
    launcher packs it; cached for descriptors over CUDA tensors (`_LAUNCH_CACHE`)."""
    base = desc.base
    key = None
    if getattr(base, "is_cuda", False) is True:
        try:
            key = (base.dtype, base.data_ptr(), tuple(desc.shape), tuple(desc.strides),
                   tuple(desc.block_shape), desc.padding)
            hit = _LAUNCH_CACHE.get(key)
        except TypeError:                   # an unhashable field: not cached
            key = hit = None
        if hit is not None:
            return hit
    from compiler.runtime.tensor_map import descriptor_map_args
    fields = desc.kernel_fields()
    converted = DescriptorFields((launch_value(fields[0]),) + fields[1:])
    converted.map_args = descriptor_map_args(desc)
    launch = (_descriptor_entry(desc), converted)
    if key is not None and isinstance(converted[0], int):
        if len(_LAUNCH_CACHE) >= _LAUNCH_CACHE_LIMIT:
            _LAUNCH_CACHE.clear()
        _LAUNCH_CACHE[key] = launch
    return launch


def split_descriptor_entry(entry: str) -> tuple[str, list]:
    """(signature type, indices of the 16-divisible fields) of a descriptor entry."""
    type_name, _, divisible = entry.partition(DESCRIPTOR_DIVISIBLE)
    return type_name, [int(i) for i in divisible.split(",") if i]


def _is_numpy_scalar(type_) -> bool:
    module = getattr(type_, "__module__", "")
    if module != "numpy":
        return False
    import numpy as np
    return issubclass(type_, np.generic)


#: Python type -> function computing the entry of an argument of that type.
HANDLERS: dict = {int: _int_entry, bool: lambda value: "i1", float: lambda value: "fp32"}


def handler_for(arg):
    """The entry function for `arg`'s type, chosen and remembered on first sight."""
    handler = HANDLERS.get(type(arg))
    if handler is None:
        handler = HANDLERS[type(arg)] = _handler_for(arg)
    return handler


# ---------------------------------------------------------------------------------------------
# Launch handlers: an argument's key entry and the value the GPU launcher packs, in one call

def _torch_launch(arg):
    """torch tensors: the address read once serves the key and the launch; a CPU tensor
    (not pinned) is passed on as itself, for the launcher to reject with a clear message."""
    from compiler.runtime.launcher import torch_device_reachable

    address = arg.data_ptr()
    return _POINTER_TYPES[arg.dtype][not address & 15], \
        address if torch_device_reachable(arg) else arg


def _device_data_ptr_launch(arg):
    """DeviceArray and other device arrays with `data_ptr()`: the address, read once."""
    address = arg.data_ptr()
    return _POINTER_TYPES[arg.dtype][not address & 15], address


def _cuda_interface_launch(arg):
    """`__cuda_array_interface__` objects: the interface read once."""
    import numpy as np

    interface = arg.__cuda_array_interface__
    address = interface["data"][0]
    return _POINTER_TYPES[np.dtype(interface["typestr"])][not address & 15], address


def _int_launch(value):
    """Python ints: their entry, and themselves."""
    return _int_entry(value), value


def _launch_handler_for(arg):
    """Pick the launch handler for `arg`'s type (done once per type). Arrays the launcher
    reads an address from get a fused handler; anything else is passed on as itself."""
    from compiler.runtime.launcher import pointer_source

    entry_of = handler_for(arg)
    if entry_of is _descriptor_entry:
        return _descriptor_launch
    if entry_of is _data_ptr_entry or entry_of is _cuda_interface_entry:
        source = pointer_source(arg)
        if entry_of is _data_ptr_entry and source == "torch":
            return _torch_launch
        if entry_of is _data_ptr_entry and source == "data_ptr":
            return _device_data_ptr_launch
        if entry_of is _cuda_interface_entry and source == "interface":
            return _cuda_interface_launch
    return lambda value: (entry_of(value), value)


#: Python type -> function computing `(entry, launch value)` of an argument of that type.
LAUNCH_HANDLERS: dict = {int: _int_launch}


def launch_handler_for(arg):
    """The `(entry, launch value)` function for `arg`'s type, chosen on first sight. The
    launch value is what the GPU launcher packs: a device array's address (so a launch reads
    it once, for the key and for the launch), else the argument itself."""
    handler = LAUNCH_HANDLERS.get(type(arg))
    if handler is None:
        handler = LAUNCH_HANDLERS[type(arg)] = _launch_handler_for(arg)
    return handler


def launch_value(arg):
    """The value the GPU launcher packs for `arg` (see `launch_handler_for`)."""
    return launch_handler_for(arg)(arg)[1]


def specialize(arg):
    """The cache-key entry of one (specializable) kernel argument; see the module docstring."""
    return handler_for(arg)(arg)


def specialize_unspecialized(arg):
    """The entry of a `do_not_specialize` argument: its type, no `:16` and no equal-to-1."""
    if type(arg) is int:
        return _int_entry_unspecialized(arg)
    entry = specialize(arg)
    if entry == EQUAL_TO_1:
        return dtype_type_name(getattr(arg, "dtype", None)) or "i32"
    return specialize_without_alignment(arg)


def specialize_without_alignment(arg):
    """The entry of a `do_not_specialize_on_alignment` argument: no `:16`, but an int equal
    to 1 is still a constant."""
    entry = specialize(arg)
    if isinstance(entry, str) and entry.endswith(":16"):
        return entry[:-3]
    return entry


def constexpr_entry(value):
    """The key entry of a constexpr argument: its type and value (repr when unhashable)."""
    try:
        hash(value)
    except TypeError:
        return (type(value), repr(value))
    return (type(value), value)


def constexpr_value(value):
    """Unwrap a `tl.constexpr(...)` instance passed as a value to the plain value it holds."""
    if type(value).__name__ == "constexpr" and hasattr(value, "value"):
        return value.value
    return value


# ---------------------------------------------------------------------------------------------
# From entries to what the compiler takes

@dataclass
class Specialization:
    """A launch's specialization split into the compiler's inputs.

    `signature` maps each runtime parameter (in order) to its type string; `constexprs` maps
    constexpr parameters, and ints specialized to 1 / `None` arguments, to values;
    `divisibility_16` lists parameters known to be multiples of 16 (a tensor descriptor's
    fields as `name.i`); `runtime_params` are the indices (into the full parameter list) of
    the arguments the compiled kernel takes, `descriptor_params` those among them that are
    tensor descriptors (each passed as its `kernel_fields`).
    """

    signature: dict = field(default_factory=dict)
    constexprs: dict = field(default_factory=dict)
    divisibility_16: list = field(default_factory=list)
    runtime_params: tuple = ()
    descriptor_params: tuple = ()

    @property
    def attrs(self) -> dict:
        """The `attrs` argument of `generate_ttir` (`{"divisibility_16": [names]}`)."""
        return {"divisibility_16": list(self.divisibility_16)}

    def describe(self) -> dict:
        """A JSON-friendly summary for traces and recordings (the same keys as the compile
        driver's `CompileTrace.specialization`; constants as their repr)."""
        return {"signature": dict(self.signature),
                "constexprs": {k: repr(v) for k, v in self.constexprs.items()},
                "attrs": self.attrs}


def split_entries(names, constexpr_names, entries, values) -> Specialization:
    """Build the `Specialization` of a launch from its key entries and argument values.

    `names` are all parameter names in order, `entries` their key entries (`constexpr_entry`
    for constexpr parameters), `values` the bound argument values. Raises ValueError naming the
    parameter when an argument cannot be passed to a kernel.
    """
    spec = Specialization()
    runtime, descriptors = [], []
    for index, (name, entry, value) in enumerate(zip(names, entries, values)):
        if name in constexpr_names:
            spec.constexprs[name] = constexpr_value(value)
            continue
        if isinstance(entry, UnsupportedArgument):
            error = ArgumentOverflow if isinstance(entry, IntOutOfRange) else ValueError
            raise error(f"argument '{name}' is {entry.what}, which a kernel cannot take: "
                             f"pass an array (numpy, torch, DeviceArray), an int, a float, a "
                             f"bool, a TensorDescriptor, or mark the parameter tl.constexpr")
        if entry == EQUAL_TO_1:
            spec.constexprs[name] = 1
            continue
        if entry == NONE_ENTRY:
            spec.constexprs[name] = None
            continue
        if is_descriptor_type(entry):
            spec.signature[name], fields = split_descriptor_entry(entry)
            spec.divisibility_16 += [f"{name}.{i}" for i in fields]
            runtime.append(index)
            descriptors.append(index)
            continue
        type_name, divisible = parse_signature_string(entry)
        spec.signature[name] = type_name
        if divisible:
            spec.divisibility_16.append(name)
        runtime.append(index)
    spec.runtime_params = tuple(runtime)
    spec.descriptor_params = tuple(descriptors)
    return spec


# ---------------------------------------------------------------------------------------------
# ASTSource

@dataclass
class ASTSource:
    """One specialization of a `@jit` function, as the compiler takes it (Triton's ASTSource).

    `fn` is the JITFunction (or plain function), `signature` maps runtime parameters to type
    strings, `constexprs` maps constant parameters to values, `attrs` is
    `{"divisibility_16": [names]}`. `hash()` covers everything that changes the generated code.
    """

    fn: object
    signature: dict
    constexprs: dict = field(default_factory=dict)
    attrs: dict = field(default_factory=dict)

    def __post_init__(self):
        """Accept Triton's spellings too: `constexprs=None`, constexprs keyed by parameter
        position (`{(2,): 64}` or `{2: 64}`), attrs keyed by position with
        `[["tt.divisibility", 16]]` lists."""
        names = list(inspect.signature(self.python_fn).parameters)
        self.constexprs = {_param_name(k, names): v for k, v in (self.constexprs or {}).items()}
        attrs = dict(self.attrs or {})
        positional = {k: v for k, v in attrs.items() if not isinstance(k, str)}
        if positional:
            attrs = {k: v for k, v in attrs.items() if isinstance(k, str)}
            divisible = [_param_name(k, names) for k, specs in positional.items()
                         if ["tt.divisibility", 16] in [list(s) for s in specs]]
            attrs["divisibility_16"] = sorted(set(attrs.get("divisibility_16", [])) | set(divisible))
        self.attrs = attrs

    @property
    def python_fn(self):
        """The undecorated Python function."""
        return getattr(self.fn, "fn", self.fn)

    @property
    def name(self) -> str:
        """The kernel's name: the function's, or what the `@jit(repr=...)` hook makes of this
        specialization (Triton names the kernel that way), with characters a PTX identifier
        cannot hold made `_`."""
        hook = getattr(self.fn, "repr", None)
        if not callable(hook):
            return self.python_fn.__name__
        return re.sub(r"\W", "_", str(hook(self))) or self.python_fn.__name__

    @property
    def constants(self) -> dict:
        """Triton's name for the constant parameters: name -> value (constexprs and ints
        specialized as 1)."""
        return dict(self.constexprs)

    @property
    def source(self) -> str:
        """The function's source text."""
        return function_source(self.fn)

    @property
    def file(self) -> str:
        """The file the function was defined in."""
        return self.python_fn.__code__.co_filename

    @property
    def line(self) -> int:
        """The line of the function's `def` (after decorators)."""
        return def_line(self.python_fn)

    def hash(self, options: dict | None = None) -> str:
        """sha256 over source, referenced globals (callees by their own source), signature,
        constants, attributes and `options`: equal hashes mean equal generated code."""
        parts = [
            "src", function_key(self.fn),
            "sig", repr(sorted(self.signature.items())),
            "const", repr(sorted((k, stable_repr(v)) for k, v in self.constexprs.items())),
            "attrs", repr(sorted((k, sorted(v) if isinstance(v, (list, tuple, set)) else v)
                                 for k, v in (self.attrs or {}).items())),
            "opts", repr(sorted((k, stable_repr(v)) for k, v in (options or {}).items())),
        ]
        if self.name != self.python_fn.__name__:       # a repr hook renamed the kernel
            parts += ["name", self.name]
        return hashlib.sha256("\0".join(parts).encode()).hexdigest()

    def make_ttir(self, options: dict | None = None):
        """Run the front end: the kernel's ttir module for this specialization."""
        from compiler.frontend import generate_ttir

        return generate_ttir(self.fn, dict(self.signature), dict(self.constexprs),
                             dict(self.attrs), dict(options or {}), name=self.name)


def _param_name(key, names: list) -> str:
    """A parameter's name from a name, a position, or Triton's one-element position tuple."""
    if isinstance(key, tuple) and len(key) == 1:
        key = key[0]
    if isinstance(key, int):
        if not 0 <= key < len(names):
            raise ValueError(f"parameter position {key} is out of range; the function takes "
                             f"({', '.join(names)})")
        return names[key]
    return key


def function_source(fn) -> str:
    """The source text of a JITFunction or plain function."""
    src = getattr(fn, "src", None)
    if isinstance(src, str):
        return src
    return inspect.getsource(getattr(fn, "fn", fn))


def def_line(fn) -> int:
    """The line number of `fn`'s `def` keyword (decorators skipped)."""
    try:
        lines, first = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        return fn.__code__.co_firstlineno
    for offset, text in enumerate(lines):
        stripped = text.lstrip()
        if stripped.startswith("def ") or stripped.startswith("async def "):
            return first + offset
    return first


def function_key(fn) -> str:
    """sha256 of a function's source and of the globals it reads, as the front end's
    `referenced_globals` summarizes them (called jit functions by their own source and
    globals, recursively)."""
    from compiler.frontend import referenced_globals

    python_fn = getattr(fn, "fn", fn)
    parts = [function_source(fn)]
    parts += [f"{name}={stable_repr(value)}"
              for name, value in sorted(referenced_globals(python_fn).items())]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def stable_repr(value) -> str:
    """A representation that is the same in every process (no memory addresses)."""
    if isinstance(value, types.ModuleType):
        return f"module:{value.__name__}"
    if isinstance(value, (types.FunctionType, types.BuiltinFunctionType, type)):
        return f"{getattr(value, '__module__', '?')}.{getattr(value, '__qualname__', '?')}"
    if isinstance(value, (list, tuple)):
        inner = ", ".join(stable_repr(v) for v in value)
        return f"[{inner}]" if isinstance(value, list) else f"({inner})"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{stable_repr(k)}: {stable_repr(v)}"
                               for k, v in sorted(value.items(), key=repr)) + "}"
    text = repr(value)
    return re.sub(r" at 0x[0-9a-fA-F]+", "", text)
