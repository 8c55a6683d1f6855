"""ttgir -> LLVM IR (llvmlite.ir): the kernel ABI, the lowering context and the op walk.

A distributed tensor becomes a Python list of per-register LLVM values, in the register order of
`compiler.analysis.layouts`; a scalar is a list of one value. Each op is lowered by the function
registered for its name in `compiler.codegen.registry`, with the builder's debug location set to
the op's line in the printed ttgir, so PTX `.loc`s point back at ttgir ops.

The walk never lets an internal exception out: every operand and result layout is checked
first (`layout_check`), a `LoweringError` a lowering raises is located at its op, and any other
exception becomes a located `LoweringError` saying it is a compiler bug (`lowering_errors`).
The LLVM IR is parsed and verified by LLVM before it is handed on, so a lowering bug is a
`LoweringError` here and never a crash in LLVM's optimizer or code generator.
"""
from __future__ import annotations

import re

from dataclasses import dataclass, field

from llvmlite import ir

import compiler.dialects.arith  # noqa: F401  (op registration)
import compiler.dialects.math  # noqa: F401
import compiler.dialects.scf  # noqa: F401
import compiler.dialects.tt  # noqa: F401
import compiler.dialects.ttg  # noqa: F401
from compiler.analysis.layout_to_linear import LayoutConversionError
from compiler.dialects.tt import PointerType
from compiler.dialects.ttg import MemDescType
from compiler.ir.core import Module, Operation, Region, Value
from compiler.ir.traits import ReturnLike, Terminator
from compiler.ir.types import TensorType, shape_of
from compiler.metadata import KernelMetadata, MetadataError

from compiler.watchdog import StageTimeout

from . import vector_width as vw
from .layout_check import layout_problem, shared_layout_problem
from .lowering_errors import LoweringError, op_site
from .debuginfo import DebugInfo, op_lines, python_location
from .indices import LayoutIndexer
from .llvm_helpers import GLOBAL_PTR, I8, SHARED_PTR, llvm_type
from .tma import TENSOR_MAP_KIND, is_tensor_map
from .nvidia_options import DEFAULT_ARCH
from .registry import lowering_for

TRIPLE = "nvptx64-nvidia-cuda"
DATA_LAYOUT = "e-p3:32:32-p4:32:32-p5:32:32-p6:32:32-p7:32:32-i64:64-i128:128-v16:16-v32:32-n16:32:64"


def parent_handles(op: Operation) -> bool:
    """A terminator its parent op reads (scf.yield, scf.condition, a combine region's return);
    only a function's return is lowered on its own."""
    return op.has_trait(Terminator) and not op.has_trait(ReturnLike)


@dataclass
class LoweredKernel:
    """The result of lowering one kernel: LLVM IR text and what the launcher needs to know."""

    name: str
    llvm_ir: str
    num_warps: int
    shared_bytes: int
    arg_kinds: list                      # per kernel argument: "ptr<f32>", "i32", "f32", ...
    ttgir: str                           # the ttgir text the debug locations point into
    ttgir_file: str                      # its file name as written in the PTX `.file`
    op_python: dict = field(default_factory=dict)   # ttgir line -> "file:line:col"
    threads_per_warp: int = 32
    llvm_module: object = field(default=None, repr=False, compare=False)  # llvmlite.ir, unoptimized


@dataclass
class LoweringOptions:
    """Options of the lowering: the kernel's ttgir file name, whether to run LLVM's O3, the
    register cap per thread (`.maxnreg`; None: no cap), whether fadd/fsub/fmul may contract
    into fma (`fp_fusion`, the compile option enable_fp_fusion), the target's compute
    capability (`arch`: which instructions exist, e.g. stmatrix from sm_90), whether tf32
    mma.sync operands may be read by ldmatrix (`tf32_ldmatrix`), and the kernel's metadata
    (num_warps, ...; None: read from the module's attributes, `KernelMetadata.from_ttgir`)."""

    ttgir_file: str | None = None
    optimize: bool = True
    maxnreg: int | None = None
    fp_fusion: bool = True
    metadata: object = None
    arch: int = DEFAULT_ARCH       # the target's compute capability (sm_90+: stmatrix)
    #: tf32 mma.sync operands read from shared memory by ldmatrix where the buffer allows
    #: (the compile option `tf32_ldmatrix`)
    tf32_ldmatrix: bool = False


class LoweringContext:
    """State while lowering one function: value map, builder, shared memory, index helpers."""

    def __init__(self, module: ir.Module, func: ir.Function, num_warps: int, debug: DebugInfo,
                 lines: dict, axis, threads_per_warp: int = 32, ttgir_file: str = "",
                 ttgir_text: str = ""):
        self.module = module
        self.threads_per_warp = threads_per_warp
        self.ttgir_file = ttgir_file
        self.ttgir_text = ttgir_text
        self._checked_layouts: set = set()
        self.func = func
        self.num_warps = num_warps
        self.debug = debug
        self.lines = lines
        self.axis = axis
        self.values: dict[Value, list] = {}
        self.tf32_ldmatrix = False      # LoweringOptions.tf32_ldmatrix
        entry = func.append_basic_block("entry")
        body = func.append_basic_block("body")
        self.prologue = ir.IRBuilder(entry)
        self.prologue.position_at_end(entry)
        terminator = self.prologue.branch(body)
        self.prologue.position_before(terminator)
        self.builder = ir.IRBuilder(body)
        self.indexer = LayoutIndexer(self.prologue, num_warps)
        self.shared_bytes = 0
        self._smem = None
        self.smem_align = 16            # the most any planned buffer needs
        self.local_offsets: dict[Operation, int] = {}
        self.shared_sources: dict[Value, object] = {}   # value -> row-major shared buffer holding it
        self.scratch_base = 0
        self.planned_scratch: dict[Operation, tuple] = {}   # op -> (offset, bytes) planned for it
        self.current_op: Operation | None = None

    # ---- values ----------------------------------------------------------------------------
    def get(self, value: Value) -> list:
        """The LLVM values (one per register) of an IR value."""
        try:
            return self.values[value]
        except KeyError:
            raise LoweringError(f"value {value!r} used before it was lowered") from None

    def set(self, value: Value, llvm_values) -> None:
        """Record the LLVM values of an IR value (a list, or one value for a scalar)."""
        if not isinstance(llvm_values, list):
            llvm_values = [llvm_values]
        self.values[value] = llvm_values

    # ---- shared memory ---------------------------------------------------------------------
    def shared_base(self):
        """The `global_smem` array (dynamic shared memory) as an addrspace(3) pointer."""
        if self._smem is None:
            self._smem = ir.GlobalVariable(self.module, ir.ArrayType(I8, 0), "global_smem",
                                           addrspace=3)
            self._smem.linkage = "external"
            self._smem.align = self.smem_align
            self._smem.type = SHARED_PTR   # an opaque pointer, so GEPs of any element type work
        return self._smem

    def plan_local_buffers(self, func_op: Operation) -> None:
        """Place shared memory as `compiler.analysis.shared_memory.allocate` plans it: every
        `ttg.local_alloc` buffer and each op's scratch area at its liveness-based offset, so
        buffers that are never live together share bytes. Scratch requests the plan does not
        cover (or larger than planned) go to an area after everything planned."""
        from compiler.analysis.shared_memory import allocate
        buffers, total = allocate(func_op)
        self.smem_align = max([16] + [buf.align for buf in buffers])
        for buf in buffers:
            if buf.kind == "explicit":
                self.local_offsets[buf.op] = buf.offset
            else:
                self.planned_scratch[buf.op] = (buf.offset, buf.size)
        self.scratch_base = total
        self.shared_bytes = total

    def local_buffer(self, op: Operation):
        """The shared-memory pointer of a `ttg.local_alloc` buffer."""
        return self._shared_at(self.local_offsets[op])

    def scratch(self, nbytes: int, offset: int = 0):
        """A pointer `offset` bytes into the current op's scratch area, reserving `offset +
        nbytes` bytes of it: its planned place when the plan has room, else the area after all
        planned buffers. Users fence the area with barriers."""
        planned = self.planned_scratch.get(self.current_op)
        if planned is not None and offset + nbytes <= planned[1]:
            return self._shared_at(planned[0] + offset)
        start = self.scratch_base + offset
        self.shared_bytes = max(self.shared_bytes, start + nbytes)
        return self._shared_at(start)

    def _shared_at(self, offset: int):
        base = self.shared_base()
        if offset:
            base = self.builder.gep(base, [ir.Constant(ir.IntType(32), offset)], source_etype=I8)
        return base

    # ---- ops and regions -------------------------------------------------------------------
    def lower_op(self, op: Operation) -> None:
        """Emit one op with the debug location of its ttgir line."""
        fn = lowering_for(type(op))
        if fn is None:
            raise LoweringError(f"no lowering for {op.name} (ttgir line "
                                f"{self.lines.get(op, '?')})")
        saved = (self.current_op, self.builder.debug_metadata, self.prologue.debug_metadata)
        self.current_op = op
        line = self.lines.get(op)
        if line is not None:
            loc = self.debug.location(line)
            self.builder.debug_metadata = loc
            self.prologue.debug_metadata = loc
        try:
            self.check_layouts(op)
            fn(self, op)
        except StageTimeout:
            raise
        except LoweringError as err:
            raise err.located(self.site(op)) from err.__cause__
        except LayoutConversionError as err:  # a layout the linear-layout helpers refuse
            raise LoweringError(str(err), self.site(op)) from err
        except NotImplementedError as err:     # a helper's "not supported yet": not a bug
            raise LoweringError(str(err), self.site(op)) from err
        except Exception as err:  # a lowering bug: located, said to be one, never swallowed
            raise LoweringError.internal_error(self.site(op), err) from err
        finally:
            # ops nested in a region (a combine function) hand the location back to their parent
            self.current_op, self.builder.debug_metadata, self.prologue.debug_metadata = saved

    def site(self, op: Operation):
        """Where `op` is (Python position or ttgir line) and its layouts, for errors."""
        return op_site(op, self.ttgir_file, self.lines.get(op), self.ttgir_text)

    def check_layouts(self, op: Operation) -> None:
        """A `LoweringError` when an operand or result layout breaks what the lowering assumes
        (`layout_check.layout_problem`); each (layout, shape) is checked once."""
        for value in (*op.operands, *op.results):
            t = value.type
            if not isinstance(t, (TensorType, MemDescType)) or t.encoding is None:
                continue
            key = (t.encoding, t.shape)
            if key in self._checked_layouts:
                continue
            problem = (shared_layout_problem(t.encoding, t.shape) if isinstance(t, MemDescType)
                       else layout_problem(t.encoding, t.shape, self.num_warps,
                                           self.threads_per_warp))
            if problem:
                raise LoweringError(f"{t} cannot be lowered: {problem}")
            self._checked_layouts.add(key)

    def lower_block(self, block) -> None:
        """Lower every op of a block except a terminator its parent op reads (scf.yield, ...)."""
        for op in block.ops:
            if parent_handles(op):
                continue
            self.lower_op(op)

    def lower_region_inline(self, region: Region, args: list) -> list:
        """Lower a single-block region (a combine function) with scalar `args` and return the
        LLVM values its terminator yields."""
        block = region.blocks[0]
        for arg, value in zip(block.args, args):
            self.set(arg, [value])
        self.lower_block(block)
        return [self.get(v)[0] for v in block.terminator.operands]


#: a CUtensorMap kernel parameter's LLVM type (byval: 128 bytes in the parameter space)
TENSOR_MAP_PTR = ir.ArrayType(I8, 128).as_pointer()
def _arg_kind(arg) -> str:
    if is_tensor_map(arg):
        return TENSOR_MAP_KIND
    t = arg.type
    return str(t) if not isinstance(t, PointerType) else f"ptr<{t.pointee}>"


def lower_module(ttgir_module: Module, options: LoweringOptions | None = None) -> LoweredKernel:
    """Lower the module's public kernel to LLVM IR text (optimized at O3 unless told not to).
    Raises only `LoweringError` (and `StageTimeout` from the watchdog)."""
    try:
        return _lower_module(ttgir_module, options or LoweringOptions())
    except (LoweringError, StageTimeout):
        raise
    except Exception as err:  # outside any op (analyses, the ABI, LLVM's checks): a bug
        raise LoweringError(f"internal error lowering the kernel: {type(err).__name__}: {err}. "
                            f"This is a compiler bug, not a problem with the kernel; please "
                            f"report it with the kernel's ttgir (TILE_KERNEL_DUMP=1 writes it)",
                            internal=True) from err


def _lower_module(ttgir_module: Module, options: LoweringOptions) -> LoweredKernel:
    functions = ttgir_module.functions()
    kernels = [f for f in functions
               if getattr(f.attributes.get("sym_visibility"), "value", "public") == "public"]
    if len(kernels) != 1:
        raise LoweringError(f"expected exactly one public tt.func (the kernel), found "
                            f"{len(kernels)}")
    func_op = kernels[0]
    name = func_op.attributes["sym_name"].value
    metadata = options.metadata
    if metadata is None:
        try:
            metadata = KernelMetadata.from_ttgir(ttgir_module, name)
        except MetadataError as err:
            raise LoweringError(str(err)) from None
    num_warps = metadata.num_warps
    ttgir_file = options.ttgir_file or f"{name}.ttgir"
    text, lines = op_lines(ttgir_module)

    module = ir.Module(name=ttgir_file)
    module.triple = TRIPLE
    module.data_layout = DATA_LAYOUT
    arg_types = [TENSOR_MAP_PTR if is_tensor_map(a) else
                 GLOBAL_PTR if isinstance(a.type, PointerType) else llvm_type(a.type)
                 for a in func_op.body.args]
    if metadata.global_scratch_size:
        arg_types.append(GLOBAL_PTR)    # the launch's global scratch buffer (hidden, last)
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), arg_types), name=name)
    fn.calling_convention = "ptx_kernel"
    fn.attributes.add("nounwind")
    debug = DebugInfo(module, ttgir_file, name, lines.get(func_op, 1))
    fn.set_metadata("dbg", debug.subprogram)

    ctx = LoweringContext(module, fn, num_warps, debug, lines, vw.analyze(func_op),
                          metadata.threads_per_warp, ttgir_file, text)
    ctx.ir_attributes = ttgir_module.attributes     # module-level switches (tt.profile.slots)
    ctx.arch = options.arch
    ctx.tf32_ldmatrix = options.tf32_ldmatrix
    ctx.global_scratch = None
    if metadata.global_scratch_size:
        ctx.global_scratch = fn.args[-1]
        ctx.global_scratch.name = "global_scratch"
        ctx.global_scratch_size = metadata.global_scratch_size
    ctx.plan_local_buffers(func_op)
    for block_arg, llvm_arg, t in zip(func_op.body.args, fn.args, arg_types):
        llvm_arg.name = block_arg.loc.name() or f"arg{block_arg.index}"
        ctx.set(block_arg, [llvm_arg])
    ctx.lower_block(func_op.body)
    if not ctx.builder.block.is_terminated:
        ctx.builder.ret_void()

    annotations = module.add_named_metadata("nvvm.annotations")
    annotations.add(module.add_metadata([fn, "kernel", ir.IntType(32)(1)]))
    maps = [i + 1 for i, a in enumerate(func_op.body.args) if is_tensor_map(a)]
    for index in maps:
        # a CUtensorMap: `.param .align 64 .b8 [128]`, read in place (grid_constant: LLVM
        # takes its generic address with cvta.param instead of copying it to local memory)
        fn.args[index - 1].attributes.add("byval")
        fn.args[index - 1].attributes.align = 64
    if maps:
        annotations.add(module.add_metadata(
            [fn, "grid_constant", module.add_metadata([ir.IntType(32)(i) for i in maps])]))
    # the launcher always uses exactly num_warps * 32 threads: `.reqntid`, as Triton's PTX has
    # (it implies the maximum; ptxas refuses .maxntid beside it)
    annotations.add(module.add_metadata([fn, "reqntidx", ir.IntType(32)(num_warps * 32)]))
    if options.maxnreg is not None:
        # ptxas ignores --maxrregcount for a .reqntid kernel: the cap goes in the PTX (.maxnreg)
        annotations.add(module.add_metadata([fn, "maxnreg", ir.IntType(32)(options.maxnreg)]))

    if not options.fp_fusion:
        _forbid_contraction(module)
    llvm_text = str(module)
    check_llvm_ir(llvm_text, name)
    if options.optimize:
        from .optimize import optimize_llvm
        llvm_text = optimize_llvm(llvm_text)
    op_python = {}
    for op in ttgir_module.walk():
        flc = python_location(op)
        if flc is not None and op in lines:
            op_python[lines[op]] = f"{flc.file}:{flc.line}:{flc.col}"
    return LoweredKernel(name=name, llvm_ir=llvm_text, num_warps=num_warps,
                         shared_bytes=ctx.shared_bytes, threads_per_warp=metadata.threads_per_warp,
                         arg_kinds=[_arg_kind(a) for a in func_op.body.args],
                         ttgir=text, ttgir_file=ttgir_file, op_python=op_python,
                         llvm_module=module)


def check_llvm_ir(llvm_text: str, kernel: str) -> None:
    """Have LLVM parse and verify the lowered module's text; a `LoweringError` (a lowering
    bug, e.g. an intrinsic given the wrong type) when it does not, so malformed IR never reaches
    LLVM's optimizer or code generator, whose failures abort the process. LLVM's parser verifies
    a module with debug info itself and aborts when it is broken, so the check parses a copy of
    the text without it (`without_debug_info`; the module is not printed twice) and `verify()`
    reports problems as exceptions."""
    import llvmlite.binding as llvm
    checked = without_debug_info(llvm_text)
    try:
        llvm.parse_assembly(checked).verify()
    except RuntimeError as err:
        raise LoweringError(f"internal error: the lowering of {kernel} made LLVM IR that LLVM "
                            f"rejects: {str(err).strip()}. This is a compiler bug, not a problem "
                            f"with the kernel; please report it with the kernel's ttgir "
                            f"(TILE_KERNEL_DUMP=1 writes it)", internal=True) from None


#: Debug-info attachments (` !dbg !7` after an instruction's `,` or on a `define`) and the
#: named metadata that roots debug info (the compile unit, the module flags with its version).
_DBG_ATTACHMENT = re.compile(r" !dbg ![0-9]+")
_DEBUG_ROOTS = ("!llvm.dbg.cu ", "!llvm.module.flags ")


def without_debug_info(llvm_text: str) -> str:
    """The lowered module's text with its debug-info attachments and roots taken out (the
    metadata nodes stay, unreferenced): what LLVM parses without verifying debug info. Only our
    own lowering's output, whose debug metadata is all of this shape, is given to it. Written
    with whole-text string operations (it runs on every kernel's unoptimized IR)."""
    text = _DBG_ATTACHMENT.sub("", llvm_text.replace(", !dbg !", " !dbg !"))
    for root in _DEBUG_ROOTS:
        start = text.find("\n" + root)
        while start >= 0:
            end = text.find("\n", start + 1)
            text = text[:start] + (text[end:] if end >= 0 else "\n")
            start = text.find("\n" + root)
    return text


def _forbid_contraction(module: ir.Module) -> None:
    """Drop the `contract` fast-math flag from every instruction, so LLVM and the NVPTX
    backend never fuse an fmul into an fadd (fma): what enable_fp_fusion=False means."""
    for function in module.functions:
        for block in function.blocks:
            for instruction in block.instructions:
                flags = getattr(instruction, "flags", None)
                if flags and "contract" in flags:
                    flags.remove("contract")


def tensor_shape(value: Value) -> tuple:
    """The shape of a value's tensor type (`()` for scalars)."""
    return shape_of(value.type)


def layout_of(value: Value):
    """The layout encoding of a tensor value (None for scalars)."""
    return value.type.encoding if isinstance(value.type, TensorType) else None
