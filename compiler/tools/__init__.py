"""Host-side helpers in the shape of `triton.tools` (`tensor_descriptor`)."""
