"""The bridge from real PyTorch: a real torch.nn.Module (or any real PyTorch code) on the meta
device runs under a dispatch mode that hands every ATen op, with its shapes, dtypes, strides and
aliasing, to syntorch's torch layer, so it is simulated as `syntorch.torch` code is: kernels chosen
by the policy, the caching allocator following the real tensors' lifetimes, the full trace.

    import torch, syntorch.pytorch as sp
    report = sp.simulate(model, (tokens,), hw="hw_configs/h100_sxm5_80gb.json", train=True)

    with sp.bridge(hw=...) as b:      # any code on meta tensors
        y = model(x)
    print(b.report["simulated_time_s"])

Needs PyTorch (Debian: apt-get install python3-torch); 1.13 and 2.x."""

try:
    import torch as _torch
except ImportError as e:  # pragma: no cover - depends on the machine
    raise ImportError("syntorch.pytorch needs PyTorch: install Debian's python3-torch (apt-get install python3-torch) "
                      "or pip's torch") from e

import syntorch as _syntorch_package

from ._bridge import BridgeMode, Tally
from ._tensors import adopt, begin_run, mirror_of

__all__ = ["simulate", "bridge", "BridgeMode"]


def _functional_call():
    func = getattr(_torch, "func", None)
    if func is not None and hasattr(func, "functional_call"):
        return func.functional_call
    from torch.nn.utils import stateless
    return stateless.functional_call


def _meta_state(model):
    """Every parameter and buffer of `model` by each name it has (tied weights under each name, as
    one tensor), as meta tensors of the same shapes and dtypes; nothing is copied."""
    made = {}
    state = {}
    for prefix, module in model.named_modules(remove_duplicate=False):
        for kind in ("_parameters", "_buffers"):
            for name, t in getattr(module, kind).items():
                if t is None:
                    continue
                key = id(t)
                if key not in made:
                    meta = _torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device="meta")
                    if isinstance(t, _torch.nn.Parameter):
                        meta = _torch.nn.Parameter(meta, requires_grad=t.requires_grad)
                    made[key] = meta
                state[f"{prefix}.{name}" if prefix else name] = made[key]
    return state


def _to_meta(x):
    if isinstance(x, _torch.Tensor):
        if x.device.type == "meta":
            return x
        return _torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device="meta").requires_grad_(x.requires_grad)
    if isinstance(x, (list, tuple)):
        return type(x)(_to_meta(y) for y in x)
    if isinstance(x, dict):
        return {k: _to_meta(v) for k, v in x.items()}
    return x


def _adopt_all(x, weight=False):
    if isinstance(x, _torch.Tensor):
        if mirror_of(x) is None:
            adopt(x, weight=weight)
    elif isinstance(x, (list, tuple)):
        for y in x:
            _adopt_all(y, weight)
    elif isinstance(x, dict):
        for y in x.values():
            _adopt_all(y, weight)


def _first_tensor(x):
    if isinstance(x, _torch.Tensor):
        return x
    if isinstance(x, (list, tuple)):
        for y in x:
            t = _first_tensor(y)
            if t is not None:
                return t
    if isinstance(x, dict):
        return _first_tensor(list(x.values()))
    return None


def _make_optimizer(optimizer, params):
    if optimizer is None:
        return None
    if isinstance(optimizer, str):
        names = {"adamw": _torch.optim.AdamW, "adam": _torch.optim.Adam, "sgd": _torch.optim.SGD}
        if optimizer.lower() not in names:
            raise ValueError(f"simulate: optimizer {optimizer!r} is not one of {', '.join(names)} "
                             "(or pass an optimizer class or a function of the parameters)")
        cls = names[optimizer.lower()]
        return cls(params, lr=1e-3) if cls is _torch.optim.SGD else cls(params)
    if callable(optimizer):
        return optimizer(params)
    raise TypeError(f"simulate: optimizer must be a name, an optimizer class or a function of the parameters, "
                    f"got {type(optimizer).__name__}")


class bridge:
    """Simulates the real PyTorch code run inside it (on meta tensors) on the machine `hw`:

        with syntorch.pytorch.bridge(hw=..., trace="step.json") as b:
            loss = model(x).sum(); loss.backward()
        b.report   # the run's statistics and the ATen tally

    `model` (optional) has its parameters and buffers placed as weights before the block; other
    tensors made before it are placed as inputs when first used. The other arguments are
    syntorch.init()'s."""

    def __init__(self, hw=None, set=(), framework="eager", trace=None, policy=None, console=False, model=None):
        self.init_args = dict(hw=hw, set=set, framework=framework, trace=trace, policy=policy, console=console)
        self.model = model
        self.report = None
        self._mode = None

    def __enter__(self):
        _syntorch_package.init(**self.init_args)
        begin_run()
        if self.model is not None:
            _adopt_all([t for t in self.model.parameters()] + [t for t in self.model.buffers()], weight=True)
        self._mode = BridgeMode()
        self._mode.__enter__()
        return self

    def __exit__(self, exc_type, exc, tb):
        self._mode.__exit__(exc_type, exc, tb)
        if exc_type is None:
            stats = _syntorch_package.trace_manager.stats()
            self.report = dict(stats, aten=self._mode.tally.summary())
        return False


def simulate(model, example_inputs=(), example_kwargs=None, *, hw=None, set=(), policy=None, trace=None,
             framework="eager", train=False, loss_fn=None, optimizer=None, steps=1, console=False):
    """Simulates `model` (a real torch.nn.Module, on the meta device or the CPU: only its shapes
    are taken, no weight is copied) on `example_inputs` (a tuple of tensors and other arguments)
    on the machine `hw` (a hardware config; default the bundled H100), and returns the report: the
    run's statistics (simulated_time_s, kernels, flops, hbm_bytes, peak_memory_bytes, ...) and
    `aten`, the tally of the ATen ops that ran (counts by op; the ops that had no cost model of
    their own, with their share of the graph's FLOPs and bytes).

    train=True runs a training step: the forward, the loss (`loss_fn(output)`; without one a
    scalar output is the loss, and any other output takes a gradient of ones), the backward, and
    `optimizer` when given ("adamw", "adam", "sgd", an optimizer class or a function of the
    parameters), then zero_grad. `steps` repeats it. `policy`, `set`, `trace`, `framework` and
    `console` are syntorch.init()'s."""
    if not isinstance(model, _torch.nn.Module):
        raise TypeError(f"simulate: model must be a torch.nn.Module, got {type(model).__name__}")
    if isinstance(example_inputs, (_torch.Tensor, dict)) or not isinstance(example_inputs, (tuple, list)):
        example_inputs = (example_inputs,)
    if int(steps) < 1:
        raise ValueError(f"simulate: steps must be at least 1, got {steps}")
    if loss_fn is not None and not train:
        raise ValueError("simulate: loss_fn is for train=True")
    if optimizer is not None and not train:
        raise ValueError("simulate: optimizer is for train=True")
    call = _functional_call()
    state = _meta_state(model)
    inputs = _to_meta(tuple(example_inputs))
    kwargs = _to_meta(dict(example_kwargs or {}))
    _syntorch_package.init(hw=hw, set=set, framework=framework, trace=trace, policy=policy, console=console)
    begin_run()
    _adopt_all(list(state.values()), weight=True)
    _adopt_all([inputs, kwargs])
    params = list({id(p): p for p in state.values() if isinstance(p, _torch.nn.Parameter) and p.requires_grad}.values())
    opt = _make_optimizer(optimizer, params)
    was_training = model.training
    model.train(bool(train))
    mode = BridgeMode()
    try:
        with mode:
            for _ in range(int(steps)):
                if train:
                    out = call(model, state, inputs, kwargs)
                    loss = loss_fn(out) if loss_fn is not None else _first_tensor(out)
                    if loss is None:
                        raise ValueError("simulate: the model returned no tensor to take a gradient of; pass loss_fn")
                    if loss.dim() == 0:
                        loss.backward()
                    else:
                        loss.backward(_torch.ones_like(loss))
                    del out, loss
                    if opt is not None:
                        opt.step()
                        opt.zero_grad(set_to_none=True)
                else:
                    with _torch.no_grad():
                        out = call(model, state, inputs, kwargs)
                    del out
    finally:
        model.train(was_training)
    stats = _syntorch_package.trace_manager.stats()
    return dict(stats, aten=mode.tally.summary())
