"""syntorch quickstart: PyTorch code on a simulated GPU.

    PYTHONPATH=python:build/python python3 examples/quickstart.py

Tensors, arithmetic and a matmul, a model subclassed from nn.Module, one rank's shard of a
tensor-parallel layer, and the console summary of every op and kernel that ran (nothing is
computed: tensors carry shapes, and the simulator says how long each kernel takes)."""

import syntorch
import syntorch.torch as torch
import syntorch.torch.nn as nn
from syntorch import trace_manager
from syntorch.parallel import ColumnParallelLinear

syntorch.init()  # the bundled H100; init(hw="hw_configs/...json") picks another machine

x = torch.randn(4, 10, device="cuda")
y = torch.randn(4, 10, device="cuda")
z = x + y
w = x.matmul(y.t())
print("x + y:", z.shape, " x.matmul(y.t()):", w.shape)


class SimpleModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(10, 5)

    def forward(self, x):
        return torch.relu(self.linear(x))


model = SimpleModel()
print("SimpleModel:", model(x).shape)

# Rank 0's half of a column-parallel layer: 3 of the 5 output features.
layer = ColumnParallelLinear(input_size=10, output_size=5, tp_size=2, tp_rank=0)
print("ColumnParallelLinear shard:", layer(x).shape)

trace_manager.dump(format="console")
