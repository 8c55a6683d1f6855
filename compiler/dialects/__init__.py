"""Op definitions, one module per dialect; importing this package registers them all."""
from . import arith, math, scf, tt, ttg, ttng, ub  # noqa: F401
