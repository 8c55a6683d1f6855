"""compiler.runtime"""
