"""`torch_ir`, the IR-extraction design's module name, as syntorch.ir: `from torch_ir import
extract_ir, verify_ir_with_state_dict` runs as the design writes it."""

from syntorch.ir import *  # noqa: F401,F403
from syntorch.ir import __all__  # noqa: F401
