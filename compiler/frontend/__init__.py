"""compiler.frontend"""
