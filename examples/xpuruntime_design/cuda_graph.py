"""The xpuruntime design's CUDA Graph training loop (section 8.2), as written there:

    python -m syntorch.run examples/xpuruntime_design/cuda_graph.py
"""

from common import MyModel, dataloader

import torch
import xpuruntime.pytorch as xrt_torch

model = MyModel().cuda()
optimizer = torch.optim.Adam(model.parameters())
criterion = torch.nn.CrossEntropyLoss()

# 정적 입출력 버퍼
static_input = torch.randn(32, 3, 224, 224, device='cuda')
static_target = torch.randint(0, 1000, (32,), device='cuda')

# Warmup
xrt_torch.set_kernel_policy(matmul="cublasLt")
for _ in range(3):
    output = model(static_input)
    loss = criterion(output, static_target)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()

# Graph capture
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    output = model(static_input)
    loss = criterion(output, static_target)
    loss.backward()

# 학습 (Graph replay)
for batch, target in dataloader:
    static_input.copy_(batch)
    static_target.copy_(target)
    g.replay()
    optimizer.step()
    optimizer.zero_grad()
