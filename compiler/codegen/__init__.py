"""compiler.codegen"""
