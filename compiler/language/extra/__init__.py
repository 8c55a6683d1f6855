"""`triton.language.extra`: vendor math libraries; `libdevice` is the one this compiler has."""
from . import libdevice  # noqa: F401
