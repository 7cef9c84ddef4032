"""torch._dynamo.config: the settings of torch.compile's graph capture that syntorch models."""

# Graphs kept per compiled function before it falls back to eager mode (a warning says so).
cache_size_limit = 8
# After a recompile caused by a changed size, that dimension is compiled as dynamic.
automatic_dynamic_shapes = True
# Accepted and kept, as PyTorch's (they change nothing the simulator models).
suppress_errors = False
verbose = False
optimize_ddp = True
capture_scalar_outputs = False
capture_dynamic_output_shape_ops = False
