"""The interpreter's staging of torch tensors that live off the host (CUDA tensors): the
writeback after a launch must not count as an in-place change for autograd, or a kernel that
reads a tensor saved for backward (Triton's tutorial 05 saves its input x) makes `backward()`
fail with "modified by an inplace operation" (seen on the H200 with `--mode interp`)."""
import pytest

from compiler.runtime.interp.arguments import stage_torch_tensor

torch = pytest.importorskip("torch")


def _staged_copy(tensor):
    """Stage as for a CUDA tensor: a separate host copy, written back after the launch."""
    return stage_torch_tensor(tensor, to_host=lambda t: t.clone())


def test_the_writeback_keeps_a_tensor_saved_for_backward_usable():
    x = torch.randn(8, requires_grad=True)
    y = x * 2.0
    z = (y * y).sum()                 # saves y for backward
    array, writeback = _staged_copy(y)
    array[:] = array * 3.0            # what a kernel wrote
    writeback()
    assert torch.equal(y.detach(), torch.from_numpy(array))
    z.backward()                      # raised with the version-counted copy_
    assert x.grad is not None


def test_the_writeback_lands_in_the_tensor_and_bf16_goes_as_bits():
    t = torch.zeros(4, dtype=torch.bfloat16)
    array, writeback = _staged_copy(t)
    assert array.dtype.name == "int16"
    array[:] = torch.ones(4, dtype=torch.bfloat16).view(torch.int16).numpy()
    writeback()
    assert torch.equal(t, torch.ones(4, dtype=torch.bfloat16))


def test_a_host_tensor_is_used_in_place_without_writeback():
    t = torch.zeros(4)
    array, writeback = stage_torch_tensor(t)
    array[0] = 5.0
    assert writeback is None and t[0].item() == 5.0
