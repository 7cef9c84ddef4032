"""torch.optim: SGD, Adam and AdamW as PyTorch's CUDA implementations launch them (foreach by
default: one multi-tensor kernel per tensor operation; fused=True: one kernel a step). Values are
not simulated, so learning rates, betas and schedules change nothing but are kept for the code
that reads them."""

import _syntorch


def _flatten(params):
    """The parameters of `params` (tensors, or param-group dicts of them) and the groups."""
    params = list(params)
    if not params:
        raise ValueError("optimizer got an empty parameter list")
    groups = params if isinstance(params[0], dict) else [{"params": params}]
    flat = []
    for g in groups:
        if not isinstance(g, dict) or "params" not in g:
            raise TypeError("optimizer params must be tensors or dicts with a 'params' entry")
        g["params"] = list(g["params"])
        flat.extend(g["params"])
    return flat, groups


class Optimizer:
    def __init__(self, params, defaults):
        flat, groups = _flatten(params)
        for g in groups:
            for k, v in defaults.items():
                g.setdefault(k, v)
        self.param_groups = groups
        self.defaults = defaults
        self._impl = self._make(flat)

    def step(self, closure=None):
        if closure is not None:
            raise NotImplementedError(f"{type(self).__name__}.step: argument 'closure' is not supported")
        self._impl.step()

    def zero_grad(self, set_to_none=True):
        self._impl.zero_grad(set_to_none)

    def state_bytes(self):
        """Bytes of optimizer state held now (syntorch's addition)."""
        return self._impl.state_bytes()

    _STATE_NAMES = ()  # the state slots' names, as PyTorch's state_dict calls them

    def _flat(self):
        return [p for g in self.param_groups for p in g["params"]]

    @property
    def state(self):
        """Per parameter, its state tensors by PyTorch's names (those that have taken a step)."""
        import syntorch.torch as torch
        slots = self._impl._state_tensors()
        out = {}
        for i, p in enumerate(self._flat()):
            entry = {name: slot[i] for name, slot in zip(self._STATE_NAMES, slots) if slot[i] is not None}
            if entry:
                entry["step"] = torch.zeros((), dtype=torch.float32, device="cpu")
                out[p] = entry
        return out

    def state_dict(self):
        """{"state": {index: {name: tensor}}, "param_groups": [{hyperparameters, "params": [indices]}]},
        as PyTorch's: the state tensors themselves (no copy), parameters by their index."""
        index = {id(p): i for i, p in enumerate(self._flat())}
        state = {index[id(p)]: dict(s) for p, s in self.state.items()}
        groups = []
        for g in self.param_groups:
            entry = {k: v for k, v in g.items() if k != "params"}
            entry["params"] = [index[id(p)] for p in g["params"]]
            groups.append(entry)
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict):
        """The groups' hyperparameters, and each saved state tensor brought to its parameter's device
        (a copy from a host checkpoint). PyTorch's checks on the groups' and parameters' counts."""
        groups = state_dict.get("param_groups")
        if groups is None or "state" not in state_dict:
            raise KeyError("optimizer state_dict must have 'state' and 'param_groups'")
        if len(groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        for mine, theirs in zip(self.param_groups, groups):
            if len(mine["params"]) != len(theirs["params"]):
                raise ValueError("loaded state dict contains a parameter group that doesn't match the size of "
                                 "optimizer's group")
        flat = self._flat()
        import syntorch.torch as torch
        with torch.no_grad():
            for i, entry in state_dict["state"].items():
                p = flat[int(i)]
                for name, value in entry.items():
                    if isinstance(value, torch.Tensor) and value.dim() > 0 and value.device != p.device:
                        value.to(p.device)  # the copy PyTorch makes to the parameter's device
        for mine, theirs in zip(self.param_groups, groups):
            for k, v in theirs.items():
                if k != "params":
                    mine[k] = v

    def add_param_group(self, param_group):
        """A new group with the defaults it does not set; the optimizer's state is made again from
        the next step (a step's state tensors for every parameter)."""
        if not isinstance(param_group, dict) or "params" not in param_group:
            raise TypeError("param_group must be a dict with a 'params' entry")
        params = param_group["params"]
        param_group["params"] = [params] if isinstance(params, _syntorch.Tensor) else list(params)
        have = {id(p) for p in self._flat()}
        if any(id(p) in have for p in param_group["params"]):
            raise ValueError("some parameters appear in more than one parameter group")
        for k, v in self.defaults.items():
            param_group.setdefault(k, v)
        self.param_groups.append(param_group)
        self._impl = self._make(self._flat())


def _check_flags(name, foreach, fused, differentiable=False, capturable=False):
    if differentiable:
        raise NotImplementedError(f"torch.optim.{name}: argument 'differentiable' is not supported")
    if foreach is False and not fused:
        raise NotImplementedError(f"torch.optim.{name}: foreach=False (the per-tensor loop) is not modelled; the "
                                  "foreach (default) and fused implementations are")
    if foreach and fused:
        raise RuntimeError("`fused` and `foreach` cannot be `True` together.")


class SGD(Optimizer):
    _STATE_NAMES = ("momentum_buffer",)

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *, maximize=False,
                 foreach=None, differentiable=False, fused=None):
        _check_flags("SGD", foreach, fused, differentiable)
        if lr < 0:
            raise ValueError(f"Invalid learning rate: {lr}")
        self._args = (lr, momentum, weight_decay, foreach is not False and not fused, bool(fused))
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                                      nesterov=nesterov, maximize=maximize))

    def _make(self, flat):
        return _syntorch._SGD(flat, *self._args)


class Adam(Optimizer):
    _decoupled = False
    _STATE_NAMES = ("exp_avg", "exp_avg_sq")

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 foreach=None, maximize=False, capturable=False, differentiable=False, fused=None):
        name = type(self).__name__
        _check_flags(name, foreach, fused, differentiable, capturable)
        if amsgrad:
            raise NotImplementedError(f"torch.optim.{name}: argument 'amsgrad' is not supported")
        if lr < 0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= betas[0] < 1.0 or not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter: {betas}")
        self._args = (lr, betas[0], betas[1], eps, weight_decay, foreach is not False and not fused, bool(fused),
                      self._decoupled)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                                      maximize=maximize))

    def _make(self, flat):
        return _syntorch._Adam(flat, *self._args)


class AdamW(Adam):
    _decoupled = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, **kwargs):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, **kwargs)


class Adadelta(Optimizer):
    """torch.optim.Adadelta with its two state tensors (square_avg, acc_delta) and PyTorch's
    arguments. Its step is costed as Adam's foreach step (the same state, seven foreach kernels):
    PyTorch's foreach Adadelta launches eleven with two temporary lists, so this undercounts its
    traffic by about a third; the trace names Adam's kernels. The functional mode steps the
    values with PyTorch's own Adadelta."""

    _STATE_NAMES = ("square_avg", "acc_delta")

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *, capturable=False,
                 maximize=False, differentiable=False):
        _check_flags("Adadelta", foreach, None, differentiable, capturable)
        if lr < 0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        if eps < 0:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if weight_decay < 0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        self._args = (lr, rho, rho, eps, weight_decay, True, False, False)
        super().__init__(params, dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                                      foreach=foreach, capturable=capturable, differentiable=differentiable))

    def _make(self, flat):
        return _syntorch._Adam(flat, *self._args)


from . import lr_scheduler  # noqa: E402,F401
