"""`triton.language.extra`: vendor libraries: `libdevice` (math) and `cuda` (libdevice again,
plus CUDA's timer, SM id and thread counts)."""
from . import libdevice  # noqa: F401
from . import cuda  # noqa: F401,E402
