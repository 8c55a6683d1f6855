"""Signatures and constexprs given on the command line (`--signature 'kernel=*fp32,*fp32,i32'`,
`--constexpr BLOCK=1024` or `--constexpr kernel.BLOCK=1024`) or typed in the explorer, for
compiling kernels a script defines but never launches. Parsing errors point at the column of
the option's text (with a caret); checks against the kernel's parameters point at its `def`
line in the script."""
from __future__ import annotations

import ast
import inspect as _pyinspect
from dataclasses import dataclass, field


class SpecError(ValueError):
    """A signature or constexpr spec that is malformed or does not fit the kernel."""


@dataclass
class KernelSpec:
    """What to compile one kernel with: its runtime argument types and its constexprs."""

    kernel: str
    types: list = field(default_factory=list)
    constexprs: dict = field(default_factory=dict)

    def describe(self) -> str:
        extra = "".join(f" {k}={v!r}" for k, v in self.constexprs.items())
        return f"{self.kernel}({', '.join(self.types)}){extra}"


def _located(option: str, text: str, column: int, message: str) -> SpecError:
    """An error pointing at 0-based `column` of an option's text."""
    return SpecError(f"{option} '{text}':{column + 1}: {message}\n    {text}\n    "
                     f"{' ' * column}^")


def parse_types(text: str, option: str, start: int = 0, full: str | None = None) -> list:
    """Comma-separated signature strings ("*fp32,i32,*fp16:16") from `text`, which begins at
    column `start` of the option's `full` text; SpecError at the first bad one."""
    from compiler.runtime.specialization import parse_signature_string
    full = text if full is None else full
    types, column = [], start
    for piece in text.split(","):
        stripped = piece.strip()
        offset = column + len(piece) - len(piece.lstrip())
        if not stripped:
            raise _located(option, full, offset, "an empty type (two commas, or a trailing one)")
        try:
            parse_signature_string(stripped)
        except ValueError as error:
            raise _located(option, full, offset, str(error)) from None
        types.append(stripped)
        column += len(piece) + 1
    return types


def parse_signature_option(text: str) -> tuple:
    """`kernel=*fp32,*fp32,i32` -> ("kernel", ["*fp32", "*fp32", "i32"])."""
    name, sep, rest = text.partition("=")
    if not sep or not name.strip().isidentifier():
        raise _located("--signature", text, 0, "write KERNEL=TYPE,TYPE,... (e.g. add_kernel=*fp32,*fp32,i32)")
    if not rest.strip():
        raise _located("--signature", text, len(text), "no types after '='")
    return name.strip(), parse_types(rest, "--signature", len(name) + 1, text)


def parse_constexpr_option(text: str, option: str = "--constexpr") -> tuple:
    """`BLOCK=1024` -> (None, "BLOCK", 1024); `kernel.BLOCK=1024` -> ("kernel", "BLOCK", 1024).
    Values are Python literals (ints, floats, True/False, None, quoted strings)."""
    target, sep, value_text = text.partition("=")
    kernel, dot, name = target.rpartition(".")
    if not sep or not name.strip().isidentifier() or (dot and not kernel.strip().isidentifier()):
        raise _located(option, text, 0, "write NAME=VALUE or KERNEL.NAME=VALUE "
                                         "(e.g. BLOCK=1024)")
    try:
        value = ast.literal_eval(value_text.strip())
    except (ValueError, SyntaxError):
        raise _located(option, text, len(target) + 1 + len(value_text) - len(value_text.lstrip()),
                       "the value must be a Python literal (1024, 1.5, True, 'name')") from None
    return (kernel.strip() or None), name.strip(), value


def parse_specs(signatures: list, constexprs: list) -> tuple:
    """({kernel: KernelSpec} from --signature options, {name: value} constexprs for every
    kernel, {kernel: {name: value}} constexprs for one kernel)."""
    specs: dict = {}
    for text in signatures:
        kernel, types = parse_signature_option(text)
        if kernel in specs:
            raise _located("--signature", text, 0, f"{kernel} was given a signature twice")
        specs[kernel] = KernelSpec(kernel, types)
    common, per_kernel = {}, {}
    for text in constexprs:
        kernel, name, value = parse_constexpr_option(text)
        (per_kernel.setdefault(kernel, {}) if kernel else common)[name] = value
    for kernel, values in per_kernel.items():
        if kernel in specs:
            specs[kernel].constexprs.update(values)
    return specs, common, per_kernel


def _where(fn) -> tuple:
    """(`file:line:col: `, the def line with a caret) for errors about a kernel's parameters
    (empty texts when its source cannot be found)."""
    try:
        lines, first = _pyinspect.getsourcelines(fn)
        path = _pyinspect.getsourcefile(fn) or "<kernel>"
    except (OSError, TypeError):
        return "", ""
    index = next((i for i, line in enumerate(lines) if line.lstrip().startswith("def ")), 0)
    line = lines[index].rstrip()
    column = len(line) - len(line.lstrip())
    return f"{path}:{first + index}:{column + 1}: ", f"\n    {line}\n    {' ' * column}^"


def bind_spec(jit, spec: KernelSpec, common: dict) -> tuple:
    """(argument types, constexpr keywords) for `jit.warmup`, checked against the kernel's
    parameters: as many types as runtime parameters, constexprs that exist, every constexpr
    without a default given. SpecError at the kernel's def line otherwise."""
    params = list(_pyinspect.signature(jit.fn).parameters.values())
    runtime = [p.name for p in params if "constexpr" not in str(p.annotation)]
    constexpr = {p.name: p for p in params if "constexpr" in str(p.annotation)}
    prefix, suffix = _where(jit.fn)
    if len(spec.types) != len(runtime):
        raise SpecError(f"{prefix}{spec.kernel} takes {len(runtime)} runtime argument(s) "
                        f"({', '.join(runtime)}) but --signature gives {len(spec.types)}"
                        f"{suffix}")
    unknown = [k for k in spec.constexprs if k not in constexpr]
    if unknown:
        raise SpecError(f"{prefix}{spec.kernel} has no constexpr parameter "
                        f"{', '.join(unknown)} (its constexprs: "
                        f"{', '.join(constexpr) or 'none'}){suffix}")
    values = {k: v for k, v in common.items() if k in constexpr}
    values.update(spec.constexprs)
    missing = [name for name, p in constexpr.items()
               if name not in values and p.default is _pyinspect.Parameter.empty]
    if missing:
        raise SpecError(f"{prefix}{spec.kernel}: give the constexpr(s) {', '.join(missing)} "
                        f"(--constexpr {missing[0]}=VALUE){suffix}")
    return tuple(spec.types), values


def parse_prompt(text: str) -> KernelSpec:
    """The explorer's prompt: `KERNEL=TYPE,TYPE,... [NAME=VALUE ...]` (the --signature text,
    then constexprs separated by spaces)."""
    head, _, rest = text.strip().partition(" ")
    kernel, types = parse_signature_option(head)
    spec = KernelSpec(kernel, types)
    column = len(head) + 1
    for piece in rest.split(" "):
        if piece:
            try:
                named, name, value = parse_constexpr_option(piece, "constexpr")
            except SpecError as error:
                raise _located("prompt", text, column, str(error).splitlines()[0]) from None
            if named not in (None, kernel):
                raise _located("prompt", text, column, f"{named} is not {kernel}")
            spec.constexprs[name] = value
        column += len(piece) + 1
    return spec
