"""compiler.profiler"""
