"""The `ub` dialect: `ub.poison`, an undefined value. The front end makes one, as Triton's
does, for the path of a function that falls off its end where another path returns a value
(`frontend.early_return`); files from Triton (its `.source` stage) use them too."""
from __future__ import annotations

from compiler.ir.syntax import AttrsThenType
from compiler.ir.traits import Pure

from .common import define_op, set_counts

PoisonOp = define_op("PoisonOp", "ub.poison", AttrsThenType(), (Pure,),
                     doc="`ub.poison`: a value with no defined contents.")

set_counts([PoisonOp], operands=0, results=1)
