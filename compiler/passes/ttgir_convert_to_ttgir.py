"""convert-triton-to-tritongpu: give every tensor a layout (ttir -> ttgir)."""
from __future__ import annotations

import re

from compiler.dialects.scf import ConditionOp, ForOp, IfOp, YieldOp
from compiler.dialects.tt import (BroadcastOp, DotOp, ExpandDimsOp, ReduceOp, ReshapeOp, ScanOp,
                                  TransOp)
from compiler.dialects.ttg import DotOperandEncoding, SliceEncoding
from compiler.ir.attributes import StringAttr, int_attr
from compiler.ir.core import Block, Module, Operation
from compiler.ir.traits import HasCombineRegion
from compiler.ir.types import TensorType

from compiler.analysis.layout_propagation import (default_blocked, encoding_of, permute_blocked,
                                                  reshaped_encoding, transposed_encoding)

from .base import Option, Pass, PassContext, register_pass
from .requirements import LAYOUTS, NUM_WARPS, SHARED_ALLOCATED
from .ttgir_rewrite import insert_convert, same_layout, set_encoding


@register_pass
class ConvertTritonToTritonGPU(Pass):
    """Assigns every tensor Triton's default blocked layout for its shape (one element per
    thread per tile, lanes and warps spread over the last dim first). Reductions give slices of
    their operand's layout, expand_dims takes a slice of its result's, broadcast, trans and
    reshape keep their operand's threads (no data moves), and tt.dot operands get #ttg.dot_op layouts of the accumulator's;
    a ttg.convert_layout goes wherever an operand arrives in another layout. Later passes
    (coalesce, remove-layout-conversions) choose better layouts and delete the conversions."""

    name = "convert-triton-to-tritongpu"
    stage = "ttgir"
    establishes = (LAYOUTS, NUM_WARPS)
    invalidates = (SHARED_ALLOCATED,)
    options_spec = (
        Option("num-warps", int, 4, "warps per CTA", check=lambda v: v in (1, 2, 4, 8, 16, 32),
               allowed="a power of two from 1 to 32", from_compile="num_warps"),
        Option("threads-per-warp", int, 32, "lanes per warp", check=lambda v: v == 32,
               allowed="32 (NVIDIA warps have 32 threads)", from_compile="warp_size"),
        Option("num-ctas", int, 1, "CTAs per cluster (only 1 is supported)",
               check=lambda v: v == 1, allowed="1 (thread-block clusters are not supported yet)",
               from_compile="num_ctas"),
        Option("target", str, "cuda:90", "target string recorded on the module",
               check=lambda v: bool(re.fullmatch(r"cuda:\d+", v)),
               allowed="'cuda:<compute capability>', e.g. cuda:90", from_compile="target"),
    )

    def run(self, module: Module, ctx: PassContext) -> None:
        self.num_warps = self.options["num-warps"]
        self.threads = self.options["threads-per-warp"]
        module.attributes["ttg.num-ctas"] = int_attr(1)
        module.attributes["ttg.num-warps"] = int_attr(self.num_warps)
        module.attributes["ttg.target"] = StringAttr(self.options["target"])
        module.attributes["ttg.threads-per-warp"] = int_attr(self.threads)
        self.ctx = ctx
        for func in module.functions():
            for arg in func.regions[0].blocks[0].args:
                self._assign_default(arg)
            self._convert_block(func.regions[0].blocks[0])

    # ---- layouts ------------------------------------------------------------------------------
    def _default(self, shape: tuple):
        return default_blocked(tuple(shape), self.num_warps, self.threads)

    def _assign_default(self, value) -> None:
        if isinstance(value.type, TensorType):
            set_encoding(value, self._default(value.type.shape))

    def _require(self, op: Operation, index: int, encoding) -> None:
        """Make operand `index` of `op` arrive in `encoding`, converting it if it does not."""
        value = op.operands[index]
        if not isinstance(value.type, TensorType) or value.type.encoding == encoding:
            return
        op.set_operand(index, insert_convert(value, encoding, op))
        self.ctx.record_pattern(f"convert operand of {op.name}")

    def _require_default(self, op: Operation) -> None:
        """Every tensor operand arrives in the default layout of its shape."""
        for i, v in enumerate(op.operands):
            if isinstance(v.type, TensorType):
                self._require(op, i, self._default(v.type.shape))

    # ---- walking ------------------------------------------------------------------------------
    def _convert_block(self, block: Block) -> None:
        for op in list(block.ops):
            self._convert_op(op)

    def _convert_op(self, op: Operation) -> None:
        if isinstance(op, ReduceOp):
            self._convert_reduce(op)
        elif isinstance(op, ExpandDimsOp):
            result = op.results[0]
            self._assign_default(result)
            self._require(op, 0, SliceEncoding(op.axis, result.type.encoding))
        elif isinstance(op, (BroadcastOp, ScanOp)):
            self._require_same_as_first(op)
            for r in op.results:
                set_encoding(r, encoding_of(op.operands[0]))
        elif isinstance(op, TransOp):
            self._convert_trans(op)
        elif isinstance(op, ReshapeOp):
            self._convert_reshape(op)
        elif isinstance(op, DotOp):
            self._convert_dot(op)
        elif isinstance(op, YieldOp):
            self._convert_yield(op)
        elif isinstance(op, ConditionOp):
            self._require_default(op)
        else:
            self._require_default(op)
            for r in op.results:
                self._assign_default(r)
        if any(isinstance(r.type, TensorType) for r in op.results):
            self.ctx.record_pattern(f"assign layout to {op.name}")
        if op.has_trait(HasCombineRegion):
            return  # combine regions hold scalars only
        for region in op.regions:
            for block in region.blocks:
                for arg in block.args:
                    self._assign_default(arg)
                self._convert_block(block)

    def _convert_trans(self, op: Operation) -> None:
        """trans keeps its operand's threads: the result is the operand's layout permuted."""
        result = transposed_encoding(encoding_of(op.src), op.src.type.shape, op.order)
        if result is None:
            self._require_default(op)
            result = permute_blocked(encoding_of(op.src), op.order)
        set_encoding(op.results[0], result)

    def _convert_reshape(self, op: Operation) -> None:
        """A reshape keeps every element in its thread, as Triton infers it: the result's layout
        is the operand's seen over the new shape (`#ttg.linear`), so the reshape moves no data
        and a later conversion (where a user needs another layout) does it, once."""
        result = reshaped_encoding(encoding_of(op.src), op.src.type.shape,
                                   op.results[0].type.shape)
        if result is None:
            self._require_default(op)
            self._assign_default(op.results[0])
            return
        default = self._default(op.results[0].type.shape)
        if same_layout(result, default, op.results[0].type.shape):
            result = default            # the default blocked layout under its own name
        set_encoding(op.results[0], result)

    def _require_same_as_first(self, op: Operation) -> None:
        """Operands after the first (a multi-operand scan's) follow the first one's layout."""
        for i in range(1, len(op.operands)):
            self._require(op, i, encoding_of(op.operands[0]))

    def _convert_reduce(self, op: Operation) -> None:
        axis = op.axis
        self._require_default(op)
        parent = encoding_of(op.operands[0])
        for r in op.results:
            if isinstance(r.type, TensorType):
                set_encoding(r, SliceEncoding(axis, parent))

    def _convert_dot(self, op: Operation) -> None:
        result = op.results[0]
        self._assign_default(result)
        parent = result.type.encoding
        self._require(op, 0, DotOperandEncoding(0, parent))
        self._require(op, 1, DotOperandEncoding(1, parent))
        self._require(op, 2, parent)

    def _convert_yield(self, op: Operation) -> None:
        owner = op.parent.parent_op
        if isinstance(owner, (ForOp, IfOp)):
            for i, r in enumerate(owner.results):
                self._require(op, i, encoding_of(r))
        else:
            self._require_default(op)
