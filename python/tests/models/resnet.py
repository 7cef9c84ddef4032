"""A small ResNet written once against PyTorch's API: make_resnet(torch) builds it with real
PyTorch or with syntorch.torch."""


def make_resnet(torch, width=64, blocks=2, classes=1000):
    nn = torch.nn
    F = torch.nn.functional

    class Block(nn.Module):
        def __init__(self, channels):
            super().__init__()
            self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(channels)
            self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(channels)

        def forward(self, x):
            h = F.relu(self.bn1(self.conv1(x)))
            return F.relu(x + self.bn2(self.conv2(h)))

    class ResNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Conv2d(3, width, 7, stride=2, padding=3, bias=False)
            self.bn = nn.BatchNorm2d(width)
            self.pool = nn.MaxPool2d(3, stride=2, padding=1)
            self.blocks = nn.ModuleList([Block(width) for _ in range(blocks)])
            self.head = nn.Linear(width, classes)

        def forward(self, x):
            x = self.pool(F.relu(self.bn(self.stem(x))))
            for b in self.blocks:
                x = b(x)
            return self.head(F.adaptive_avg_pool2d(x, 1).flatten(1))

    return ResNet()
