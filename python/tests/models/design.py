"""The IR-extraction design's test models: several inputs and outputs, skip connections, shared
weights, attention."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiIO(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(16, 32)
        self.b = nn.Linear(8, 32)
        self.head1 = nn.Linear(32, 4)
        self.head2 = nn.Linear(32, 2)

    def forward(self, x, y):
        h = torch.relu(self.a(x) + self.b(y))
        return self.head1(h), torch.sigmoid(self.head2(h))


class SkipConnections(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(8)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(8, 10)

    def forward(self, x):
        h = F.relu(self.bn1(self.conv1(x)))
        h = F.relu(h + self.bn2(self.conv2(h)))  # the residual
        return self.fc(torch.flatten(self.pool(h), 1))


class SharedWeights(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(100, 32)
        self.layer = nn.Linear(32, 32)
        self.out = nn.Linear(32, 100, bias=False)
        self.out.weight = self.embed.weight

    def forward(self, tokens):
        h = self.embed(tokens)
        h = torch.tanh(self.layer(h))
        h = torch.tanh(self.layer(h))  # the same layer twice
        return self.out(h)


class Attention(nn.Module):
    def __init__(self, d=32, heads=4):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.norm = nn.LayerNorm(d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.norm(x)).chunk(3, dim=-1)
        q, k, v = (z.reshape(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        att = torch.softmax(q @ k.transpose(-2, -1) / (d // self.heads) ** 0.5, dim=-1)
        return x + self.proj((att @ v).transpose(1, 2).reshape(b, t, d))


MODELS = {
    "multi_io": (MultiIO, lambda: (torch.randn(2, 16), torch.randn(2, 8))),
    "skip_connections": (SkipConnections, lambda: (torch.randn(2, 3, 16, 16),)),
    "shared_weights": (SharedWeights, lambda: (torch.randint(0, 100, (2, 12)),)),
    "attention": (Attention, lambda: (torch.randn(2, 10, 32),)),
}
