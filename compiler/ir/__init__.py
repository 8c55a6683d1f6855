"""A small MLIR-like IR: types, attributes, locations, ops/blocks/regions, printer, parser,
verifier and builder. The dialects (`compiler.dialects`) define the concrete ops on top of it."""
from .attributes import (ArrayAttr, Attribute, BoolAttr, DenseArrayAttr, DenseAttr, FloatAttr,
                         IntegerAttr, StringAttr, SymbolRefAttr, TypeAttr, UnitAttr, int_attr)
from .builder import Builder, new_region_with_block
from .core import (OP_REGISTRY, Block, BlockArgument, Module, OpResult, Operation, Region, Value,
                   op_count_by_name, register_op)
from .location import UNKNOWN, CallSiteLoc, FileLineCol, Location, NameLoc, UnknownLoc
from .parser import ParseError, parse_module
from .printer import print_module, print_op_standalone
from .types import (FloatType, FunctionType, IntegerType, MemDescType, PointerType, TensorType,
                    Type, bf16, f16, f32, f64, i1, i8, i16, i32, i64, like, shape_of)
from .verifier_errors import VerificationError
