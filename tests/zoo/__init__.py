"""The kernel families of tests/kernels_zoo.py, one module each."""
