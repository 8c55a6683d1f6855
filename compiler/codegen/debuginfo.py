"""Debug locations for the line maps: each ttgir op's line in the printed ttgir text, and the
LLVM debug metadata (compile unit, file, subprogram, locations) that points PTX `.loc`s there."""
from __future__ import annotations

from llvmlite import ir

from compiler.ir.core import Module, Operation
from compiler.ir.printer import print_module_with_lines


def op_lines(module: Module) -> tuple:
    """(text, {op: 1-based line}) for the module printed once; the printer reports where
    each op starts."""
    return print_module_with_lines(module)


def python_location(op: Operation):
    """The op's Python file:line:col (None when it has no position)."""
    return op.loc.file_line_col()




class DebugInfo:
    """Builds the DWARF metadata of one kernel whose source file is the ttgir text."""

    def __init__(self, module: ir.Module, file_name: str, kernel_name: str, line: int):
        self.module = module
        self.file = module.add_debug_info("DIFile", {"filename": file_name, "directory": ""})
        self.unit = module.add_debug_info("DICompileUnit", {
            "language": ir.DIToken("DW_LANG_C"),
            "file": self.file,
            "producer": "tile-explore",
            "isOptimized": True,
            "runtimeVersion": 0,
            "emissionKind": ir.DIToken("LineTablesOnly"),
        }, is_distinct=True)
        sub_type = module.add_debug_info("DISubroutineType", {"types": module.add_metadata([])})
        self.subprogram = module.add_debug_info("DISubprogram", {
            "name": kernel_name,
            "linkageName": kernel_name,
            "scope": self.file,
            "file": self.file,
            "line": line,
            "type": sub_type,
            "scopeLine": line,
            "spFlags": ir.DIToken("DISPFlagDefinition | DISPFlagOptimized"),
            "unit": self.unit,
        }, is_distinct=True)
        flags = module.add_named_metadata("llvm.module.flags")
        flags.add(module.add_metadata([ir.IntType(32)(2), "Debug Info Version",
                                       ir.IntType(32)(3)]))
        flags.add(module.add_metadata([ir.IntType(32)(2), "Dwarf Version", ir.IntType(32)(4)]))
        cu = module.add_named_metadata("llvm.dbg.cu")
        cu.add(self.unit)
        self._locations: dict = {}

    def location(self, line: int):
        """The DILocation of a ttgir line (column 0)."""
        if line not in self._locations:
            self._locations[line] = self.module.add_debug_info(
                "DILocation", {"line": line, "column": 0, "scope": self.subprogram})
        return self._locations[line]
