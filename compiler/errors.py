"""The root of the errors a user can catch (Triton's `triton.errors`): every error this compiler
raises on purpose for a user's kernel (compile errors, interpreter errors, out-of-resources,
ptxas failures) derives from `TritonError`, so code written for Triton catches ours."""
from __future__ import annotations


class TritonError(Exception):
    """Base class of the user-facing errors (`triton.TritonError`)."""

    def report(self) -> str:
        """The message as printed to the user."""
        return str(self)
