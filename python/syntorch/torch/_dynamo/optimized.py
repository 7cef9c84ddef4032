"""OptimizedModule: what torch.compile returns for a module. It holds the module as `_orig_mod`
(so its state_dict's keys start with "_orig_mod.", as PyTorch's do), reads other attributes
through to it, and runs the module's __call__ (its hooks included) as a compiled graph."""

from syntorch.torch import nn

from .eval_frame import CompiledFunction, register


class OptimizedModule(nn.Module):
    def __init__(self, mod, compiled):
        super().__init__()
        self._orig_mod = mod
        object.__setattr__(self, "_compiled", compiled)

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self.__dict__["_modules"]["_orig_mod"], name)

    def __call__(self, *args, **kwargs):
        mod = self._orig_mod
        return self._compiled._call(mod.__call__, mod, args, kwargs)

    def forward(self, *args, **kwargs):
        return self.__call__(*args, **kwargs)

    def __repr__(self):
        return f"OptimizedModule(\n  (_orig_mod): {self._orig_mod!r}\n)"


def optimize_module(mod, **kwargs):
    compiled = register(CompiledFunction(mod.forward, name=type(mod).__qualname__, **kwargs))
    return OptimizedModule(mod, compiled)
