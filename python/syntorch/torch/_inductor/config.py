"""torch._inductor.config: settings scripts set before compiling. syntorch models Inductor's fusion
(max_fusion_size) and CUDA graphs (triton.cudagraphs); the others are kept and change nothing."""

import _syntorch

max_fusion_size = _syntorch._compile_defaults()["max_fusion_size"]  # the C++ layer's (FusionOptions)
coordinate_descent_tuning = False
epilogue_fusion = True
max_autotune = False
max_autotune_gemm = False
freezing = False
fx_graph_cache = True
compile_threads = 8


class triton:  # noqa: N801 (PyTorch's name)
    cudagraphs = False
    unique_kernel_names = True
    cudagraph_trees = True
