"""torch.backends.cuda: matmul.allow_tf32, the switch over fp32 products' precision."""

import _syntorch
from syntorch._unsupported import module_getattr as _module_getattr

__getattr__ = _module_getattr("torch.backends.cuda")


class _Matmul:
    """torch.backends.cuda.matmul: allow_tf32 reads and sets torch.set_float32_matmul_precision."""

    @property
    def allow_tf32(self):
        return _syntorch.get_float32_matmul_precision() != "highest"

    @allow_tf32.setter
    def allow_tf32(self, value):
        _syntorch.set_float32_matmul_precision("high" if value else "highest")


matmul = _Matmul()


def is_built():
    return True
