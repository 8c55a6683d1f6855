"""`triton.language.extra.cuda.libdevice`: the functions of `extra.libdevice`."""
from compiler.language.extra.libdevice import *  # noqa: F401,F403
from compiler.language.extra.libdevice import __all__  # noqa: F401
