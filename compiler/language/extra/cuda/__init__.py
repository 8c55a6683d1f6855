"""`triton.language.extra.cuda`: CUDA's libdevice (the same functions as `extra.libdevice`)."""
from . import libdevice  # noqa: F401
