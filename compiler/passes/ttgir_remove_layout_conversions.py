"""remove-layout-conversions: spread good layouts and delete the conversions they make useless."""
from __future__ import annotations

from compiler.analysis.conversion import tensor_plan
from compiler.analysis.layout_to_linear import LayoutConversionError
from compiler.analysis.layouts import elements_per_thread
from compiler.analysis.layout_propagation import (is_elementwise, operand_encoding, order_of,
                                                  result_encoding, size_per_thread_of)
from compiler.dialects.scf import ForOp, IfOp, YieldOp
from compiler.dialects.ttng import WarpGroupDotWaitOp
from compiler.dialects.tt import (BroadcastOp, ExpandDimsOp, LoadOp, ReduceOp, ScanOp, StoreOp,
                                  TransOp)
from compiler.dialects.ttg import (BlockedEncoding, ConvertLayoutOp, NvidiaMmaEncoding,
                                   SliceEncoding)
from compiler.ir.core import Module, Operation, Value
from compiler.ir.traits import (HasCombineRegion, LayoutAnchor, LayoutBarrier, LayoutExchange,
                                LayoutLeaf, LoopLike)
from compiler.ir.types import TensorType
from compiler.metadata import KernelMetadata

from .cse import CSE
from .base import Pass, PassContext, register_pass
from .requirements import SHARED_ALLOCATED, TTGIR
from .dce import erase_dead_ops
from .ir_utils import defined_outside
from .ttgir_rewrite import (fold_converts, insert_convert, insert_convert_after, is_layout_leaf,
                            relayout_op, set_encoding)

# Forward propagation starts at the results of LayoutAnchor ops and never enters LayoutBarrier
# ops (they fix their own layout, or cross region boundaries); see compiler/ir/traits.py.
CONVERT_WEIGHT = 4          # a conversion through shared memory: a store, a barrier, a load
INFINITE = float("inf")


def _is_distributed_target(encoding) -> bool:
    """Layouts that values may be moved into freely (not dot operands or tensor-core results)."""
    return isinstance(encoding, (BlockedEncoding, SliceEncoding))


def _is_rebuild_target(encoding) -> bool:
    """Layouts a producer chain may be rebuilt in: the distributed ones and a tensor-core
    accumulator layout (a mask or scale computed next to attention's q.k^T, say; Triton
    rematerializes into #mma too). Dot-operand layouts are left to their conversions."""
    return _is_distributed_target(encoding) or isinstance(encoding, NvidiaMmaEncoding)


def _spread(encoding) -> int:
    """How many elements a thread holds contiguously (bigger means wider accesses)."""
    n = 1
    for s in size_per_thread_of(encoding):
        n *= s
    return n


class _Cost:
    """The cost model: work per thread, counted in elements."""

    def __init__(self, num_threads: int):
        self.num_threads = num_threads

    def per_thread(self, t) -> float:
        """Elements of a value each thread holds (at least 1)."""
        return max(t.numel / self.num_threads, 1) if isinstance(t, TensorType) else 1

    def convert(self, value_type) -> float:
        """What converting a value of this type through shared memory costs."""
        return self.per_thread(value_type) * CONVERT_WEIGHT

    def planned_convert(self, value_type, source_encoding) -> float:
        """What a conversion from `source_encoding` into `value_type` costs by the plan the
        lowering will use (compiler.analysis.conversion): nothing for a no-op or a register
        renumbering, one unit per shuffle, `convert` through shared memory."""
        try:
            plan = tensor_plan(value_type.with_encoding(source_encoding), value_type)
        except (LayoutConversionError, ValueError):
            return self.convert(value_type)
        return self.convert(value_type) if plan.strategy == "shared" else plan.cost


@register_pass
class RemoveLayoutConversions(Pass):
    """Deletes ttg.convert_layout ops by rewriting the code around them into one layout, as
    Triton does: (1) forward propagation pushes the layouts of anchors (loads, dots, atomics)
    through the layout-agnostic ops that use them (elementwise, broadcast, expand_dims,
    reduce, trans, other conversions) and through scf.yield into the results of scf.if and
    scf.for (and the loop's carried arguments); (2) backward rematerialization rebuilds the chain that
    produces a converted value (elementwise ops, splat, make_range, constants, broadcast,
    expand_dims, addptr, and loads when the new layout is no worse) directly in the wanted
    layout when the cost model says that is cheaper than the conversion (a load is only ever
    moved, never duplicated), or else rebuilds it down to the broadcasts and converts their
    smaller operands; (3) values carried by loops and ifs that every region yields
    converted from one layout, or that are only ever converted to one layout, are carried in
    it (an if's branches then keep the dot's layout, as Triton rewrites the if's types); (4) conversions of loop-invariant values move out of
    their loops; (5) a store whose value arrives through a conversion that cannot be removed
    moves into the value's layout instead, when that layout runs along the same contiguous dim
    at least as wide and the store's pointers and mask are cheap to rebuild in it (stores mask
    duplicated elements, and a wider store beats a round trip through shared memory).
    Conversions into
    #ttg.dot_op or tensor-core layouts, which a dot needs, are never removed."""

    name = "remove-layout-conversions"
    stage = "ttgir"
    requires = TTGIR
    invalidates = (SHARED_ALLOCATED,)

    def run(self, module: Module, ctx: PassContext) -> None:
        facts = KernelMetadata.from_ttgir(module, reader=self.name)
        self.cost = _Cost(facts.num_warps * facts.threads_per_warp)
        self.ctx = ctx
        self.carried_done: set = set()
        self.yield_carried: list = []       # results carried in their yielded layout
        fold_converts(module, ctx)
        for _ in range(6):
            changed = False
            for func in module.functions():
                changed |= self._forward(func)
                fold_converts(module, ctx)
                changed |= self._backward(func)
                fold_converts(module, ctx)
                changed |= self._loop_carried(func)
                fold_converts(module, ctx)
                changed |= self._hoist_invariant(func)
                changed |= self._sink_into_stores(func)
                fold_converts(module, ctx)
            erase_dead_ops(module, ctx)
            if not changed:
                break
        CSE().run(module, ctx)      # rematerialization may build the same value twice

    # ---- (1) forward propagation ------------------------------------------------------------
    def _forward(self, func: Operation) -> bool:
        candidates: dict[Value, list] = {}
        sinks: dict[Operation, list] = {}       # reductions to scalars: any operand layout
        work = [(r, r.type.encoding) for op in func.walk() if op.has_trait(LayoutAnchor)
                for r in op.results if isinstance(r.type, TensorType)]
        # a tensor-core accumulator carried out of a loop is an anchor too (its epilogue, e.g.
        # the downcast before the store, then runs in the mma layout, as in Triton)
        work += [(r, r.type.encoding) for op in func.walk() if isinstance(op, (ForOp, IfOp))
                 for r in op.results
                 if isinstance(r.type, TensorType) and isinstance(r.type.encoding,
                                                                  NvidiaMmaEncoding)]
        # so is the result of a warp-group dot's wait (the wait passes the dot's accumulator
        # through unchanged): the softmax of attention then runs in the mma layout
        work += [(r, r.type.encoding) for op in func.walk() if isinstance(op, WarpGroupDotWaitOp)
                 for r in op.results
                 if isinstance(r.type, TensorType) and isinstance(r.type.encoding,
                                                                  NvidiaMmaEncoding)]
        # and so is a result carried in the layout its regions yield it from (section 3): the
        # code after an scf.if then continues in the branches' layout
        work += [(r, r.type.encoding) for r in self.yield_carried if r.owner_op.parent is not None]
        visited = set(work)
        while work:
            value, enc = work.pop()
            for user in value.users():
                if isinstance(user, YieldOp):
                    for carried in _carried_by_yield(user, value, enc):
                        if (carried, enc) not in visited:
                            visited.add((carried, enc))
                            work.append((carried, enc))
                            if carried.type.encoding != enc:
                                candidates.setdefault(carried, []).append(enc)
                    continue
                if user.has_trait(LayoutBarrier) or user.has_trait(LayoutExchange):
                    continue            # (a reshape/trans result may take any layout)
                if user.has_trait(HasCombineRegion) and not any(
                        isinstance(r.type, TensorType) for r in user.results):
                    if enc not in sinks.setdefault(user, []):
                        sinks[user].append(enc)
                    continue
                if isinstance(user, ConvertLayoutOp):
                    if not self._worth_following(user):
                        continue
                    new = enc
                else:
                    new = result_encoding(user, enc)
                if new is None:
                    continue
                for r in user.results:
                    if not isinstance(r.type, TensorType) or (r, new) in visited:
                        continue
                    visited.add((r, new))
                    work.append((r, new))       # already in the layout: keep going through
                    if r.type.encoding != new:
                        candidates.setdefault(r, []).append(new)
        if not candidates and not sinks:
            return False
        changed = False
        for op, options in sinks.items():
            wanted = self._choose(options)
            if all(v.type.encoding == wanted for v in op.operands):
                continue
            relayout_op(op, [wanted] * len(op.operands), [None] * len(op.results))
            self.ctx.record_pattern(f"forward-propagate layout into {op.name}")
            changed = True
        for op in list(func.walk()):
            chosen = [self._choose(candidates.get(r)) for r in op.results]
            if not any(c is not None for c in chosen):
                continue
            if isinstance(op, (ForOp, IfOp)):
                for i, wanted in enumerate(chosen):
                    if wanted is not None and op.results[i].type.encoding != wanted:
                        self._retype_carried(op, i, wanted)
                        self.ctx.record_pattern(f"forward-propagate layout through {op.name}")
                        changed = True
                continue
            wanted = chosen[0] if len(set(chosen)) == 1 else None
            if wanted is None:
                continue
            needs = (operand_encoding(op, wanted) if not isinstance(op, ConvertLayoutOp)
                     else op.src.type.encoding)
            if needs is None:
                continue
            tensor_operands = [needs if isinstance(v.type, TensorType) else None
                               for v in op.operands]
            relayout_op(op, tensor_operands, chosen)
            self.ctx.record_pattern(f"forward-propagate layout into {op.name}")
            changed = True
        return changed

    @staticmethod
    def _worth_following(conv: Operation) -> bool:
        """Pushing a layout through a conversion only helps when the converted value feeds ops
        that can take the layout too (not just stores, dots or other fixed-layout users)."""
        if not _is_distributed_target(conv.results[0].type.encoding):
            return False
        return any(not user.has_trait(LayoutBarrier) and not isinstance(user, ConvertLayoutOp)
                   for user in conv.results[0].users())

    @staticmethod
    def _choose(options: list | None):
        """Among conflicting propagated layouts, the one giving each thread the most elements
        contiguously (first seen on ties)."""
        if not options:
            return None
        return max(options, key=_spread)

    # ---- (2) backward rematerialization -----------------------------------------------------
    def _backward(self, func: Operation) -> bool:
        changed = False
        made: dict = {}
        for conv in [op for op in func.walk() if isinstance(op, ConvertLayoutOp)]:
            if conv.parent is None:
                continue
            target = conv.results[0].type.encoding
            src = conv.operands[0]
            limit = self.cost.convert(conv.results[0].type)
            priced = False
            for cut, pattern in ((False, "rematerialize backward"),
                                 (True, "rematerialize backward to a broadcast's operand")):
                plan = _Plan()
                if not self._plan(src, target, plan, made, cut):
                    continue
                priced = True
                if self._plan_cost(plan, conv) >= limit:
                    continue
                new = self._apply(plan, made, src, target)
                conv.replace_with([new])
                self.ctx.record_pattern(pattern)
                changed = True
                break
            else:
                if priced:
                    self.ctx.record_pattern("keep convert_layout (rematerialization costs more)")
        return changed

    def _plan(self, value: Value, enc, plan: "_Plan", made: dict, cut: bool = False) -> bool:
        """Add to `plan` (in dependency order) what rebuilding `value` in layout `enc` takes;
        False when it cannot be done. With `cut`, the plan stops at broadcasts and converts
        their operand instead (Triton hoists a conversion above a broadcast the same way): a
        row of attention's M broadcast over a 128x16 tile moves as 128 elements, not 2048, and
        the broadcast in the tile's layout holds each row's value once, not in 16 registers
        (tutorial 06's backward shares that row between two loops, so its load cannot move)."""
        if value.type.encoding == enc or (value, enc) in made or (value, enc) in plan.steps:
            return True
        op = value.owner_op
        if op is None:
            return False
        if op.has_trait(LayoutLeaf):
            return is_layout_leaf(op) and plan.add(value, enc, "leaf")
        if not _is_rebuild_target(enc):
            return False        # only free producers are rebuilt in dot-operand layouts
        if isinstance(op, ConvertLayoutOp):
            mark = plan.checkpoint()
            if self._plan(op.operands[0], enc, plan, made):
                return plan.add(value, enc, "through")
            plan.rollback(mark)
            return plan.add(value, enc, "reconvert")
        if isinstance(op, LoadOp):
            if not self._load_movable(op, value, enc):
                return False
        elif isinstance(op, ReduceOp):
            if any(len(r.uses) > 1 for r in op.results):
                return False
        elif not (is_elementwise(op) or isinstance(op, (BroadcastOp, ExpandDimsOp, TransOp,
                                                         ScanOp))):
            return False
        needs = operand_encoding(op, enc)
        if needs is None or not _is_rebuild_target(needs):
            return False
        for v in op.operands:
            if not isinstance(v.type, TensorType):
                continue
            if cut and isinstance(op, BroadcastOp):
                if v.type.encoding != needs:
                    plan.add(v, needs, "convert")
            elif not self._plan(v, needs, plan, made, cut):
                return False
        return plan.add(value, enc, "clone")

    def _load_movable(self, op: Operation, value: Value, enc) -> bool:
        """A load may be moved (never duplicated) into a layout that is no worse: no narrower
        along the fastest dim and holding no more copies of each element (Triton also lets
        loads of fewer elements than threads move freely)."""
        if len(value.uses) != 1:
            return False
        old = value.type.encoding
        try:
            if order_of(enc)[0] != order_of(old)[0]:
                return False
            dim = order_of(old)[0]
            if size_per_thread_of(enc)[dim] < size_per_thread_of(old)[dim]:
                return False
            shape = value.type.shape
            if value.type.numel <= self.cost.num_threads:
                return True
            return elements_per_thread(enc, shape) <= elements_per_thread(old, shape)
        except (TypeError, NotImplementedError):
            return False

    def _plan_cost(self, plan: "_Plan", consumer: Operation) -> float:
        """Extra work the plan adds when `consumer` switches to the rebuilt value: ops that stay
        alive for other users are duplicated, and conversions kept further up still cost a
        conversion. A load or reduction that would stay alive (or be built twice) makes the
        plan infinitely expensive: those are never duplicated."""
        dying = self._dying_ops(plan, consumer)
        built: dict = {}
        cost = 0.0
        for (value, enc), kind in plan.steps.items():
            op = value.owner_op
            if kind == "reconvert":
                # a conversion that dies with the plan is replaced by the new one, not added
                if op.operands[0].type.encoding != enc and op not in dying:
                    cost += self.cost.planned_convert(value.type.with_encoding(enc),
                                                      op.operands[0].type.encoding)
                continue
            if kind == "convert":
                cost += self.cost.planned_convert(value.type.with_encoding(enc),
                                                  value.type.encoding)
                continue
            if kind in ("leaf", "through"):
                continue
            built[op] = built.get(op, 0) + 1
            if isinstance(op, (LoadOp, ReduceOp)) and (op not in dying or built[op] > 1):
                return INFINITE
            if op not in dying and not isinstance(op, (BroadcastOp, ExpandDimsOp)):
                cost += self.cost.per_thread(value.type)
        return cost

    @staticmethod
    def _dying_ops(plan: "_Plan", consumer: Operation) -> set:
        """The original ops the plan rebuilds (or looks through) that have no user left once
        `consumer` takes the rebuilt value: every user of their results is `consumer` or
        another dying op. Decided consumers first (the plan lists producers first)."""
        dying: set = set()
        for value, _enc in reversed(plan.order):
            op = value.owner_op
            if plan.steps[(value, _enc)] not in ("clone", "through", "reconvert") or op in dying:
                continue
            if all(user is consumer or user in dying
                   for r in op.results for user, _ in r.uses):
                dying.add(op)
        return dying

    def _apply(self, plan: "_Plan", made: dict, root: Value, target) -> Value:
        for (value, enc), kind in plan.steps.items():
            op = value.owner_op
            if kind == "through":
                made[(value, enc)] = self._get(op.operands[0], enc, made)
                continue
            if kind == "reconvert":
                made[(value, enc)] = insert_convert_after(op.operands[0], enc, op.loc) \
                    if op.operands[0].type.encoding != enc else op.operands[0]
                continue
            if kind == "convert":
                made[(value, enc)] = insert_convert_after(value, enc, root.owner_op.loc)
                continue
            needs = operand_encoding(op, enc) if kind == "clone" else None
            mapping = {v: self._get(v, needs, made) for v in op.operands
                       if kind == "clone" and isinstance(v.type, TensorType)}
            clone = op.clone(mapping)
            op.parent.insert(op.parent.ops.index(op) + 1, clone)
            for old_r, new_r in zip(op.results, clone.results):
                set_encoding(new_r, enc)
                made[(old_r, enc)] = new_r
        return self._get(root, target, made)

    @staticmethod
    def _get(value: Value, enc, made: dict) -> Value:
        if value.type.encoding == enc:
            return value
        return made[(value, enc)]

    # ---- (3) values carried by loops and ifs -------------------------------------------------
    def _loop_carried(self, func: Operation) -> bool:
        changed = False
        for op in [o for o in func.walk() if isinstance(o, (ForOp, IfOp))]:
            for i, result in enumerate(op.results):
                if not isinstance(result.type, TensorType) or (op, i) in self.carried_done:
                    continue
                # a loop is judged by its body's uses (they run every iteration)
                # the layout every region yields it converted from wins (the conversions
                # then leave the branches or the loop body); else the one its users convert to
                targets, how = _yielded_sources(op, i), "yielded"
                if len(targets) != 1:
                    watched = op.iter_args[i] if isinstance(op, ForOp) else result
                    targets = {u.results[0].type.encoding for u in watched.users()
                               if isinstance(u, ConvertLayoutOp)}
                    how = "converted"
                if len(targets) != 1:
                    continue
                target = targets.pop()
                # a tensor-core accumulator is carried in its mma layout, as Triton does
                if not (_is_distributed_target(target) or isinstance(target, NvidiaMmaEncoding)):
                    continue
                self._retype_carried(op, i, target)
                self.carried_done.add((op, i))
                if how == "yielded":
                    self.yield_carried.append(result)
                self.ctx.record_pattern(f"carry {op.name} value in its {how} layout")
                changed = True
        return changed

    @staticmethod
    def _retype_carried(op: Operation, i: int, target) -> None:
        """Carry result `i` of an scf.for / scf.if (and the loop's matching block argument) in
        `target`: values flowing in are converted to it, users that still want the old layout
        get a conversion back; the conversions that cancel are folded afterwards."""
        old = op.results[i].type.encoding
        values = [op.results[i]]
        if isinstance(op, ForOp):
            values.append(op.regions[0].blocks[0].args[1 + i])
            op.set_operand(3 + i, insert_convert(op.operands[3 + i], target, op))
        for value in values:
            users = list(value.uses)
            value.type = value.type.with_encoding(target)
            if users:
                back = insert_convert_after(value, old, op.loc)
                for user, index in users:
                    user.set_operand(index, back)
        for region in op.regions:
            yield_op = region.blocks[0].terminator
            yield_op.set_operand(i, insert_convert(yield_op.operands[i], target, yield_op))

    # ---- (5) stores take their value's layout -------------------------------------------------
    def _sink_into_stores(self, func: Operation) -> bool:
        """Move each store fed by an irremovable conversion into the conversion's source
        layout when that is no worse for the store and cheap for its pointers and mask."""
        changed = False
        for store in [op for op in func.walk() if isinstance(op, StoreOp)]:
            conv = store.value.owner_op
            if not isinstance(conv, ConvertLayoutOp):
                continue
            source = conv.operands[0].type.encoding
            if not _no_worse_store_layout(source, store.operands[1].type.encoding):
                continue
            others = [v for i, v in enumerate(store.operands)
                      if i != 1 and isinstance(v.type, TensorType)]
            plan, made = _Plan(), {}
            if not all(self._plan(v, source, plan, made) for v in others):
                continue
            if self._plan_cost(plan, store) >= self.cost.convert(conv.results[0].type):
                self.ctx.record_pattern("keep convert_layout into tt.store")
                continue
            if plan.steps:
                self._apply(plan, made, others[0], source)
            for i, v in enumerate(store.operands):
                if i == 1:
                    store.set_operand(1, conv.operands[0])
                elif isinstance(v.type, TensorType):
                    store.set_operand(i, self._get(v, source, made))
            self.ctx.record_pattern("move tt.store into its value's layout")
            changed = True
        return changed

    # ---- (4) loop-invariant conversions --------------------------------------------------------
    def _hoist_invariant(self, func: Operation) -> bool:
        """A conversion inside a loop of a value defined outside it gives the same result every
        iteration: do it once, before the loop."""
        changed = False
        for conv in [op for op in func.walk() if isinstance(op, ConvertLayoutOp)]:
            moved = False
            loop = conv.parent_op
            while loop is not None and loop.has_trait(LoopLike) and \
                    defined_outside(conv.operands[0], loop):
                conv.move_before(loop)
                moved = True
                loop = conv.parent_op
            if moved:
                self.ctx.record_pattern("hoist loop-invariant convert_layout")
                changed = True
        return changed


def _yielded_sources(op: Operation, i: int) -> set:
    """The layouts that every region of `op` (an scf.if's branches, an scf.for's body) yields
    result `i` converted from: {S} when each yield's operand is a `ttg.convert_layout` out of
    S, else empty. Carrying the result in S then drops the conversion from every branch (or
    from every iteration) and leaves at most one after `op` (or per iteration at the carried
    value's users), which forward propagation may remove in turn; never more work than
    before. This is how attention's softmax, written under a runtime `if` in its K loop,
    keeps the dot's #mma layout through the if (Triton rewrites the if's result types too)."""
    sources = set()
    for region in op.regions:
        produced = region.blocks[0].terminator.operands[i]
        conv = produced.owner_op
        if not isinstance(conv, ConvertLayoutOp):
            return set()
        sources.add(conv.operands[0].type.encoding)
    return sources


def _carried_by_yield(yield_op: Operation, value: Value, enc) -> list:
    """The values a layout `enc` reaching `value` flows into through `yield_op`: the results
    of the scf.if or scf.for it ends (and the loop's block arguments, which take the yielded
    value on the next iteration), as Triton's propagation follows yields. Only values now in
    a distributed layout are retargeted, and only into a distributed or tensor-core layout
    (an accumulator carried in #mma keeps it)."""
    parent = yield_op.parent_op
    if not isinstance(parent, (ForOp, IfOp)) or not (
            _is_distributed_target(enc) or isinstance(enc, NvidiaMmaEncoding)):
        return []
    carried = []
    for i, operand in enumerate(yield_op.operands):
        if operand is not value or not _is_distributed_target(parent.results[i].type.encoding):
            continue
        carried.append(parent.results[i])
        if isinstance(parent, ForOp):
            carried.append(parent.iter_args[i])
    return carried


def _no_worse_store_layout(new, old) -> bool:
    """Whether a store may use layout `new` instead of `old`: both distributed, of one rank,
    contiguous along the same dim and no narrower there (so no access gets narrower)."""
    if not (_is_distributed_target(new) and _is_distributed_target(old)) or \
            new.rank != old.rank:
        return False
    try:
        dim = order_of(old)[0]
        return order_of(new)[0] == dim and \
            size_per_thread_of(new)[dim] >= size_per_thread_of(old)[dim]
    except (TypeError, NotImplementedError):
        return False


class _Plan:
    """An ordered set of (value, layout) -> how to make it: 'leaf' (rebuild a splat, range or
    constant), 'clone' (rebuild the op from rebuilt operands), 'through' (look through a
    conversion), 'reconvert' (convert the conversion's source instead), 'convert' (convert
    the value itself: a broadcast's operand, where the plan is cut)."""

    def __init__(self):
        self.steps: dict = {}
        self.order: list = []

    def add(self, value: Value, enc, kind: str) -> bool:
        """Record how to make `value` in `enc` (once); always True, for chaining."""
        key = (value, enc)
        if key not in self.steps:
            self.steps[key] = kind
            self.order.append(key)
        return True

    def checkpoint(self) -> int:
        """A mark to roll back to if a tentative branch of the plan fails."""
        return len(self.order)

    def rollback(self, mark: int) -> None:
        """Forget every step added since `mark`."""
        for key in self.order[mark:]:
            del self.steps[key]
        del self.order[mark:]
