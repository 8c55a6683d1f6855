"""A small MLIR-like IR: types, attributes, locations, ops/blocks/regions, the dialect context,
printer, parser, verifier and builder. It names no dialect: the dialects (`compiler.dialects`)
define the concrete ops and types on top of it and register them into a `Context`."""
from .attributes import (ArrayAttr, Attribute, BoolAttr, DenseArrayAttr, DenseAttr, FloatAttr,
                         IntegerAttr, StringAttr, SymbolRefAttr, TypeAttr, UnitAttr, int_attr)
from .builder import Builder, new_region_with_block
from .context import Context, Dialect, default_context
from .core import (OP_REGISTRY, Block, BlockArgument, Module, OpResult, Operation, Region, Value,
                   op_count_by_name, register_op)
from .location import UNKNOWN, CallSiteLoc, FileLineCol, Location, NameLoc, UnknownLoc
from .parser import ParseError, parse_module
from .printer import print_module, print_op_standalone
from .types import (FloatType, FunctionType, IntegerType, TensorType, Type, bf16, f16, f32, f64,
                    i1, i8, i16, i32, i64, like, shape_of)
from .verifier import verify_module
from .verifier_errors import VerificationError
