"""The generated fast path of `kernel[grid](...)`: one Python function per kernel and kind of call.

`JITFunction.__getitem__` returns `functools.partial(fast_launch, grid)`. A fast launch is made
for the shape of an earlier GPU launch (which parameters came by position, which by keyword)
and for its argument types. It binds its arguments itself: the parameters given by position
are positional-only, the others keyword-only, all defaulting to a sentinel, so that Python's
own binding cannot fail and needs no dict for the usual call (keywords for positional
parameters, extra positionals and missing arguments are sorted out in its body). It computes
the cache key with each argument's specialization written inline: an int's range and
divisibility, a device array's address read once, used for its `:16` entry and passed on to a
launcher that packs it without looking at the array again (`KernelLauncher.launch_addresses`).
A cache hit launches right there (past the profiler's launch observers, when there are
any: `recording.observed_launch`). Everything else (a cache miss, other argument types, a CPU
tensor, the interpreter, a recorder, `warmup=`, a bad call) goes to `slow(...)`, which rebuilds
the call as it was made and hands it to `JITFunction.run`, the reference path: the fast path
changes how fast a launch is, never what it does.
"""
from __future__ import annotations

from compiler.runtime import recording
from compiler.runtime.specialization import (
    _POINTER_TYPES, EQUAL_TO_1, _device_data_ptr_launch, _int_entry, _torch_launch,
    launch_handler_for, launch_value, specialize_unspecialized, specialize_without_alignment,
)


class _Missing:
    """The default of every parameter of a fast launch: "not given"."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<not given>"


MISSING = _Missing()


def _param_code(param, sample, namespace: dict) -> tuple[list, str | None, str | None, str, str]:
    """How the fast launch treats one parameter, given a `sample` argument of an earlier
    launch: (statements, type guard, per-call check, entry expression, value expression)."""
    name, index = param.name, param.index
    if param.is_constexpr:      # hashed as is (an unhashable value makes the lookup fail)
        return [], None, None, f"(_tile_type({name}), {name})", name
    if param.do_not_specialize or param.ignore_alignment:
        special = "_tile_nospec" if param.do_not_specialize else "_tile_noalign"
        return [], None, None, f"{special}({name})", f"_tile_value({name})"
    namespace[f"_tile_T{index}"] = type(sample)
    guard = f"_tile_type({name}) is _tile_T{index}"
    if type(sample) is int:     # `_int_entry`, its common i32 case inline
        entry = (f"((_tile_eq1 if {name} == 1 else 'i32' if {name} & 15 else 'i32:16') "
                 f"if -0x80000000 <= {name} <= 0x7FFFFFFF else _tile_int_entry({name}))")
        return [], guard, None, entry, name
    handler = launch_handler_for(sample)
    if handler is _torch_launch or handler is _device_data_ptr_launch:   # inline, read once
        statement = f"_tile_a{index} = {name}.data_ptr()"
        check = f"{name}.is_cuda" if handler is _torch_launch else None
        entry = f"_tile_pointer_types[{name}.dtype][not _tile_a{index} & 15]"
        return [statement], guard, check, entry, f"_tile_a{index}"
    namespace[f"_tile_H{index}"] = handler
    return ([f"_tile_e{index}, _tile_v{index} = _tile_H{index}({name})"], guard, None,
            f"_tile_e{index}", f"_tile_v{index}")


def fast_launch_options(jit) -> list:
    """The keyword-only launch options and controls of a fast launch, in order."""
    from compiler.runtime.jit import LAUNCH_CONTROLS

    return list(jit._option_names) + [c for c in LAUNCH_CONTROLS if c not in jit.arg_names]


def _tuple(items) -> str:
    """Source of a tuple of the expressions `items`."""
    return "(" + "".join(f"{item}, " for item in items) + ")"


def make_fast_launch(jit, samples: tuple, positional: int, slow):
    """Generate the fast launch of `jit` (a JITFunction) for calls like the one that bound
    `samples`: the same argument types, the first `positional` parameters given by position
    and the others by keyword (Python then binds both kinds without a dict; another call
    shape still works, through `slow`). `slow(grid, given, extra, kwargs, keywords,
    options)` is called for anything but a GPU cache hit of such a call: `given` holds the
    positional parameters as passed (MISSING where not), `keywords` the keyword-only ones,
    `options` the launch options and controls in `fast_launch_options(jit)` order."""
    namespace = {
        "_tile_M": MISSING, "_tile_type": type, "_tile_callable": callable, "_tile_dict": dict,
        "_tile_zip": zip, "_tile_len": len, "_tile_slow": slow, "_tile_jit": jit,
        "_tile_cache": jit._gpu_cache, "_tile_active": recording.ACTIVE,
        "_tile_observers": recording.OBSERVERS, "_tile_observed": recording.observed_launch,
        "_tile_quiet": recording.QUIET,
        "_tile_eq1": EQUAL_TO_1, "_tile_int_entry": _int_entry,
        "_tile_pointer_types": _POINTER_TYPES, "_tile_value": launch_value,
        "_tile_nospec": specialize_unspecialized, "_tile_noalign": specialize_without_alignment,
        "_tile_names": tuple(jit.arg_names),
    }
    params = jit.params
    names = [p.name for p in params]
    by_position, by_keyword = names[:positional], names[positional:]
    options = fast_launch_options(jit)
    bound = _tuple(names)
    # The call as made: positional parameters before keywords were merged into them
    # (`_tile_given`, kept only when there were such keywords), else as they are now.
    slow_call = (f"return _tile_slow(_tile_grid, _tile_given if _tile_kw else "
                 f"{_tuple(by_position)}, _tile_extra, _tile_kw, {_tuple(by_keyword)}, "
                 f"{_tuple(options)})")
    header = ["_tile_grid"] + [f"{n}=_tile_M" for n in by_position] + ["/", "*_tile_extra"]
    header += [f"{n}=_tile_M" for n in by_keyword] + [f"{o}=None" for o in options]
    header.append("**_tile_kw")
    body = []
    if by_position:             # keywords naming positional parameters: merged here
        body.append("if _tile_kw:")
        body.append(f"    _tile_given = {_tuple(by_position)}")
        body.append("    _tile_used = 0")
        for n in by_position:
            body.append(f"    if {n} is _tile_M and {n!r} in _tile_kw:")
            body.append(f"        {n} = _tile_kw[{n!r}]")
            body.append("        _tile_used += 1")
        body.append("    if _tile_used != _tile_len(_tile_kw):")
        body.append(f"        {slow_call}")
    else:
        body.append("if _tile_kw:")
        body.append(f"    {slow_call}")
    statements, guards, checks, entries, values = [], [], [], [], []
    required = []               # a type guard also catches a missing argument
    for p, sample in zip(params, samples):
        code, guard, check, entry, value = _param_code(p, sample, namespace)
        statements += code
        guards += [guard] if guard else []
        checks += [check] if check else []
        entries.append(entry)
        values.append(value)
        if guard is None and not p.has_default:
            required.append(f"{p.name} is _tile_M")
    interpret = "interpret is not None or " if "interpret" in options else ""
    body.append(f"if _tile_extra or {interpret}_tile_active or "
                f"_tile_jit._default_interpret is not False" +
                "".join(f" or {r}" for r in required) + ":")
    body.append(f"    {slow_call}")
    for p in params:            # after the check above: `run` must not see them as given
        if p.has_default:
            namespace[f"_tile_default_{p.index}"] = p.default
            body.append(f"if {p.name} is _tile_M:")
            body.append(f"    {p.name} = _tile_default_{p.index}")
    if guards:
        body.append(f"if not ({' and '.join(guards)}):")
        body.append(f"    {slow_call}")
    body += statements
    if checks:
        body.append(f"if not ({' and '.join(checks)}):")
        body.append(f"    {slow_call}")
    key = _tuple(entries + list(jit._option_names))
    stream = "stream" if "stream" in options else "None"
    body += [
        "try:",
        f"    _tile_entry = _tile_cache.get({key})",
        "except TypeError:          # an unhashable constexpr: `run` keys it by its repr",
        "    _tile_entry = None",
        "if _tile_entry is None:",
        f"    {slow_call}",
        "if _tile_callable(_tile_grid):",
        f"    _tile_grid = _tile_grid(_tile_dict(_tile_zip(_tile_names, {bound})))",
        "if _tile_entry.takes_addresses:",
        f"    _tile_args = _tile_entry.select({_tuple(values)})",
        "else:",
        f"    _tile_args = _tile_entry.select({bound})",
        "if _tile_observers and _tile_entry not in _tile_quiet:   # the profiler's hook",
        f"    return _tile_observed(_tile_entry, _tile_grid, _tile_args, {stream}, 'gpu', "
        f"_tile_jit, {bound})",
        f"_tile_entry.launch(_tile_grid, _tile_args, {stream})",
        "return _tile_entry.kernel",
    ]
    source = (f"def fast_launch({', '.join(header)}):\n" +
              "".join(f"    {line}\n" for line in body))
    exec(compile(source, f"<fast launch of {jit.__name__}>", "exec"), namespace)
    function = namespace["fast_launch"]
    function.source = source
    return function
