"""The `ub` dialect: `ub.poison`, an undefined value (Triton's front end makes them for
variables of a function that returns early); no pass of ours makes one, but files from Triton
(its `.source` stage) use it."""
from __future__ import annotations

from compiler.ir.syntax import AttrsThenType
from compiler.ir.traits import Pure

from .common import define_op, set_counts

PoisonOp = define_op("PoisonOp", "ub.poison", AttrsThenType(), (Pure,),
                     doc="`ub.poison`: a value with no defined contents.")

set_counts([PoisonOp], operands=0, results=1)
