"""compiler.frontend: Python AST -> ttir. `generate_ttir` compiles a `@jit` function (or a plain
`def`) for one specialization; `referenced_globals` lists the globals it reads (for cache keys).

Layout: `source` (reading the function), `codegen` (syntax: the AST visitor), `semantic`
(types, promotion, broadcasting, IR building), `errors` (positioned, user-facing errors).
"""
from __future__ import annotations


from .errors import CompilationError, SemanticError


def generate_ttir(fn, signature: dict, constexprs: dict, attrs: dict | None = None,
                  options: dict | None = None, name: str | None = None):
    """Compile `fn` (a function or an object with `.fn`) into a verified ttir `Module` holding
    `tt.func public @<name>` and private callees reached through `tt.call`.

    `signature` maps each runtime parameter to a Triton type string ("*fp32", "i32", ...),
    `constexprs` maps compile-time parameters (and ints specialized as 1) to values, and
    `attrs["divisibility_16"]` lists parameters known to be multiples of 16. `options["debug"]`
    (the compile option, which TILE_DEBUG=1 sets at the edge) keeps internal tracebacks;
    `options["default_dot_input_precision"]` is tl.dot's input_precision when a call gives none;
    `options["for_interpreter"]` (the interpreter's ttir) lifts the GPU's instruction limits
    (tl.dot's minimum K), which Triton's interpreter does not have either.
    `options["num_warps"]` is what `tl.extra.cuda.num_threads()` counts from; with
    `options["tma"]` a host descriptor's loads and stores go through its CUtensorMap (an extra
    kernel argument; `tt.descriptor_load` / `tt.descriptor_store`). With
    `options["allow_non_constexpr_globals"]` a kernel may read any global, not only
    compile-time ones (`source.readable_global`). `name` names the public kernel (default:
    the function's name).
    """
    from compiler.ir.attributes import int_attr
    from compiler.ir.core import Module
    from compiler.ir.verifier import verify_module

    from .codegen import ModuleContext, generate_function, kernel_params
    from .source import FunctionSource

    options = dict(options or {})
    debug = bool(options.get("debug", False))
    inner = getattr(fn, "fn", fn)
    try:
        src = FunctionSource.of(fn)
        module = Module(loc=src.location(src.tree))
        mctx = ModuleContext(module, bool(debug),
                             options.get("default_dot_input_precision") or "tf32",
                             gpu_limits=not options.get("for_interpreter", False),
                             num_warps=int(options.get("num_warps") or 4),
                             tma=bool(options.get("tma")) and
                             not options.get("for_interpreter", False),
                             allow_non_constexpr_globals=bool(
                                 options.get("allow_non_constexpr_globals")))
        params = kernel_params(src, dict(signature), dict(constexprs))
        arg_attrs = {name: {"tt.divisibility": int_attr(16)}
                     for name in (attrs or {}).get("divisibility_16", ())}
        name, _ = generate_function(fn, name or inner.__name__, params, mctx, "public",
                                    arg_attrs)
        kernel = module.lookup(name)
        if kernel.function_type.results:
            raise CompilationError("a kernel cannot return a value; store results through a "
                                   "pointer instead", src.file, src.line_of(src.tree),
                                   src.col_of(src.tree), src.source_line(src.tree))
        # The kernel first, then its callees (they were appended as they were generated).
        module.body.ops.remove(kernel)
        module.body.insert(0, kernel)
    except CompilationError as exc:
        if debug:
            raise
        raise exc.with_traceback(None) from exc.__cause__  # keep the bare sentence only
    verify_module(module)
    return module


def referenced_globals(fn) -> dict:
    """The globals `fn` reads: name -> repr-able summary (jit callees hashed by source)."""
    from .source import referenced_globals as _referenced
    return _referenced(fn)


__all__ = ["generate_ttir", "referenced_globals", "CompilationError", "SemanticError"]
