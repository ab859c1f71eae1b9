"""ResNet-18 (He et al., 2015): basic residual blocks, batch norm, a global average pool.

Names as torchvision's ``resnet18`` (``conv1``, ``bn1``, ``layer1.0.conv1``,
``layer2.0.downsample.0``, ``fc``), so its state_dicts load. ``small_input=True`` swaps the
ImageNet stem (a 7x7 stride-2 convolution and a max pool, which would shrink a 28x28 digit
to 7x7 before the first block) for one 3x3 stride-1 convolution, as is usual for MNIST and
CIFAR; the parameter names stay the same.
"""
import torch
from torch import nn


class BasicBlock(nn.Module):
    """Two 3x3 convolutions with batch norm; the input is added back before the last ReLU
    (through a strided 1x1 convolution when the shape changes)."""
    expansion = 1

    def __init__(self, inplanes, planes, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = None
        if stride != 1 or inplanes != planes:
            self.downsample = nn.Sequential(nn.Conv2d(inplanes, planes, 1, stride, bias=False),
                                            nn.BatchNorm2d(planes))

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


class ResNet(nn.Module):
    """A stem, four stages of ``layers[i]`` blocks (64, 128, 256, 512 channels; each stage
    after the first halves the resolution), a global average pool and a linear classifier."""

    def __init__(self, layers=(2, 2, 2, 2), num_classes=1000, in_channels=3, small_input=False, width=64):
        super().__init__()
        self.inplanes = width
        if small_input:
            self.conv1 = nn.Conv2d(in_channels, width, 3, 1, 1, bias=False)
            self.maxpool = nn.Identity()
        else:
            self.conv1 = nn.Conv2d(in_channels, width, 7, 2, 3, bias=False)
            self.maxpool = nn.MaxPool2d(3, 2, 1)
        self.bn1 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU(inplace=True)
        self.layer1 = self._stage(width, layers[0], 1)
        self.layer2 = self._stage(width * 2, layers[1], 2)
        self.layer3 = self._stage(width * 4, layers[2], 2)
        self.layer4 = self._stage(width * 8, layers[3], 2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(width * 8, num_classes)
        for m in self.modules():  # He initialisation for ReLU networks, as torchvision
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")

    def _stage(self, planes, blocks, stride):
        layers = [BasicBlock(self.inplanes, planes, stride)]
        self.inplanes = planes
        layers += [BasicBlock(planes, planes) for _ in range(blocks - 1)]
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def resnet18(num_classes=1000, in_channels=3, small_input=False, width=64):
    """ResNet-18: two basic blocks per stage. ``width`` scales every stage's channels
    (64 is the paper's; smaller widths make quick runs)."""
    return ResNet((2, 2, 2, 2), num_classes, in_channels, small_input, width)
