"""What the xpuruntime design's training examples leave to their reader: MyModel (a small ResNet-style
image classifier for 224x224 images and 1000 classes), a dataloader of 32-image batches, and
num_epochs. Plain PyTorch; under `python -m syntorch.run` it runs on the simulated machine."""

import torch
import torch.nn as nn


class MyModel(nn.Module):
    def __init__(self, classes=1000):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False), nn.BatchNorm2d(64),
                                  nn.ReLU(inplace=True), nn.MaxPool2d(3, stride=2, padding=1))
        self.stage = nn.Sequential(nn.Conv2d(64, 128, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(128),
                                   nn.ReLU(inplace=True), nn.Conv2d(128, 256, 3, stride=2, padding=1, bias=False),
                                   nn.BatchNorm2d(256), nn.ReLU(inplace=True))
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(256, classes)

    def forward(self, x):
        return self.fc(torch.flatten(self.pool(self.stage(self.stem(x))), 1))


class Images(torch.utils.data.Dataset):
    """Images and labels of the right shapes (the simulator needs no pixels)."""

    def __init__(self, count):
        self.count = count

    def __getitem__(self, i):
        return torch.randn(3, 224, 224), i % 1000

    def __len__(self):
        return self.count


dataloader = torch.utils.data.DataLoader(Images(128), batch_size=32, shuffle=True, num_workers=4, pin_memory=True)
num_epochs = 2
