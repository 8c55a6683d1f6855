"""Pygments lexers for the texts the explorer shows: our MLIR-like IR (ttir/ttgir), PTX and SASS.

LLVM IR uses pygments' own `LlvmLexer`; Python source uses `PythonLexer`. `lexer_for_stage`
picks the right one for a stage name of the compile trace.
"""
from __future__ import annotations

from pygments.lexer import Lexer, RegexLexer, bygroups
from pygments.lexers import LlvmLexer, PythonLexer, TextLexer
from pygments.token import (Comment, Keyword, Name, Number, Operator, Punctuation, String,
                            Text, Whitespace)


class MLIRLexer(RegexLexer):
    """Triton-style MLIR text: dialect ops, SSA values, block labels, types, #attribute aliases."""

    name = "Tile MLIR"
    aliases = ["tile-mlir", "ttir", "ttgir"]
    filenames = ["*.ttir", "*.ttgir", "*.mlir"]

    tokens = {
        "root": [
            (r"\s+", Whitespace),
            (r"//.*?$", Comment.Single),
            (r'"(\\\\|\\"|[^"])*"', String),
            (r"\^[\w.$-]+", Name.Label),
            (r"%[\w.$#-]+", Name.Variable),
            (r"@[\w.$-]+", Name.Function),
            (r"#[\w.$-]+(<)?", Name.Decorator),
            (r"!tt\.[\w]+", Keyword.Type),
            (r"(tensor|memdesc|ptr)(?=<)", Keyword.Type),
            (r"\b(i1|i8|i16|i32|i64|f16|bf16|f32|f64|f8E4M3FN|f8E5M2|index)\b", Keyword.Type),
            (r"\b(module|attributes|loc|dense|true|false|unknown|callsite|at|to)\b",
             Keyword),
            (r"[a-z_]\w*\.[\w.]+", Name.Builtin),          # dialect.op
            (r"0x[0-9A-Fa-f]+", Number.Hex),
            (r"-?\d+\.\d*(e[+-]?\d+)?", Number.Float),
            (r"-?\d+", Number.Integer),
            (r"[=:,\->]+|[<>]", Operator),
            (r"[(){}\[\]]", Punctuation),
            (r"[A-Za-z_][\w]*", Name),
            (r".", Text),
        ]
    }


class PTXLexer(RegexLexer):
    """NVIDIA PTX assembly: directives, predicated instructions with modifiers, registers."""

    name = "PTX"
    aliases = ["ptx"]
    filenames = ["*.ptx"]

    tokens = {
        "root": [
            (r"\s+", Whitespace),
            (r"//.*?$", Comment.Single),
            (r"/\*.*?\*/", Comment.Multiline),
            (r'"(\\\\|\\"|[^"])*"', String),
            (r"^[$\w]+:", Name.Label),
            (r"@!?%[\w]+", Keyword.Pseudo),                       # predicate guard
            (r"%[\w.]+", Name.Variable),                           # registers / specials
            (r"(\.(?:loc|file|version|target|address_size|visible|entry|func|param|reg|"
             r"shared|global|local|const|maxntid|reqntid|section|align|extern|weak|pragma))\b",
             Keyword.Declaration),
            (r"([a-z][a-z0-9_]*)((?:\.[\w]+)+)",
             bygroups(Name.Builtin, Keyword.Type)),                # op.modifiers
            (r"\b(ret|exit|bar|bra|call)\b", Name.Builtin),
            (r"\$[\w]+", Name.Label),
            (r"0[fFdD][0-9A-Fa-f]+", Number.Float),
            (r"0x[0-9A-Fa-f]+", Number.Hex),
            (r"-?\d+", Number.Integer),
            (r"[\[\]{}();,<>+\-|]", Punctuation),
            (r"[A-Za-z_][\w]*", Name),
            (r".", Text),
        ]
    }


class SASSLexer(RegexLexer):
    """SASS as printed by nvdisasm / cuobjdump: addresses, opcodes, registers, predicates."""

    name = "SASS"
    aliases = ["sass"]
    filenames = ["*.sass"]

    tokens = {
        "root": [
            (r"\s+", Whitespace),
            (r"//.*?$", Comment.Single),
            (r"/\*[0-9a-fA-F]+\*/", Comment.Preproc),             # instruction address
            (r"\.[A-Za-z_][\w.$]*:?", Keyword.Declaration),
            (r"^[$\w.]+:", Name.Label),
            (r"@!?U?P[T0-9]+", Keyword.Pseudo),
            (r"\b(U?R[Z0-9]+|U?P[T0-9]+|SR_[A-Z_.0-9]+|c\[[^\]]*\]\[[^\]]*\])", Name.Variable),
            (r"\b([A-Z][A-Z0-9_]+)((?:\.[A-Z0-9_]+)*)", bygroups(Name.Builtin, Keyword.Type)),
            (r"0x[0-9A-Fa-f]+", Number.Hex),
            (r"-?\d+(\.\d+)?", Number),
            (r"[\[\]{}();,|~!+\-]", Punctuation),
            (r"[A-Za-z_`$][\w.$`()]*", Name),
            (r".", Text),
        ]
    }


def lexer_for_stage(stage: str) -> Lexer:
    """The lexer for one stage's text: "source", "ttir", "ttgir", "llir", "ptx" or "sass"."""
    if stage == "source":
        return PythonLexer()
    if stage in ("ttir", "ttgir") or stage.startswith("pass:"):
        return MLIRLexer()
    if stage == "llir":
        return LlvmLexer()
    if stage == "ptx":
        return PTXLexer()
    if stage == "sass":
        return SASSLexer()
    return TextLexer()
