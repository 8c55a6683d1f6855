"""Passes, one module per pass, and the instrumented pass manager."""
