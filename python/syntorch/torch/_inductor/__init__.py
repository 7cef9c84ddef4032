"""torch._inductor: its config (the settings scripts set; syntorch keeps them)."""

from . import config  # noqa: F401
