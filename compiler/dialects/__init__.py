"""Op definitions, one module per dialect; importing this package registers them all."""
from . import arith, math, scf, tt  # noqa: F401

try:  # the GPU dialect is optional while it is being built
    from . import ttg  # noqa: F401
except ImportError:  # pragma: no cover
    pass
