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


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True,
         allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """The gradients of `outputs` with respect to `inputs`, as a tuple in their order, without
    touching any .grad: only the backward nodes on a path to an input run (their kernels on the
    simulated device). An input the outputs do not reach is None with allow_unused=True (zeros
    with materialize_grads=True), else a RuntimeError."""
    if create_graph:
        raise NotImplementedError("torch.autograd.grad: argument 'create_graph' (higher-order gradients) is not "
                                  "supported")
    if is_grads_batched:
        raise NotImplementedError("torch.autograd.grad: argument 'is_grads_batched' is not supported")
    single = isinstance(inputs, _syntorch.Tensor)
    outputs = [outputs] if isinstance(outputs, _syntorch.Tensor) else list(outputs)
    inputs = [inputs] if single else list(inputs)
    if isinstance(grad_outputs, _syntorch.Tensor):
        grad_outputs = [grad_outputs]
    if grad_outputs is not None:
        grad_outputs = list(grad_outputs)
        if any(g is None for g in grad_outputs):
            if not all(o.numel() == 1 for o, g in zip(outputs, grad_outputs) if g is None):
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            import syntorch.torch as torch
            grad_outputs = [torch.ones_like(o) if g is None else g for o, g in zip(outputs, grad_outputs)]
    if allow_unused is None:
        allow_unused = materialize_grads
    grads = _syntorch.autograd_grad(outputs, inputs, grad_outputs, bool(retain_graph), bool(allow_unused))
    if materialize_grads:
        import syntorch.torch as torch
        grads = [torch.zeros_like(x) if g is None else g for x, g in zip(inputs, grads)]
    return tuple(grads)


class FunctionCtx:
    """What forward leaves for backward: saved tensors, which inputs need a gradient, and any
    attribute the function sets on it."""

    def __init__(self):
        self.saved_tensors = ()
        self.needs_input_grad = ()
        self.materialize_grads = True
        self._non_differentiable = set()

    def save_for_backward(self, *tensors):
        self.saved_tensors = tuple(tensors)

    def mark_non_differentiable(self, *tensors):
        self._non_differentiable.update(id(t) for t in tensors)

    def mark_dirty(self, *tensors):
        pass

    def set_materialize_grads(self, value):
        self.materialize_grads = bool(value)


class Function:
    """torch.autograd.Function: forward(ctx, *args) runs with grad mode off; its tensor outputs
    get a node whose backward calls backward(ctx, *grad_outputs), which returns a gradient (or None)
    per forward argument, as PyTorch's. The setup_context style (forward(*args) with
    setup_context(ctx, inputs, output)) works too."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    @classmethod
    def apply(cls, *args, **kwargs):
        import syntorch.torch as torch
        ctx = FunctionCtx()
        ctx.needs_input_grad = tuple(isinstance(a, _syntorch.Tensor) and a.requires_grad for a in args)
        separate = hasattr(cls, "setup_context")
        with torch.no_grad():
            output = cls.forward(*args, **kwargs) if separate else cls.forward(ctx, *args, **kwargs)
        if separate:
            cls.setup_context(ctx, args, output)
        if not (torch.is_grad_enabled() and any(ctx.needs_input_grad)):
            return output
        outputs = output if isinstance(output, tuple) else (output,)
        inputs = [a for a in args if isinstance(a, _syntorch.Tensor)]
        positions = [i for i, a in enumerate(args) if isinstance(a, _syntorch.Tensor)]
        n_args = len(args)
        # An output that is an input (returned as is) gets a view of its own for the history.
        fresh = [o.view_as(o) if any(o is a for a in inputs) else o for o in outputs]
        tensor_outputs = [(i, o) for i, o in enumerate(fresh) if isinstance(o, _syntorch.Tensor)]
        differentiable = [(i, o) for i, o in tensor_outputs
                          if id(o) not in ctx._non_differentiable and (o.is_floating_point() or o.is_complex())]
        # The node must not hold the outputs (they hold it): backward sees their shapes only, and
        # the saved tensors come back from the node.
        layout = [(i, list(o.shape), o.dtype, o.device) for i, o in differentiable]
        n_outputs = len(fresh)
        saved = list(ctx.saved_tensors)
        ctx.saved_tensors = ()

        def backward(grads, kept):
            ctx.saved_tensors = tuple(kept)
            per_output = [None] * n_outputs  # one per forward output, None for the others
            for (i, shape, dtype, device), g in zip(layout, grads):
                if g is None and ctx.materialize_grads:
                    g = torch.zeros(*shape, dtype=dtype, device=device)
                per_output[i] = g
            result = cls.backward(ctx, *per_output)
            ctx.saved_tensors = ()
            result = result if isinstance(result, tuple) else (result,)
            if len(result) < n_args:
                raise RuntimeError(f"function {cls.__name__}Backward returned an incorrect number of gradients "
                                   f"(expected {n_args}, got {len(result)})")
            return [result[i] for i in positions]

        if differentiable:
            # An output the function saved comes back as a view carrying the history (the saved
            # handle has none): the caller gets those.
            recorded = _syntorch._record_function(cls.__name__ + "Backward", inputs, [o for _, o in differentiable],
                                                  saved, backward)
            for (i, _), o in zip(differentiable, recorded):
                fresh[i] = o
        if isinstance(output, tuple):
            return tuple(fresh)
        return fresh[0]

