"""The code generator: walks a kernel's Python AST and emits ttir (syntax only).

Each statement and expression node sets the builder's location (named after the variable being
assigned, as Triton names values) and delegates typing, promotion and op building to
`Semantic`. Operators map to semantic methods through lookup tables. Loops find their
loop-carried variables from the names their body assigns before the body is emitted, so each
body is visited once (except `tl.static_range`, which is unrolled: one visit per iteration).
"""
from __future__ import annotations

import ast
import builtins
import inspect
import operator
import re
import traceback
import types

from compiler.codegen.tma import TENSOR_MAP_ATTR, supports as tma_supports
from compiler.dialects import scf, tt, ub
from compiler.ir.attributes import BoolAttr, StringAttr, SymbolRefAttr, TypeAttr, UnitAttr, int_attr
from compiler.ir.core import Block, Region
from compiler.ir.location import NameLoc
from compiler.ir.types import FunctionType
from compiler.language import core as tl
from compiler.language import iterators, standard
from compiler.language.core import (NotInKernelError, builtin_impl, constexpr, dtype,
                                    dtype_from_signature, tensor)

from .early_return import NO_RETURN_NAME, RETURN_NAME, fold_early_returns
from .errors import (CompilationError, SemanticError, StaticAssertionFailed,
                     UnsupportedLanguageConstruct)
from .semantic import Semantic, computation_type, is_python_number
from .source import FunctionSource, is_jit_function, readable_global

# AST operator -> Semantic method name, and the Python operator used when both sides are constant.
BINARY_OPS = {
    ast.Add: ("add", operator.add), ast.Sub: ("sub", operator.sub),
    ast.Mult: ("mul", operator.mul), ast.Div: ("truediv", operator.truediv),
    ast.FloorDiv: ("floordiv", operator.floordiv), ast.Mod: ("mod", operator.mod),
    ast.Pow: ("pow", operator.pow), ast.BitAnd: ("and_", operator.and_),
    ast.BitOr: ("or_", operator.or_), ast.BitXor: ("xor_", operator.xor),
    ast.LShift: ("lshift", operator.lshift), ast.RShift: ("rshift", operator.rshift),
}
COMPARE_OPS = {
    ast.Lt: ("lt", operator.lt), ast.LtE: ("le", operator.le), ast.Gt: ("gt", operator.gt),
    ast.GtE: ("ge", operator.ge), ast.Eq: ("eq", operator.eq), ast.NotEq: ("ne", operator.ne),
}
UNSUPPORTED = {
    "Lambda": "lambda expressions are not supported in kernels; define a @jit function instead",
    "ListComp": "list comprehensions are not supported in kernels; use tl.static_range loops",
    "SetComp": "set comprehensions are not supported in kernels",
    "DictComp": "dict comprehensions are not supported in kernels",
    "GeneratorExp": "generator expressions are not supported in kernels",
    "Try": "try/except is not supported in kernels; kernels cannot raise or catch exceptions",
    "TryStar": "try/except* is not supported in kernels",
    "With": "`with` blocks are not supported in kernels, except `with tl.profile(\"name\"):`",
    "AsyncWith": "`async with` is not supported in kernels",
    "ClassDef": "class definitions are not supported in kernels; define classes outside",
    "FunctionDef": "nested function definitions are not supported; define a @jit function at "
                   "module level",
    "AsyncFunctionDef": "async functions are not supported in kernels",
    "Global": "`global` is not supported in kernels; kernels cannot modify Python state",
    "Nonlocal": "`nonlocal` is not supported in kernels; kernels cannot modify Python state",
    "Yield": "`yield` is not supported in kernels; a kernel is not a generator",
    "YieldFrom": "`yield from` is not supported in kernels; a kernel is not a generator",
    "Await": "`await` is not supported in kernels",
    "AsyncFor": "`async for` is not supported in kernels",
    "Starred": "star-arguments (*args) are not supported in kernels; pass arguments explicitly",
    "Break": "`break` is not supported in kernels; use a while loop with a condition",
    "Continue": "`continue` is not supported in kernels; use an if around the loop body",
    "Delete": "`del` is not supported in kernels",
    "Import": "imports are not supported inside kernels; import at module level",
    "ImportFrom": "imports are not supported inside kernels; import at module level",
    "Raise": "`raise` is not supported in kernels; use tl.static_assert or tl.device_assert",
    "Dict": "dict literals are not supported in kernels",
    "Set": "set literals are not supported in kernels",
    "NamedExpr": "the walrus operator `:=` is not supported in kernels",
    "Match": "`match` is not supported in kernels",
}
ALLOWED_GLOBAL_TYPES = (bool, int, float, str, type(None), dtype, constexpr, types.ModuleType)


class _NoValue:
    """What a path that falls off the end of a value-returning function returns (the value
    of `early_return.NO_RETURN_NAME`): no value, or ub.poison where a runtime `if` joins it
    with a returned value."""

    def __repr__(self):
        return "no value"


NO_VALUE = _NoValue()


class BoundMethod:
    """`x.sum` etc.: a builtin with the tensor bound as its first argument."""

    def __init__(self, fn, self_value):
        self.fn = fn
        self.self_value = self_value


def assigned_names(stmts) -> list:
    """Names that the statements assign (in first-assignment order), nested blocks included;
    this is how loops find their loop-carried variables before emitting the body."""
    names: list = []
    for stmt in stmts:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) \
                    and node.id not in names:
                names.append(node.id)
    return names


class ModuleContext:
    """State shared by all functions compiled into one module: the module, the generated
    callees by specialization key, and the stack of functions being generated (recursion)."""

    def __init__(self, module, debug: bool, default_dot_input_precision: str = "tf32",
                 gpu_limits: bool = True, num_warps: int = 4, tma: bool = False,
                 allow_non_constexpr_globals: bool = False):
        self.module = module
        #: kernels may read any global (Triton's TRITON_ALLOW_NON_CONSTEXPR_GLOBALS)
        self.allow_non_constexpr_globals = allow_non_constexpr_globals
        #: host tensor descriptors copied by TMA (their kernels take a CUtensorMap each)
        self.tma = tma
        self.debug = debug
        self.default_dot_input_precision = default_dot_input_precision
        #: False when the ttir is for the interpreter: no GPU instruction limits (tl.dot's K)
        self.gpu_limits = gpu_limits
        self.num_warps = num_warps
        self.callees: dict = {}
        self.stack: list = []


class CodeGenerator(ast.NodeVisitor):
    """Emits one `tt.func` from one Python function."""

    def __init__(self, src: FunctionSource, mctx: ModuleContext, builder):
        self.src = src
        self.mctx = mctx
        self.builder = builder
        self.sem = Semantic(builder, mctx.default_dot_input_precision,
                            call_function=self.call_from_builtin, gpu_limits=mctx.gpu_limits,
                            num_warps=mctx.num_warps, tma=mctx.tma)
        self._builtin_node = None
        self.scope: dict = {}
        self.current_name: str | None = None
        self.region_depth = 0
        self.returned = False
        self.return_value = None

    # ---- locations and errors -------------------------------------------------------------
    def _tensor_map_arg(self, block, pname: str, kind, loc):
        """A host descriptor's CUtensorMap argument (`!tt.ptr<i8>` marked `tt.nv_tma_desc`,
        after its fields) when the compile copies descriptors by TMA and TMA can copy its
        blocks (`compiler.codegen.tma.supports`); None otherwise (the descriptor stays on pointers)."""
        if not self.mctx.tma or not tma_supports(str(kind.element_ty), kind.block_shape):
            return None
        map_type = tl.pointer_type(tl.int8)
        arg = block.add_argument(map_type.to_ir(), NameLoc(pname, loc))
        arg.name_hint = f"{pname}_map"
        arg.attributes = {TENSOR_MAP_ATTR: int_attr(1)}
        return tensor(arg, map_type)

    def loc(self, node):
        """The node's location, named after the variable being assigned (if any)."""
        flc = self.src.location(node)
        return NameLoc(self.current_name, flc) if self.current_name else flc

    def error(self, node, message: str, internal: str | None = None,
              kind: type = CompilationError) -> CompilationError:
        """A CompilationError (or the subclass `kind`) pointing at `node`."""
        return kind(message, self.src.file, self.src.line_of(node), self.src.col_of(node),
                    self.src.source_line(node), internal, self.src.position_in_function(node))

    def visit(self, node):
        """Visit with the node's location, turning semantic errors into positioned ones."""
        if not isinstance(node, (ast.expr, ast.stmt)):
            return super().visit(node)
        saved = self.builder.loc
        self.builder.loc = self.loc(node)
        try:
            return super().visit(node)
        except CompilationError:
            raise
        except SemanticError as exc:
            err = self.error(node, str(exc), kind=exc.located_as)
            if not isinstance(exc, StaticAssertionFailed):   # the sentence alone, as Triton's cause
                err.__cause__ = type(exc)(str(exc))
            raise err from err.__cause__
        except NotInKernelError as exc:
            raise self.error(node, str(exc)) from None
        except Exception as exc:  # a compiler bug: still point at the user's code
            internal = traceback.format_exc() if self.mctx.debug else None
            raise self.error(node, f"internal compiler error while compiling this: "
                                   f"{type(exc).__name__}: {exc}", internal) from None
        finally:
            self.builder.loc = saved

    def generic_visit(self, node):
        """Any syntax without a visitor is rejected with a specific message."""
        kind = type(node).__name__
        message = UNSUPPORTED.get(kind, f"unsupported syntax in a kernel: {kind}")
        raise self.error(node, message, kind=UnsupportedLanguageConstruct)

    # ---- functions ------------------------------------------------------------------------
    def emit_function(self, name: str, params: list, visibility: str, arg_attrs: dict):
        """Build the function `name` whose parameters are `params` = [(pname, dtype or
        constexpr)]; returns (FuncOp, DSL result types)."""
        tree = self.src.tree
        func_loc = self.src.location(tree)
        block = Block()
        descriptors = []
        for pname, kind in params:
            if isinstance(kind, constexpr):
                self.scope[pname] = kind
                continue
            if isinstance(kind, tl.tensor_descriptor_type):   # a host TensorDescriptor
                fields = []
                for i, field_type in enumerate(kind.argument_types()):
                    arg = block.add_argument(field_type.to_ir(), NameLoc(pname, func_loc))
                    arg.name_hint = f"{pname}_{i}"
                    arg.attributes = dict(arg_attrs.get(f"{pname}.{i}", {}))
                    fields.append(tensor(arg, field_type))
                descriptors.append((pname, kind, fields, self._tensor_map_arg(block, pname, kind,
                                                                              func_loc)))
                continue
            if isinstance(kind, tl.aggregate):      # a block pointer: one argument per field
                fields = []
                for i, field in enumerate(kind.fields()):
                    arg = block.add_argument(field.type.to_ir(), NameLoc(pname, func_loc))
                    arg.name_hint = f"{pname}_{i}"
                    fields.append(tensor(arg, field.type))
                self.scope[pname] = kind.with_fields(fields)
                continue
            arg = block.add_argument(kind.to_ir(), NameLoc(pname, func_loc))
            arg.attributes = dict(arg_attrs.get(pname, {}))
            self.scope[pname] = tensor(arg, kind)
        self.builder.set_insertion_point_to_end(block)
        self.builder.loc = func_loc
        for pname, kind, fields, tensor_map in descriptors:
            self.scope[pname] = kind.build(self.sem, fields, tensor_map)
        self.visit_body(fold_early_returns(tree.body))
        results = self._return_values(tree)
        with self.builder.location(self._return_loc(tree)):
            self.builder.create(tt.ReturnOp, [r.handle for r in results])
        fn_type = FunctionType(tuple(a.type for a in block.args),
                               tuple(r.handle.type for r in results))
        func = tt.FuncOp([], [], {"sym_name": StringAttr(name),
                                  "function_type": TypeAttr(fn_type),
                                  "sym_visibility": StringAttr(visibility),
                                  "noinline": BoolAttr(False)},
                         [Region([block])], func_loc)
        return func, [r.type for r in results]

    def _return_loc(self, tree):
        last = tree.body[-1] if tree.body else tree
        return self.src.location(self.return_node or last)

    return_node = None

    def _return_values(self, tree) -> list:
        value = self.return_value
        if value is None or value is NO_VALUE or (isinstance(value, constexpr)
                                                  and value.value is None):
            return []
        values = list(value) if isinstance(value, tuple) else [value]
        out = []
        for v in values:
            if isinstance(v, tl.aggregate):
                raise self.error(self.return_node, f"returning {v!r} from a @jit function is "
                                                   "not supported; return tensors")
            with self.builder.location(self.src.location(self.return_node)):
                try:
                    out.append(self.sem.to_tensor(v))
                except SemanticError as exc:
                    raise self.error(self.return_node, f"cannot return this value: {exc}")
        return out

    def visit_body(self, stmts) -> None:
        """Emit a statement list, stopping after a `return`."""
        for stmt in stmts:
            if self.returned:
                break
            self.visit(stmt)

    # ---- statements -----------------------------------------------------------------------
    def visit_Expr(self, node):
        """An expression statement (a call); docstrings are skipped."""
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return  # docstring
        self.visit(node.value)

    def visit_Pass(self, node):
        """`pass` emits nothing."""
        pass

    def visit_Return(self, node):
        """Record the returned value (only outside runtime control flow)."""
        if self.region_depth:
            raise self.error(node, "`return` inside an if or loop with a runtime condition is "
                                   "not supported; assign a variable and return it at the end")
        self.return_value = self.visit(node.value) if node.value is not None else None
        self.return_node = node
        self.returned = True

    def visit_Assign(self, node):
        """`x = expr` (ops are named after `x`) and tuple unpacking. A number assigned to a
        name becomes a runtime scalar, as in Triton (`a = False; if a:` is a runtime `if`);
        `x: tl.constexpr = ...` keeps it a compile-time value."""
        target = node.targets[0] if len(node.targets) == 1 else None
        self.current_name = target.id if isinstance(target, ast.Name) else None
        self.builder.loc = self.loc(node)
        try:
            value = self.visit(node.value)
        finally:
            self.current_name = None
        if isinstance(node.targets[0], ast.Name):
            value = self.runtime_number(node, value)
        for t in node.targets:
            self.assign(t, value)

    def runtime_number(self, node, value):
        """`value` as a runtime scalar when it is a Python number (Triton's rule for the value
        of an assignment to a name), else `value` itself."""
        if isinstance(value, tensor) or not is_python_number(value):
            return value
        with self.builder.location(self.loc(node)):
            return self.sem.to_tensor(value)

    def visit_AnnAssign(self, node):
        """`x: T = expr` assigns like `x = expr`; `x: tl.constexpr = expr` keeps a
        compile-time value."""
        if node.value is None:
            return
        self.current_name = node.target.id if isinstance(node.target, ast.Name) else None
        try:
            value = self.visit(node.value)
        finally:
            self.current_name = None
        if isinstance(node.target, ast.Name) and not _is_constexpr_annotation(node.annotation):
            value = self.runtime_number(node, value)
        self.assign(node.target, value)

    def visit_AugAssign(self, node):
        """`x op= expr` as `x = x op expr`."""
        if not isinstance(node.target, ast.Name):
            raise self.error(node.target, "augmented assignment needs a plain variable on the "
                                          "left, e.g. `acc += x`")
        name = node.target.id
        old = self.lookup_name(node.target)
        self.current_name = name
        self.builder.loc = self.loc(node)
        try:
            rhs = self.visit(node.value)
            value = self.runtime_number(node, self.binary(node, node.op, old, rhs))
        finally:
            self.current_name = None
        self.scope[name] = value

    def assign(self, target, value) -> None:
        """Bind a target (a name or a tuple of names) to a value."""
        if isinstance(target, ast.Name):
            self.scope[target.id] = value
            return
        if isinstance(target, (ast.Tuple, ast.List)):
            values = value.value if isinstance(value, constexpr) else value
            if not isinstance(values, (tuple, list)) or len(values) != len(target.elts):
                count = len(values) if isinstance(values, (tuple, list)) else 1
                raise self.error(target, f"cannot unpack {count} value(s) into "
                                         f"{len(target.elts)} names")
            for t, v in zip(target.elts, values):
                self.assign(t, v if isinstance(v, (tensor, constexpr, tuple)) else constexpr(v))
            return
        raise self.error(target, "only names and tuples of names can be assigned in a kernel; "
                                 "tensors are immutable (build a new one with tl.where)")

    def visit_Assert(self, node):
        """`assert`: static_assert for constants, tt.assert for runtime values."""
        cond = self.visit(node.test)
        msg = self.visit(node.msg) if node.msg is not None else constexpr("")
        if isinstance(cond, constexpr):
            standard.static_assert.__tile_builtin__(self.sem, cond, msg)
        else:
            standard.device_assert.__tile_builtin__(self.sem, cond, msg)

    # ---- if -------------------------------------------------------------------------------
    def visit_With(self, node):
        """`with tl.profile("name"):`: the body between a region's enter and exit records."""
        from compiler.language.profile import ProfileScope, profile
        context = node.items[0].context_expr if len(node.items) == 1 else None
        if not isinstance(context, ast.Call) or node.items[0].optional_vars is not None \
                or getattr(self.visit(context.func), "value", None) is not profile:
            raise self.error(node, UNSUPPORTED["With"])
        scope = self.visit(context)
        if not isinstance(getattr(scope, "value", None), ProfileScope):
            raise self.error(node, UNSUPPORTED["With"])
        scope.value.enter(self.sem)
        self.visit_body(node.body)
        scope.value.exit(self.sem)

    def visit_If(self, node):
        """A constexpr condition picks a branch now; a runtime scalar builds scf.if yielding the variables both branches define."""
        cond = self.visit(node.test)
        if not isinstance(cond, tensor):
            self.visit_body(node.body if cond_value(cond) else node.orelse)
            return
        if cond.is_block():
            raise self.error(node.test, f"an `if` condition must be a scalar, got a block of "
                                        f"shape {list(cond.shape)}; use tl.where for blocks")
        if not cond.dtype.is_bool():
            cond = self.sem.cast(cond, tl.int1)
        before = dict(self.scope)
        then_block, then_scope = self.region_body(node.body, before)
        else_block, else_scope = self.region_body(node.orelse, before)
        names, then_vals, else_vals = [], [], []
        for name in then_scope:
            if name not in else_scope:
                continue
            a, b = then_scope[name], else_scope[name]
            if a is b or (isinstance(a, constexpr) and isinstance(b, constexpr) and a == b
                          and type(a.value) is type(b.value)):
                self.scope[name] = a
                continue
            if a is NO_VALUE or b is NO_VALUE:      # one path returns nothing: poison there
                a, b = self._join_with_no_value(node, (then_block, else_block), (a, b))
            with self.builder.at_end_of(then_block):
                a = self._runtime_value(node, name, a)
            with self.builder.at_end_of(else_block):
                b = self._runtime_value(node, name, b)
            if a.type != b.type and name == RETURN_NAME:    # returns folded into one value
                raise self.error(_last_return(node.orelse) or node,
                                 f"Inconsistent return types: the function returns "
                                 f"{_type_text(a)} on one path and {_type_text(b)} on "
                                 "another; every return must give the same type")
            if a.type != b.type:
                raise self.error(node, f"Mismatched type for {name}: variable '{name}' is "
                                       f"{_type_text(a)} in the then-branch but {_type_text(b)} "
                                       "in the else-branch; a variable must keep its type "
                                       "across an if")
            names.append(name)
            then_vals.append(a)
            else_vals.append(b)
        for block, vals in ((then_block, then_vals), (else_block, else_vals)):
            with self.builder.at_end_of(block):
                self.builder.create(scf.YieldOp, [v.handle for v in vals])
        op = self.builder.create(scf.IfOp, [cond.handle], [v.handle.type for v in then_vals], {},
                                 [Region([then_block]), Region([else_block])])
        for name, r, v in zip(names, op.results, then_vals):
            self.scope[name] = tensor(r, v.type)

    def _join_with_no_value(self, node, blocks, values) -> tuple:
        """The two branches' returned values when one branch returns nothing: the other's
        value as a runtime value, and a `ub.poison` of its type in the branch returning
        nothing (what Triton's function returns when it falls off the end)."""
        present = 0 if values[1] is NO_VALUE else 1
        with self.builder.at_end_of(blocks[present]):
            value = self._runtime_value(node, RETURN_NAME, values[present])
        with self.builder.at_end_of(blocks[1 - present]):
            poison = tensor(self.builder.create(ub.PoisonOp, [], [value.handle.type]).results[0],
                            value.type)
        return (value, poison) if present == 0 else (poison, value)

    def region_body(self, stmts, scope: dict, block: Block | None = None):
        """Emit `stmts` into `block` (a new one by default) with a copy of `scope`; returns
        the block and the scope as the statements left it."""
        block = Block() if block is None else block
        saved_scope, saved_point = self.scope, (self.builder.block, self.builder.index)
        self.scope = dict(scope)
        self.region_depth += 1
        try:
            self.builder.set_insertion_point_to_end(block)
            self.visit_body(stmts)
            return block, self.scope
        finally:
            self.region_depth -= 1
            self.scope = saved_scope
            self.builder.block, self.builder.index = saved_point

    def _runtime_value(self, node, name: str, value) -> tensor:
        if isinstance(value, tensor):
            return value
        if is_python_number(value):
            return self.sem.to_tensor(value)
        if isinstance(value, tl.aggregate):
            raise self.error(node, f"variable '{name}' holds {value!r}, which differs between "
                                   "the branches of a runtime `if`; move it in both branches "
                                   "(tl.advance) or outside the `if`")
        raise self.error(node, f"variable '{name}' holds the compile-time value "
                               f"{_const_text(value)} that differs between branches or "
                               "iterations; only numbers and tensors can")

    # ---- loops ----------------------------------------------------------------------------
    def visit_For(self, node):
        """`for` over range / tl.range (scf.for) or tl.static_range (unrolled)."""
        if node.orelse:
            raise self.error(node, "`for ... else` is not supported in kernels")
        if not isinstance(node.iter, ast.Call):
            raise self.error(node.iter, "a kernel's for loop must iterate over range(...), "
                                        "tl.range(...) or tl.static_range(...)")
        func = self.visit(node.iter.func)
        func = func.value if isinstance(func, constexpr) else func
        if func not in (builtins.range, iterators.range, iterators.static_range):
            raise self.error(node.iter, "a kernel's for loop must iterate over range(...), "
                                        "tl.range(...) or tl.static_range(...)")
        if not isinstance(node.target, ast.Name):
            raise self.error(node.target, "the loop variable must be a single name")
        args, kwargs = self.call_arguments(node.iter)
        if func is not builtins.range:
            args, kwargs = self._iterator_arguments(node, func, args, kwargs)
        if func is iterators.static_range:
            self.static_for(node, args, kwargs)
        else:
            self.scf_for(node, args, kwargs)

    def _iterator_arguments(self, node, func, args, kwargs):
        """tl.range / tl.static_range arguments bound to the iterator's signature: the bounds
        [start, end, step] (given by position or keyword, as range() reads them) and the
        other (hint) arguments by name."""
        try:
            given = inspect.signature(func).bind(*args, **kwargs).arguments
        except TypeError as exc:
            raise self.error(node.iter, f"wrong arguments for tl.{func.__name__}: {exc}")
        first, second, step = (given.get(name) for name in ("arg1", "arg2", "step"))
        start, end = (constexpr(0), first) if _is_none(second) else (first, second)
        step = constexpr(1) if _is_none(step) else step
        hints = {k: v for k, v in given.items() if k not in ("arg1", "arg2", "step")}
        return [start, end, step], hints

    def _range_bounds(self, node, args):
        if not 1 <= len(args) <= 3:
            raise self.error(node.iter, f"range takes 1 to 3 arguments, got {len(args)}")
        if len(args) == 1:
            return constexpr(0), args[0], constexpr(1)
        return args[0], args[1], args[2] if len(args) == 3 else constexpr(1)

    def static_for(self, node, args, kwargs):
        """Unroll a tl.static_range loop: the body once per iteration with a constexpr index."""
        lb, ub, step = self._range_bounds(node, args)
        bounds = []
        for b in (lb, ub, step):
            if not isinstance(b, constexpr) or not isinstance(b.value, int):
                raise self.error(node.iter, "tl.static_range's bounds must be integer constants "
                                            "(tl.constexpr); use range() for runtime bounds")
            bounds.append(b.value)
        for i in builtins.range(*bounds):
            self.scope[node.target.id] = constexpr(i)
            self.visit_body(node.body)

    def scf_for(self, node, args, kwargs):
        """Emit scf.for with the loop-carried variables found before visiting the body."""
        lb, ub, step = self._range_bounds(node, args)
        negative_step = isinstance(step, constexpr) and isinstance(step.value, int) \
            and step.value < 0
        if isinstance(step, constexpr) and step.value == 0:
            raise self.error(node.iter, "range() step must not be zero")
        if negative_step:
            # scf.for needs a positive step: run i' over [ub, lb) by -step, i = lb + ub - i'.
            lb, ub, step = ub, lb, constexpr(-step.value)
        with self.builder.location(self.src.location(node.iter)):
            bounds = [self.sem.to_tensor(b) for b in (lb, ub, step)]
            for b in bounds:
                if b.is_block() or not b.dtype.is_int():
                    raise self.error(node.iter, f"loop bounds must be integer scalars, got "
                                                f"{_type_text(b)}")
            iv_type = tl.int64 if any(b.dtype.int_bitwidth == 64 for b in bounds) else tl.int32
            bounds = [self.sem.cast(b, iv_type) for b in bounds]
        carried, inits = self.loop_carried(node, node.body, exclude={node.target.id})
        block = Block()
        block.add_argument(iv_type.to_ir(), self.src.location(node.target))
        block.args[0].name_hint = node.target.id
        for name, init in zip(carried, inits):
            block.add_argument(init.handle.type).name_hint = name.replace(".", "_")
        inner = dict(self.scope)
        iv = tensor(block.args[0], iv_type)
        if negative_step:
            with self.builder.at_end_of(block), \
                    self.builder.location(NameLoc(node.target.id, self.src.location(node.target))):
                iv = self.sem.add(self.sem.sub(bounds[1], iv), bounds[0])
        inner[node.target.id] = iv
        self.bind_carried(inner, carried,
                          [tensor(arg, init.type) for arg, init in zip(block.args[1:], inits)])
        block, after = self.region_body(node.body, inner, block)
        with self.builder.at_end_of(block):
            yields = self.loop_yields(node, carried, inits, after)
            with self.builder.location(self.src.location(node)):
                self.builder.create(scf.YieldOp, [v.handle for v in yields])
        attrs = {}
        for key, attr in (("num_stages", "tt.num_stages"),
                          ("loop_unroll_factor", "tt.loop_unroll_factor")):
            if not _is_none(kwargs.get(key)):      # None (even as a constexpr): no hint
                attrs[attr] = int_attr(cond_value(kwargs[key]))
        if not _is_none(kwargs.get("flatten")) and cond_value(kwargs["flatten"]):
            attrs["tt.flatten"] = UnitAttr()
        op = self.builder.create(scf.ForOp, [b.handle for b in bounds] +
                                 [v.handle for v in inits], [v.handle.type for v in inits],
                                 attrs, [Region([block])])
        self.bind_carried(self.scope, carried,
                          [tensor(r, init.type) for r, init in zip(op.results, inits)])

    def loop_carried(self, node, body, exclude=()):
        """The variables a loop body reassigns that exist before it, with runtime initial
        values (constants are materialized). An aggregate (a block pointer) is carried as its
        fields, under the keys `name.0`, `name.1`, ... (no Python name has a dot)."""
        assigned = set(assigned_names(body))
        names = [n for n in self.scope if n in assigned and n not in exclude]
        carried, inits = [], []
        for name in names:
            value = self.scope[name]
            if isinstance(value, constexpr) and not is_python_number(value):
                continue
            if isinstance(value, tuple):
                raise self.error(node, f"tuple variable '{name}' cannot be carried through a loop")
            if isinstance(value, tl.aggregate):
                for i, field in enumerate(value.fields()):
                    carried.append(f"{name}.{i}")
                    inits.append(field)
                continue
            carried.append(name)
            with self.builder.location(NameLoc(name, self.src.location(node))):
                inits.append(self._runtime_value(node, name, value))
        return carried, inits

    def bind_carried(self, scope: dict, carried: list, values: list) -> None:
        """Bind the carried keys to `values` in `scope`, rebuilding aggregates from their
        fields (the structure is the one `self.scope` held before the loop)."""
        fields: dict = {}
        for key, value in zip(carried, values):
            name, dot, _ = key.partition(".")
            if dot:
                fields.setdefault(name, []).append(value)
            else:
                scope[name] = value
        for name, parts in fields.items():
            scope[name] = self.scope[name].with_fields(parts)

    def _carried_value(self, node, scope: dict, key: str):
        """The value of one carried key in `scope` (a field of an aggregate, or a variable)."""
        name, dot, index = key.partition(".")
        if not dot:
            return scope[name]
        value = scope[name]
        if not self.scope[name].same_structure(value):
            raise self.error(node, f"variable '{name}' is {self.scope[name]!r} before the loop "
                                   f"but {value!r} after an iteration; a loop-carried block "
                                   "pointer must keep its block shape and order")
        return value.fields()[int(index)]

    def loop_yields(self, node, carried, inits, after) -> list:
        """The carried variables' values at the end of the body, type-checked against their initial values."""
        out = []
        for name, init in zip(carried, inits):
            value = self._runtime_value(node, name, self._carried_value(node, after, name))
            if value.type != init.type:
                raise self.error(node, f"variable '{name}' is {_type_text(init)} before the "
                                       f"loop but {_type_text(value)} after an iteration; a "
                                       "loop-carried variable must keep its type (initialize "
                                       "it with the right dtype)")
            out.append(value)
        return out

    def carried_block(self, carried, inits):
        """A block with one argument per loop-carried variable, and the scope seeing them."""
        block = Block()
        inner = dict(self.scope)
        values = []
        for name, init in zip(carried, inits):
            arg = block.add_argument(init.handle.type)
            arg.name_hint = name.replace(".", "_")
            values.append(tensor(arg, init.type))
        self.bind_carried(inner, carried, values)
        return block, inner

    def visit_While(self, node):
        """Emit scf.while: the condition in the before region, the body in the after region."""
        if node.orelse:
            raise self.error(node, "`while ... else` is not supported in kernels")
        carried, inits = self.loop_carried(node, node.body)
        types_ = [v.handle.type for v in inits]
        before, inner = self.carried_block(carried, inits)
        saved_scope, saved_point = self.scope, (self.builder.block, self.builder.index)
        self.scope = inner
        self.region_depth += 1
        try:
            self.builder.set_insertion_point_to_end(before)
            cond = self.visit(node.test)
            with self.builder.location(self.src.location(node.test)):
                cond = self.sem.to_tensor(cond)
                if cond.is_block():
                    raise self.error(node.test, "a `while` condition must be a scalar, got a "
                                                f"block of shape {list(cond.shape)}")
                cond = self.sem.cast(cond, tl.int1)
                self.builder.create(scf.ConditionOp, [cond.handle] + list(before.args))
        finally:
            self.region_depth -= 1
            self.scope = saved_scope
            self.builder.block, self.builder.index = saved_point
        after_block, inner = self.carried_block(carried, inits)
        after_block, after = self.region_body(node.body, inner, after_block)
        with self.builder.at_end_of(after_block):
            yields = self.loop_yields(node, carried, inits, after)
            self.builder.create(scf.YieldOp, [v.handle for v in yields])
        op = self.builder.create(scf.WhileOp, [v.handle for v in inits], types_, {},
                                 [Region([before]), Region([after_block])])
        self.bind_carried(self.scope, carried,
                          [tensor(r, init.type) for r, init in zip(op.results, inits)])

    # ---- expressions ----------------------------------------------------------------------
    def visit_Constant(self, node):
        """A literal becomes a constexpr."""
        return constexpr(node.value)

    def visit_Tuple(self, node):
        """A tuple or list literal: a Python tuple of values."""
        return tuple(self.visit(e) for e in node.elts)

    visit_List = visit_Tuple

    def visit_JoinedStr(self, node):
        """An f-string of compile-time values."""
        parts = []
        for v in node.values:
            if isinstance(v, ast.Constant):
                parts.append(str(v.value))
                continue
            value = self.visit(v.value)
            if isinstance(value, tensor):
                raise self.error(v, "f-strings may only hold compile-time values")
            spec = _unwrap(self.visit(v.format_spec)) if v.format_spec is not None else ""
            text = _unwrap(value)
            if v.conversion in (ord("r"), ord("s"), ord("a")):
                text = {ord("r"): repr, ord("s"): str, ord("a"): ascii}[v.conversion](text)
            parts.append(format(text, spec))
        return constexpr("".join(parts))

    def visit_Name(self, node):
        """A local variable, global, closure value or Python builtin."""
        if isinstance(node.ctx, ast.Store):
            return None
        return self.lookup_name(node)

    def lookup_name(self, node):
        """Resolve a name: locals first, then globals/closure cells, then Python builtins."""
        name = node.id
        if name in self.scope:
            return self.scope[name]
        if name == NO_RETURN_NAME:
            return NO_VALUE
        found, value = self.src.lookup(name)
        if not found:
            raise self.error(node, f"name '{name}' is not defined")
        wrapped = self.wrap_global(node, name, value)    # a type no kernel can use raises here
        if name in self.src.namespace and not self.mctx.allow_non_constexpr_globals \
                and name not in self.src.constexpr_annotated and not readable_global(value):
            message = (f"Cannot access global variable {name} from within a @jit function: "
                       f"a kernel reads only globals that are compile-time values, "
                       f"`{name} = tl.constexpr(...)` or `{name}: tl.constexpr = ...` (or set "
                       f"TRITON_ALLOW_NON_CONSTEXPR_GLOBALS=1)")
            raise self.error(node, message) from NameError(message)  # Triton's cause
        return wrapped

    def wrap_global(self, node, name: str, value):
        """A global as a compile-time value, or an error for values a kernel cannot use."""
        if isinstance(value, constexpr):
            return value
        if isinstance(value, ALLOWED_GLOBAL_TYPES) or callable(value) \
                or is_jit_function(value):
            return constexpr(value)
        if isinstance(value, tuple):
            return tuple(self.wrap_global(node, name, v) for v in value)
        raise self.error(node, f"global '{name}' of type {type(value).__name__} cannot be used "
                               "in a kernel; only numbers, dtypes, tl.constexpr values, modules "
                               "and @jit functions can")

    def visit_Attribute(self, node):
        """`x.attr` on a tensor (dtype, shape, methods) or a compile-time object (tl.load, dtype.element_ty)."""
        base = self.visit(node.value)
        attr = node.attr
        if isinstance(base, tensor):
            return self.tensor_attribute(node, base, attr)
        if isinstance(base, tuple):
            raise self.error(node, f"tuples have no attribute '{attr}' in kernels")
        if isinstance(base, tl.aggregate):
            return self.aggregate_attribute(node, base, attr)
        obj = base.value
        if not hasattr(obj, attr) and is_python_number(obj) and (
                attr in standard.TENSOR_METHODS or attr in ("dtype", "shape", "type", "numel")):
            # A number used as a tensor (`acc = 0; acc.to(tl.int64)`): Triton makes it a scalar
            with self.builder.location(self.loc(node)):
                return self.tensor_attribute(node, self.sem.to_tensor(obj), attr)
        if not hasattr(obj, attr):
            if isinstance(obj, types.ModuleType):
                short = "tl" if obj.__name__ == "compiler.language" else obj.__name__
                raise self.error(node, f"unknown name {short}.{attr}: module {obj.__name__} has "
                                       f"no attribute '{attr}'")
            raise self.error(node, f"{_const_text(base)} has no attribute '{attr}'")
        return self.wrap_global(node, attr, getattr(obj, attr))

    def tensor_attribute(self, node, t: tensor, attr: str):
        """A tensor's dtype, shape, type, numel, T or a bound method."""
        if attr == "dtype":
            return constexpr(t.dtype)
        if attr == "shape":
            return tuple(constexpr(d) for d in t.shape)
        if attr == "type":
            return constexpr(t.type)
        if attr == "numel":
            return constexpr(t.numel)
        if attr == "T":
            return self.sem.trans(t)
        if attr in standard.TENSOR_METHODS:
            return BoundMethod(standard.TENSOR_METHODS[attr], t)
        raise self.error(node, f"tensors have no attribute or method '{attr}'")

    def aggregate_attribute(self, node, value, attr: str):
        """A block pointer's or tensor descriptor's field (dtype, shape, block_shape) or
        method (`desc.load`), by the names its class lists."""
        methods = getattr(type(value), "METHODS", {})
        if attr in methods:
            return BoundMethod(methods[attr](), value)
        if attr in getattr(type(value), "ATTRIBUTES", ()):
            field = getattr(value, attr)
            return tuple(constexpr(v) for v in field) if isinstance(field, tuple) \
                else constexpr(field)
        raise self.error(node, f"{value!r} has no attribute '{attr}'")

    def visit_Subscript(self, node):
        """`x[:, None]` on tensors; constant indexing of tuples and constexprs."""
        base = self.visit(node.value)
        index = node.slice
        if isinstance(base, tensor):
            return self.index_tensor(node, base, index)
        key = self.visit(index)
        try:
            seq = base if isinstance(base, tuple) else _unwrap(base)
            result = seq[_unwrap(key)]
        except Exception as exc:
            raise self.error(node, f"cannot index {_const_text(base)}: {exc}")
        return result if isinstance(result, (tensor, constexpr, tuple)) else constexpr(result)

    def index_tensor(self, node, t: tensor, index):
        """Indexing with None (expand_dims) and `:` (keep the axis)."""
        items = index.elts if isinstance(index, ast.Tuple) else [index]
        result, dim = t, 0
        for item in items:
            if isinstance(item, ast.Constant) and item.value is None:
                result = self.sem.expand_dims(result, dim)
                dim += 1
            elif isinstance(item, ast.Slice) and item.lower is None and item.upper is None \
                    and item.step is None:
                dim += 1
            else:
                raise self.error(item, f"unsupported tensor index: {ast.unparse(item)}: tensors "
                                       "can only be indexed with None (a new axis) and `:` "
                                       "(keep an axis), e.g. x[:, None]")
        # Each `:` keeps an axis of the result (Triton skips it without a check): more of them
        # than the result has axes is an error.
        if sum(1 for i in items if isinstance(i, ast.Slice)) > len(result.shape):
            raise self.error(node, f"too many indices: {len(items)} for a tensor of rank "
                                   f"{len(t.shape)} ({len(result.shape)} after the new axes)")
        return result

    def visit_BinOp(self, node):
        """A binary operator through the BINARY_OPS table."""
        lhs = self.visit(node.left)
        rhs = self.visit(node.right)
        return self.binary(node, node.op, lhs, rhs)

    def binary(self, node, op, lhs, rhs):
        """Fold two constants in Python, else call the semantic method for the operator."""
        method, pyop = BINARY_OPS[type(op)]
        if isinstance(lhs, constexpr) and isinstance(rhs, constexpr):
            try:
                return constexpr(pyop(lhs.value, rhs.value))
            except Exception as exc:
                raise self.error(node, f"cannot compute {_const_text(lhs)} "
                                       f"{_op_text(op)} {_const_text(rhs)}: {exc}")
        if isinstance(lhs, tuple) or isinstance(rhs, tuple):
            raise self.error(node, "arithmetic on tuples is not supported in kernels")
        return getattr(self.sem, method)(lhs, rhs)

    def visit_UnaryOp(self, node):
        """`-x`, `+x`, `~x`, `not x`."""
        value = self.visit(node.operand)
        if isinstance(value, constexpr):
            pyop = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_,
                    ast.Invert: operator.invert}[type(node.op)]
            return constexpr(pyop(value.value))
        if isinstance(node.op, ast.USub):
            return self.sem.neg(value)
        if isinstance(node.op, ast.UAdd):
            return value
        if isinstance(node.op, ast.Invert):
            return self.sem.invert(value)
        return self.sem.logical_not(value)

    def visit_BoolOp(self, node):
        """`and` / `or`: folded for constants, andi/ori of i1 values otherwise."""
        values = [self.visit(v) for v in node.values]
        is_and = isinstance(node.op, ast.And)
        if all(isinstance(v, constexpr) for v in values):
            result = values[0].value
            for v in values[1:]:
                result = (result and v.value) if is_and else (result or v.value)
            return constexpr(result)
        result = None
        for v in values:
            b = self.sem.cast(self.sem.to_tensor(v), tl.int1)
            result = b if result is None else (self.sem.and_(result, b) if is_and
                                               else self.sem.or_(result, b))
        return result

    def visit_Compare(self, node):
        """Comparisons, chained ones joined with `and`."""
        left = self.visit(node.left)
        result = None
        for op, comparator in zip(node.ops, node.comparators):
            right = self.visit(comparator)
            part = self.compare(node, op, left, right)
            if result is None:
                result = part
            elif isinstance(result, constexpr) and isinstance(part, constexpr):
                result = constexpr(result.value and part.value)
            else:
                result = self.sem.and_(self.sem.to_tensor(result), self.sem.to_tensor(part))
            left = right
        return result

    def compare(self, node, op, left, right):
        """One comparison: constants fold; `is`/`in` need constants."""
        if isinstance(op, (ast.Is, ast.IsNot)):
            same = (_unwrap(left) is _unwrap(right)) if not isinstance(left, tensor) and \
                not isinstance(right, tensor) else (left is right)
            return constexpr(same if isinstance(op, ast.Is) else not same)
        if isinstance(op, (ast.In, ast.NotIn)):
            if isinstance(left, tensor) or isinstance(right, tensor):
                raise self.error(node, "`in` works only on compile-time values")
            seq = right if isinstance(right, tuple) else _unwrap(right)
            found = any(_unwrap(x) == _unwrap(left) for x in seq)
            return constexpr(found if isinstance(op, ast.In) else not found)
        pred, pyop = COMPARE_OPS[type(op)]
        if isinstance(left, constexpr) and isinstance(right, constexpr):
            return constexpr(pyop(left.value, right.value))
        if isinstance(left, tuple) and isinstance(right, tuple) and \
                any(isinstance(x, tensor) for x in left + right):
            raise self.error(node, "tuples compare only when they hold compile-time values")
        if _is_constant_sequence(left) and _is_constant_sequence(right):
            # shapes and other sequences of constants compare as Python lists (`x.shape == [N]`)
            return constexpr(pyop([_unwrap(v) for v in _items(left)],
                                  [_unwrap(v) for v in _items(right)]))
        return self.sem.compare(pred, left, right)

    def visit_IfExp(self, node):
        """`a if c else b`: a constexpr condition picks one side; a runtime scalar builds an
        scf.if yielding the value (only the chosen side runs, as in Triton)."""
        cond = self.visit(node.test)
        if not isinstance(cond, tensor):
            return self.visit(node.body if cond_value(cond) else node.orelse)
        if cond.is_block():
            raise self.error(node.test, "a conditional expression needs a scalar condition; "
                                        "use tl.where for blocks")
        cond = self.sem.cast(cond, tl.int1)
        blocks, raw = [Block(), Block()], []
        for block, expr in zip(blocks, (node.body, node.orelse)):
            with self.builder.at_end_of(block):
                raw.append(self.visit(expr))
        if all(_is_none(r) for r in raw):      # `f(x) if c else g(x)` used as a statement
            for block in blocks:
                with self.builder.at_end_of(block):
                    self.builder.create(scf.YieldOp, [])
            self.builder.create(scf.IfOp, [cond.handle], [], {},
                                [Region([blocks[0]]), Region([blocks[1]])])
            return constexpr(None)
        if any(_is_none(r) for r in raw):
            raise self.error(node, "one side of this conditional expression has no value "
                                   "(None) and the other has one; give both sides a value")
        values = []
        for block, r in zip(blocks, raw):
            with self.builder.at_end_of(block):
                values.append(self.sem.to_tensor(r))
        then_v, else_v = values
        if then_v.dtype != else_v.dtype and (then_v.dtype.is_ptr() or else_v.dtype.is_ptr()):
            raise self.error(node, "Ternary expression with dynamic condition has inconsistent "
                                   f"type: {_type_text(then_v)} and {_type_text(else_v)}")
        dt = computation_type(then_v.dtype, False, else_v.dtype, False) \
            if then_v.dtype != else_v.dtype else then_v.dtype
        shape = self.sem.broadcast_shape(then_v.shape, else_v.shape)
        for i, block in enumerate(blocks):
            with self.builder.at_end_of(block):
                values[i] = self.sem.cast(self.sem.broadcast_to(values[i], shape), dt)
                self.builder.create(scf.YieldOp, [values[i].handle])
        op = self.builder.create(scf.IfOp, [cond.handle], [values[0].handle.type], {},
                                 [Region([blocks[0]]), Region([blocks[1]])])
        return tensor(op.results[0], values[0].type)

    # ---- calls ----------------------------------------------------------------------------
    def call_arguments(self, node):
        """Evaluate a call's positional and keyword arguments (no star-args)."""
        args = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                raise self.error(a, UNSUPPORTED["Starred"])
            args.append(self.visit(a))
        kwargs = {}
        for kw in node.keywords:
            if kw.arg is None:
                raise self.error(kw.value, "**kwargs are not supported in kernels; pass keyword "
                                           "arguments explicitly")
            kwargs[kw.arg] = self.visit(kw.value)
        return args, kwargs

    def visit_Call(self, node):
        """Dispatch a call: builtin, tensor method, @jit function, Python builtin or an error."""
        func = self.visit(node.func)
        args, kwargs = self.call_arguments(node)
        if isinstance(func, BoundMethod):
            return self.call_builtin(node, func.fn, [func.self_value] + args, kwargs)
        if isinstance(func, tensor) or isinstance(func, tuple):
            raise self.error(node.func, "this value is not callable")
        fn = func.value
        if builtin_impl(fn) is not None:
            return self.call_builtin(node, fn, args, kwargs)
        if is_jit_function(fn):
            return self.call_jit(node, fn, args, kwargs)
        if fn is constexpr:
            return constexpr(_unwrap(args[0]))
        if fn in (iterators.range, iterators.static_range, builtins.range):
            raise self.error(node, "range(...), tl.range(...) and tl.static_range(...) can only be "
                                   "used as the iterator of a for loop")
        if fn in PYTHON_BUILTINS:
            return PYTHON_BUILTINS[fn](self, node, args, kwargs)
        helper = _host_helpers().get(fn)
        if helper is not None:
            return self.call_builtin(node, helper, args, kwargs)
        if fn in _host_helpers() and all(isinstance(a, constexpr) for a in args):
            return constexpr(fn(*[a.value for a in args]))
        if isinstance(getattr(fn, "__self__", None), dtype):
            return constexpr(fn(*[_unwrap(a) for a in args]))
        if isinstance(fn, type) and issubclass(fn, dtype) and \
                all(isinstance(a, constexpr) for a in [*args, *kwargs.values()]):
            # a type made at compile time: tl.pointer_type(x.dtype), tl.block_type(...)
            return constexpr(fn(*[a.value for a in args],
                                **{k: v.value for k, v in kwargs.items()}))
        name = getattr(fn, "__name__", repr(fn))
        if isinstance(fn, types.FunctionType):
            raise self.error(node, f"cannot call the plain Python function '{name}' from a "
                                   f"kernel; decorate it with @jit to make it a device function")
        raise self.error(node, f"cannot call '{name}' from a kernel; only tl builtins and @jit "
                               "functions can be called")

    def call_builtin(self, node, fn, args, kwargs):
        """Call a builtin's implementation with the semantic context first, after checking the
        arguments bind. A `None` written in the call (`tl.atomic_max(p, v, None, "acquire")`)
        or passed as a constexpr None reaches the builtin as plain None, its "not given"."""
        impl = builtin_impl(fn)
        # An explicit None (a constexpr None once visited) means "not given", as for Triton's
        # builtins, which unwrap their constexpr arguments: tl.load(p, None) has no mask.
        args = [None if _is_none(a) else a for a in args]
        kwargs = {k: None if _is_none(v) else v for k, v in kwargs.items()}
        try:
            inspect.signature(impl).bind(self.sem, *args, **kwargs)
        except TypeError as exc:
            raise self.error(node, f"wrong arguments for tl.{impl.__name__}: {exc}")
        outer, self._builtin_node = self._builtin_node, node
        try:
            result = impl(self.sem, *args, **kwargs)
        finally:
            self._builtin_node = outer
        if result is None:
            return constexpr(None)
        return result

    def call_from_builtin(self, fn, args: list) -> list:
        """A @jit function called by a builtin (tl.reduce's combine_fn): tt.call at the
        builder's current point, errors located at the builtin's call; the results as a list."""
        fn = _unwrap(fn)
        if not is_jit_function(fn):
            raise SemanticError(f"expected a @jit function, got {fn!r}")
        result = self.call_jit(self._builtin_node, fn, list(args), {})
        if isinstance(result, tuple):
            return list(result)
        return [] if isinstance(result, constexpr) and result.value is None else [result]

    def _check_noinline_arguments(self, node, jitfn, arguments: dict) -> None:
        """A `@jit(noinline=True)` function is a real call on the GPU, whose parameters have no
        layout: Triton refuses block arguments there (the interpreter, which has no layouts,
        takes them), and so do we."""
        if not getattr(jitfn, "noinline", False) or not self.mctx.gpu_limits:
            return
        for pname, value in arguments.items():
            if isinstance(value, tensor) and value.is_block():
                raise self.error(node, f"{jitfn.fn.__name__} is marked noinline, but argument "
                                       f"'{pname}' is a block ({value.type}); a noinline "
                                       f"function takes scalars only (drop noinline=True to "
                                       f"pass tensors)")

    def call_jit(self, node, jitfn, args, kwargs):
        """Specialize the callee for these argument types and constants and emit tt.call."""
        fn = jitfn.fn
        sig = inspect.signature(fn)
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as exc:
            raise self.error(node, f"wrong arguments for {fn.__name__}: {exc}")
        bound.apply_defaults()
        self._check_noinline_arguments(node, jitfn, bound.arguments)
        params, operands, key_parts = [], [], []
        for pname, value in bound.arguments.items():
            if isinstance(value, tensor):
                params.append((pname, value.type))
                operands.append(value)
                key_parts.append(_type_key(value.type))
            elif isinstance(value, tuple):
                raise self.error(node, f"passing a tuple to @jit function {fn.__name__} is not "
                                       "supported")
            elif isinstance(value, tl.aggregate):
                params.append((pname, value))
                operands.extend(value.fields())
                key_parts.append("A" + "_".join([type(value).__name__] + [
                    _type_key(f.type) for f in value.fields()] + [
                    str(getattr(value, a)) for a in getattr(type(value), "ATTRIBUTES", ())]))
            else:
                value = value if isinstance(value, constexpr) else constexpr(value)
                params.append((pname, value))
                key_parts.append("c" + _mangle_const(value.value))
        if any(f is fn for f in self.mctx.stack):
            raise self.error(node, f"recursion: {fn.__name__} calls itself (directly or through "
                                   "other functions); kernels cannot recurse")
        key = (fn, tuple(key_parts))
        if key not in self.mctx.callees:
            name = f"{fn.__name__}__{'_'.join(key_parts)}" if key_parts else fn.__name__
            name = re.sub(r"[^A-Za-z0-9_]", "_", name)
            try:
                self.mctx.callees[key] = generate_function(jitfn, name, params, self.mctx,
                                                           "private", {})
            except CompilationError as inner:     # point at the call too, the callee as cause
                err = self.error(node, f"in the call to {fn.__name__}: {inner.message}",
                                 inner.internal, kind=type(inner))
                raise err from inner.with_traceback(None)
        name, result_types = self.mctx.callees[key]
        op = self.builder.create(tt.CallOp, [o.handle for o in operands],
                                 [t.to_ir() for t in result_types],
                                 {"callee": SymbolRefAttr(name)})
        results = [tensor(r, t) for r, t in zip(op.results, result_types)]
        if not results:
            return constexpr(None)
        return results[0] if len(results) == 1 else tuple(results)


# ---- Python builtins usable in kernels ----------------------------------------------------
def _py_minmax(fold, sem_method):
    def call(gen, node, args, kwargs):
        """The Python builtin inside a kernel."""
        if len(args) == 1 and isinstance(args[0], tuple):
            args = list(args[0])
        if len(args) < 2:
            raise gen.error(node, f"{fold.__name__}() in a kernel needs at least two values")
        if all(isinstance(a, constexpr) for a in args):
            return constexpr(fold(a.value for a in args))
        result = args[0]
        for a in args[1:]:
            result = getattr(gen.sem, sem_method)(result, a)
        return result
    return call


def _py_abs(gen, node, args, kwargs):
    (x,) = args
    return constexpr(builtins.abs(x.value)) if isinstance(x, constexpr) else gen.sem.abs(x)


def _py_convert(pytype, dt):
    def call(gen, node, args, kwargs):
        """The Python builtin inside a kernel."""
        (x,) = args
        if isinstance(x, constexpr):
            return constexpr(pytype(x.value))
        return gen.sem.cast(x, dt)
    return call


def _py_len(gen, node, args, kwargs):
    (x,) = args
    if isinstance(x, tensor):
        if not x.is_block():
            raise gen.error(node, "len() of a scalar")
        return constexpr(x.shape[0])
    return constexpr(len(x if isinstance(x, tuple) else x.value))


def _py_print(gen, node, args, kwargs):
    prefix = ""
    if args and isinstance(args[0], constexpr) and isinstance(args[0].value, str):
        prefix, args = args[0].value, args[1:]
    return standard.device_print.__tile_builtin__(gen.sem, constexpr(prefix), *args)


def _py_isinstance(gen, node, args, kwargs):
    value, cls = args
    target = cls.value if isinstance(cls, constexpr) else tuple(_unwrap(c) for c in cls)
    return constexpr(isinstance(value if isinstance(value, tensor) else _unwrap(value), target))


def _py_getattr(gen, node, args, kwargs):
    """`getattr(obj, "name")` on compile-time objects (`getattr(tl, func)`), as `obj.name`."""
    if len(args) not in (2, 3) or kwargs or not all(isinstance(a, constexpr) for a in args):
        raise gen.error(node, "getattr in a kernel takes a compile-time object and a constant "
                              "name")
    obj, name = args[0].value, args[1].value
    if not isinstance(name, str):
        raise gen.error(node, f"getattr's name must be a string, got {name!r}")
    if not hasattr(obj, name):
        if len(args) == 3:
            return args[2]
        raise gen.error(node, f"{_const_text(args[0])} has no attribute '{name}'")
    return gen.wrap_global(node, name, getattr(obj, name))


PYTHON_BUILTINS = {
    builtins.getattr: _py_getattr,
    builtins.min: _py_minmax(builtins.min, "minimum"),
    builtins.max: _py_minmax(builtins.max, "maximum"),
    builtins.abs: _py_abs,
    builtins.float: _py_convert(float, tl.float32),
    builtins.int: _py_convert(int, tl.int32),
    builtins.bool: _py_convert(bool, tl.int1),
    builtins.len: _py_len,
    builtins.print: _py_print,
    builtins.isinstance: _py_isinstance,
}


# ---- helpers ----------------------------------------------------------------------------------
def _host_helpers() -> dict:
    """`triton.cdiv` / `triton.next_power_of_2` (the top-level package's plain functions):
    cdiv maps to tl.cdiv; next_power_of_2 folds on constants (None: no in-kernel builtin)."""
    import compiler
    helpers = {}
    for name, builtin in (("cdiv", standard.cdiv), ("next_power_of_2", None)):
        fn = getattr(compiler, name, None)
        if fn is not None and builtin_impl(fn) is None:
            helpers[fn] = builtin
    return helpers


def cond_value(c) -> object:
    """The Python value of a compile-time condition or option."""
    return _unwrap(c)


def _is_none(value) -> bool:
    """True for None and for a constexpr holding None."""
    return value is None or (isinstance(value, constexpr) and value.value is None)


def _unwrap(x):
    return x.value if isinstance(x, constexpr) else x


def _is_none(x) -> bool:
    return x is None or isinstance(x, constexpr) and x.value is None


def _type_text(t: tensor) -> str:
    article = "an" if str(t.dtype).startswith(("int", "fp")) else "a"
    if t.is_block():
        return f"{article} {t.dtype} block of shape {list(t.shape)}"
    return f"{article} {t.dtype} scalar"


def _items(value) -> list:
    """The elements of a tuple, or of a constexpr holding a list or tuple."""
    return list(value.value if isinstance(value, constexpr) else value)


def _is_constant_sequence(value) -> bool:
    """A tuple (or constexpr list/tuple) whose elements are all compile-time values."""
    if isinstance(value, constexpr):
        if not isinstance(value.value, (list, tuple)):
            return False
    elif not isinstance(value, tuple):
        return False
    return not any(isinstance(v, tensor) for v in _items(value))


def _const_text(c) -> str:
    v = _unwrap(c)
    return repr(v) if not isinstance(v, types.ModuleType) else f"module {v.__name__}"


def _op_text(op) -> str:
    return {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
            ast.Mod: "%", ast.Pow: "**", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^",
            ast.LShift: "<<", ast.RShift: ">>"}[type(op)]


def _type_key(t) -> str:
    if isinstance(t, tl.block_type):
        return _scalar_key(t.element_ty) + "S" + "x".join(map(str, t.shape)) + "S"
    return _scalar_key(t)


def _scalar_key(d: dtype) -> str:
    if d.is_ptr():
        return ("PC" if d.const else "P") + d.element_ty.name
    return d.name


def _mangle_const(v) -> str:
    if isinstance(v, dtype):
        return _scalar_key(v)
    return str(v).replace("-", "m").replace(".", "d")


def generate_function(fn, name: str, params: list, mctx: ModuleContext, visibility: str,
                      arg_attrs: dict):
    """Compile `fn` into a `tt.func` named `name` in `mctx.module`; returns (name, DSL result
    types). `params` pairs each parameter name with its dtype or constexpr value."""
    from compiler.ir.builder import Builder
    src = FunctionSource.of(fn)
    builder = Builder()
    gen = CodeGenerator(src, mctx, builder)
    mctx.stack.append(getattr(fn, "fn", fn))
    try:
        func, result_types = gen.emit_function(name, params, visibility, arg_attrs)
    finally:
        mctx.stack.pop()
    mctx.module.append(func)
    return name, result_types


def _annotation_is(node, name: str) -> bool:
    """`x: tl.<name>` / `x: <name>` / `x: "tl.<name>"` (by its spelling)."""
    if node is None:
        return False
    text = node.value if isinstance(node, ast.Constant) else ast.unparse(node)
    return isinstance(text, str) and text.split(".")[-1] == name


def _is_constexpr_annotation(node) -> bool:
    """`x: tl.constexpr` (or `constexpr`, `"tl.constexpr"`)."""
    return _annotation_is(node, "constexpr")


def kernel_params(src: FunctionSource, signature: dict, constexprs: dict):
    """Pair each kernel parameter with its dtype (from `signature`) or its constexpr value."""
    tree = src.tree
    if tree.args.vararg or tree.args.kwarg:
        node = tree.args.vararg or tree.args.kwarg
        raise CompilationError(UNSUPPORTED["Starred"], src.file, src.line_of(node),
                               src.col_of(node), src.source_line(node))
    params = []
    names = [a.arg for a in tree.args.args + tree.args.kwonlyargs]
    for arg in tree.args.args + tree.args.kwonlyargs:
        name = arg.arg
        if name in constexprs:
            params.append((name, constexpr(constexprs[name])))
        elif _is_constexpr_annotation(arg.annotation):
            raise CompilationError(f"parameter '{name}' is a tl.constexpr and needs a "
                                   "compile-time value (pass it in constexprs)", src.file,
                                   src.line_of(arg), src.col_of(arg), src.source_line(arg))
        elif name in signature:
            try:
                if tl.tensor_descriptor_type.is_signature(signature[name]):
                    params.append((name, tl.tensor_descriptor_type.parse(signature[name])))
                    continue
                kind = dtype_from_signature(signature[name])
                if _annotation_is(arg.annotation, "const") and kind.is_ptr():
                    kind = tl.pointer_type(kind.element_ty, kind.address_space, const=True)
                params.append((name, kind))
            except ValueError as exc:
                raise CompilationError(str(exc), src.file, src.line_of(arg), src.col_of(arg),
                                       src.source_line(arg)) from None
        else:
            raise CompilationError(f"parameter '{name}' has neither a signature type nor a "
                                   "constexpr value", src.file, src.line_of(arg),
                                   src.col_of(arg), src.source_line(arg))
    extra = [n for n in list(signature) + list(constexprs) if n not in names]
    if extra:
        raise CompilationError(f"the signature names unknown parameter(s) {extra}", src.file,
                               src.line_of(tree), src.col_of(tree), src.source_line(tree))
    return params


def _last_return(stmts: list):
    """The statement that sets a branch's folded return value (the `return` it came from, as
    `early_return` keeps its location): the branch's last assignment to RETURN_NAME, looking
    into the else-branch of a trailing `if`. None when the branch has none."""
    last = stmts[-1] if stmts else None
    if isinstance(last, ast.If):
        return _last_return(last.orelse) or _last_return(last.body)
    if isinstance(last, ast.Assign) and any(isinstance(t, ast.Name) and t.id == RETURN_NAME
                                            for t in last.targets):
        return last
    return None
