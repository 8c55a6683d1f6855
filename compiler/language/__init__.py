"""compiler.language"""
