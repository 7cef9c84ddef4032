"""torch.backends: the switches training scripts set first. cuda.matmul.allow_tf32 is
torch.set_float32_matmul_precision("high") (fp32 products on the TF32 matrix units) or back to
"highest"; the cuDNN switches concern convolutions, which syntorch does not run, and are kept."""

import _syntorch


class _Matmul:
    @property
    def allow_tf32(self):
        return _syntorch.get_float32_matmul_precision() != "highest"

    @allow_tf32.setter
    def allow_tf32(self, value):
        _syntorch.set_float32_matmul_precision("high" if value else "highest")


class _Cuda:
    def __init__(self):
        self.matmul = _Matmul()

    def is_built(self):
        return True


class _Cudnn:
    def __init__(self):
        self.allow_tf32 = True  # PyTorch's default; convolutions only
        self.benchmark = False
        self.deterministic = False
        self.enabled = True

    def is_available(self):
        return True


cuda = _Cuda()
cudnn = _Cudnn()
