"""torch.amp: autocast and GradScaler, over syntorch's (docs/torch.md "Mixed precision")."""

import _syntorch
from syntorch._scopes import CppScope as _CppScope


class autocast(_CppScope):
    """torch.autocast(device_type, dtype=None, enabled=True, cache_enabled=None): in its block,
    matmul, linear and attention run in `dtype` (fp16 by default on CUDA; their inputs cast,
    weights once per block), layer_norm and the losses in fp32. A context manager or a
    decorator."""

    def __init__(self, device_type="cuda", dtype=None, enabled=True, cache_enabled=None):
        if device_type != "cuda":
            raise NotImplementedError(f"torch.autocast: device_type {device_type!r} is not supported (only 'cuda' is "
                                      "simulated)")
        self.dtype = _syntorch.float16 if dtype is None else dtype
        self.enabled = bool(enabled)
        self.cache_enabled = True if cache_enabled is None else bool(cache_enabled)

    def _make(self):
        return _syntorch._Autocast(self.dtype, self.enabled, self.cache_enabled)



class GradScaler:
    """torch.amp.GradScaler("cuda"): scale(loss), unscale_(optimizer), step(optimizer), update().
    An unfused optimizer's step waits for the host to read the inf flag (a sync); a fused one
    takes it on the device. Values are not simulated: no step is skipped, the scale never moves."""

    def __init__(self, device="cuda", init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        if device != "cuda":
            raise NotImplementedError(f"torch.amp.GradScaler: device {device!r} is not supported")
        self._impl = _syntorch._GradScaler(float(init_scale), float(growth_factor), float(backoff_factor),
                                           int(growth_interval), bool(enabled))

    def scale(self, outputs):
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        return self._impl.scale(outputs)

    def unscale_(self, optimizer):
        self._impl.unscale_(optimizer._impl)

    def step(self, optimizer, *args, **kwargs):
        if args or kwargs:
            raise NotImplementedError("GradScaler.step: arguments for optimizer.step are not supported")
        self._impl.step(optimizer._impl)

    def update(self, new_scale=None):
        if new_scale is not None:
            raise NotImplementedError("GradScaler.update: argument 'new_scale' is not supported")
        self._impl.update()

    def get_scale(self):
        return self._impl.get_scale()

    def is_enabled(self):
        return self._impl.is_enabled()
