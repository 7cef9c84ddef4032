"""The xpuruntime design's basic training loop (section 8.1), as written there:

    python -m syntorch.run examples/xpuruntime_design/basic_loop.py
"""

from common import MyModel, dataloader, num_epochs

import torch
import xpuruntime.pytorch as xrt_torch

# 모델 정의
model = MyModel().cuda()
optimizer = torch.optim.Adam(model.parameters())
criterion = torch.nn.CrossEntropyLoss()

# xpuruntime 커널 정책 설정
xrt_torch.set_kernel_policy(
    matmul="cublasLt",
    attention="flash_v2",
)

# 학습 루프
for epoch in range(num_epochs):
    for batch, target in dataloader:
        batch, target = batch.cuda(), target.cuda()

        with xrt_torch.autocast(dtype=torch.float16):
            output = model(batch)
            loss = criterion(output, target)

        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
