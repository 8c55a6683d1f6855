"""compiler.analysis"""
