"""torch.backends: the switches training scripts set first. cuda.matmul.allow_tf32 is
torch.set_float32_matmul_precision("high") (fp32 products on the TF32 matrix units) or back to
"highest"; the cuDNN switches concern convolutions, which syntorch does not run, and are kept."""

from syntorch._unsupported import module_getattr as _module_getattr

from . import cuda  # noqa: E402
from . import cudnn  # noqa: E402
from . import mps  # noqa: E402

__getattr__ = _module_getattr("torch.backends")
