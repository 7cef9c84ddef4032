"""torch.autograd: the backward pass over the recorded graph (its kernels run on the simulated
device; no values are computed)."""

import _syntorch


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    if create_graph:
        raise NotImplementedError("torch.autograd.backward: argument 'create_graph' (higher-order gradients) is not "
                                  "supported")
    if inputs is not None:
        raise NotImplementedError("torch.autograd.backward: argument 'inputs' is not supported")
    if isinstance(tensors, _syntorch.Tensor):
        tensors = [tensors]
    if isinstance(grad_tensors, _syntorch.Tensor):
        grad_tensors = [grad_tensors]
    if grad_tensors is not None and any(g is None for g in grad_tensors):
        raise NotImplementedError("torch.autograd.backward: None among grad_tensors is not supported; give every "
                                  "gradient or none")
    _syntorch.autograd_backward(list(tensors), None if grad_tensors is None else list(grad_tensors),
                                bool(retain_graph))
