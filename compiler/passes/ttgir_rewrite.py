"""IR surgery the ttgir passes share: retyping values into a layout, inserting and folding
`ttg.convert_layout`, and sweeping away the ops a rewrite left unused."""
from __future__ import annotations

from compiler.dialects.ttg import BlockedEncoding, ConvertLayoutOp, SliceEncoding
from compiler.ir.attributes import DenseAttr
from compiler.ir.core import Module, Operation, Value
from compiler.ir.traits import ConstantLike, LayoutExchange, LayoutLeaf
from compiler.ir.types import TensorType

from .base import PassContext
from .dce import erase_dead_ops


def set_encoding(value: Value, encoding) -> None:
    """Give a tensor value layout `encoding` in place (a splat constant's attribute follows)."""
    if not isinstance(value.type, TensorType):
        return
    value.type = value.type.with_encoding(encoding)
    op = value.owner_op
    if op is not None and op.has_trait(ConstantLike):
        attr = op.attributes["value"]
        if isinstance(attr, DenseAttr):
            op.attributes["value"] = DenseAttr(attr.value, value.type)


def insert_convert(value: Value, encoding, before: Operation, loc=None) -> Value:
    """`ttg.convert_layout` of `value` into `encoding`, placed just before `before`."""
    op = ConvertLayoutOp([value], [value.type.with_encoding(encoding)], {}, None,
                         before.loc if loc is None else loc)
    before.parent.insert_before(before, op)
    return op.result


def insert_convert_after(value: Value, encoding, loc) -> Value:
    """`ttg.convert_layout` of `value` into `encoding`, placed right after its definition (at
    the start of its block for block arguments)."""
    op = ConvertLayoutOp([value], [value.type.with_encoding(encoding)], {}, None, loc)
    owner = value.owner_op
    if owner is not None:
        block = owner.parent
        block.insert(block.ops.index(owner) + 1, op)
    else:
        value.block.insert(0, op)
    return op.result


def relayout_op(op: Operation, operand_encodings: list, result_encodings: list) -> None:
    """Move `op` into new layouts in place: operands whose wanted layout (None: leave it) differs
    are converted in front of it, and each retyped result is converted back to its old layout
    for its current users (fold_converts later removes the pairs that cancel)."""
    for i, enc in enumerate(operand_encodings):
        v = op.operands[i]
        if enc is not None and isinstance(v.type, TensorType) and v.type.encoding != enc:
            op.set_operand(i, insert_convert(v, enc, op))
    for r, enc in zip(op.results, result_encodings):
        if enc is None or not isinstance(r.type, TensorType) or r.type.encoding == enc:
            continue
        old = r.type.encoding
        users = list(r.uses)
        set_encoding(r, enc)
        if users:
            back = insert_convert_after(r, old, op.loc)
            for user, index in users:
                user.set_operand(index, back)


def convert_ops(module: Module) -> list[Operation]:
    """Every `ttg.convert_layout` in the module, in program order."""
    return [op for op in module.walk() if isinstance(op, ConvertLayoutOp)]


def is_layout_leaf(op: Operation) -> bool:
    """A producer that can be rebuilt in any layout from scalars: a splat, a make_range or a
    dense (splat) constant (a scalar constant has no layout to change)."""
    if not op.has_trait(LayoutLeaf):
        return False
    return not op.has_trait(ConstantLike) or isinstance(op.attributes["value"], DenseAttr)


def recreate_in_layout(op: Operation, encoding) -> Value | None:
    """A copy of a layout-free producer (splat, make_range, splat constant) built directly in
    `encoding`, placed right after the original (so it stays where the original was, outside
    any loop the conversion sits in); None if `op` is not such a producer."""
    if not is_layout_leaf(op):
        return None
    clone = op.clone({})
    op.parent.insert(op.parent.ops.index(op) + 1, clone)
    set_encoding(clone.result, encoding)
    return clone.result


def exchange_keeping_threads(op: Operation, src_encoding):
    """The result layout in which reshape/trans `op`, given its operand in `src_encoding`,
    moves no data (every element stays in its thread), or None when there is none."""
    from compiler.analysis.layout_propagation import reshaped_encoding, transposed_encoding
    from compiler.dialects.tt import ReshapeOp, TransOp
    shape = op.operands[0].type.shape
    if isinstance(op, ReshapeOp):
        return reshaped_encoding(src_encoding, shape, op.results[0].type.shape)
    if isinstance(op, TransOp):
        return transposed_encoding(src_encoding, shape, op.attributes["order"].values)
    return None


def same_layout(a, b, shape) -> bool:
    """Whether layouts `a` and `b` place every element of a `shape` tensor in the same
    register of the same thread (a `#ttg.linear` and the blocked layout it spells, say)."""
    if a == b:
        return True
    from compiler.analysis.layout_to_linear import to_linear_layout
    try:
        return to_linear_layout(a, tuple(shape)) == to_linear_layout(b, tuple(shape))
    except Exception:           # a layout without a linear form: only equal ones are the same
        return False


def _moves_data(op: Operation) -> bool:
    """Whether reshape/trans `op` moves elements between threads in its current layouts."""
    kept = exchange_keeping_threads(op, op.operands[0].type.encoding)
    result = op.results[0].type
    return kept is None or not same_layout(kept, result.encoding, result.shape)


def _push_through_exchange(conv: Operation) -> bool:
    """A conversion whose one user is a reshape/trans goes after it: the reshape/trans takes
    the conversion's source and keeps every element in its thread, and one conversion to its
    old result layout follows, where it may merge with the next one (a chain of reshapes and
    transposes then moves its data once, at its end, as Triton's does)."""
    users = conv.results[0].users()
    if len(users) != 1 or not users[0].has_trait(LayoutExchange) or \
            len(conv.results[0].uses) != 1:
        return False
    exchange = users[0]
    source = conv.operands[0]
    kept = exchange_keeping_threads(exchange, source.type.encoding)
    if kept is None:
        return False
    result = exchange.results[0]
    old = result.type.encoding
    if same_layout(kept, old, result.type.shape):
        kept = old                  # the same threads hold the same elements: keep its name
    uses = list(result.uses)
    exchange.set_operand(0, source)
    set_encoding(result, kept)
    if uses and kept != old:
        back = insert_convert_after(result, old, exchange.loc)
        for user, index in uses:
            user.set_operand(index, back)
    conv.erase()
    return True


def _feeds_only_exchanges(conv: Operation) -> bool:
    """Whether every user of conversion `conv` is a reshape/trans and its source is in a plain
    distributed (blocked or slice) layout, so the users can take the source directly."""
    users = [user for user, _ in conv.results[0].uses]
    source = conv.operands[0].type.encoding
    # a reshape/trans moves every element through shared memory from any distributed operand
    # layout into its result layout (compiler/codegen/lower_shape.py): a conversion in front
    # of it is a second, useless round trip
    return bool(users) and all(u.has_trait(LayoutExchange) for u in users) and \
        isinstance(source, (BlockedEncoding, SliceEncoding))


def fold_converts(module: Module, ctx: PassContext) -> bool:
    """Canonicalize conversions: drop no-op ones, collapse chains, fold those feeding only
    reshapes/transposes or fed by one (which move data through shared memory from any layout
    into any layout anyway) into them, and rebuild splats, make_ranges and splat constants directly in the wanted layout. Returns whether any fired."""
    changed = False
    for op in convert_ops(module):
        if op.parent is None:
            continue
        src = op.operands[0]
        dst_type = op.results[0].type
        if src.type == dst_type:
            op.replace_with([src])
            ctx.record_pattern("fold identity convert_layout")
            changed = True
            continue
        if len(src.uses) == 1 and src.owner_op is not None and \
                src.owner_op.has_trait(LayoutExchange) and \
                same_layout(src.type.encoding, dst_type.encoding, dst_type.shape):
            set_encoding(src, dst_type.encoding)    # the same layout under another name
            op.replace_with([src])
            ctx.record_pattern("fold convert_layout between two names of one layout")
            changed = True
            continue
        producer = src.owner_op
        if isinstance(producer, ConvertLayoutOp):
            inner = producer.operands[0]
            if inner.type == dst_type:
                op.replace_with([inner])
            else:
                op.set_operand(0, inner)
            ctx.record_pattern("fold convert_layout chain")
            changed = True
            continue
        if _push_through_exchange(op):
            ctx.record_pattern("move convert_layout after the reshape/trans (which then keeps "
                               "every element in its thread)")
            changed = True
            continue
        if _feeds_only_exchanges(op):
            op.replace_with([src])
            ctx.record_pattern("fold convert_layout into the reshape/trans that moves its data")
            changed = True
            continue
        if producer is not None and producer.has_trait(LayoutExchange) and len(src.uses) == 1 \
                and isinstance(dst_type.encoding, (BlockedEncoding, SliceEncoding)) \
                and _moves_data(producer):
            set_encoding(src, dst_type.encoding)
            op.replace_with([src])
            ctx.record_pattern("absorb convert_layout into the reshape/trans that makes its value")
            changed = True
            continue
        if producer is not None:
            new = recreate_in_layout(producer, dst_type.encoding)
            if new is not None:
                op.replace_with([new])
                ctx.record_pattern(f"rematerialize {producer.name} in the target layout")
                changed = True
    if changed:
        erase_dead_ops(module, ctx)
    return changed
