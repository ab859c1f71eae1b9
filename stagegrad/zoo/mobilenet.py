"""MobileNetV2 (Sandler et al., 2018): inverted residual blocks built from a 1x1
expansion, a 3x3 depthwise convolution (one filter per channel: ``groups=channels``) and a
linear 1x1 projection, with ReLU6 between.

Names as torchvision's ``mobilenet_v2`` (``features.0.0``, ``features.1.conv.0.0``,
``classifier.1``), so its state_dicts load. ``small_input=True`` keeps the first two
strides at 1 (28x28 digits would otherwise reach 1x1 after four halvings).
"""
import torch
from torch import nn

# expansion t, output channels c, repeats n, first stride s: the paper's table 2
SETTINGS = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
            (6, 160, 3, 2), (6, 320, 1, 1))


def _divisible(v, divisor=8):
    """``v`` rounded to a multiple of ``divisor``, never more than 10% below ``v``."""
    new = max(divisor, int(v + divisor / 2) // divisor * divisor)
    return new + divisor if new < 0.9 * v else new


def conv_bn_relu6(cin, cout, kernel=3, stride=1, groups=1):
    """Convolution, batch norm, ReLU6: torchvision's ``Conv2dNormActivation`` layout."""
    return nn.Sequential(nn.Conv2d(cin, cout, kernel, stride, (kernel - 1) // 2, groups=groups, bias=False),
                         nn.BatchNorm2d(cout), nn.ReLU6(inplace=True))


class InvertedResidual(nn.Module):
    """Expand to ``expand_ratio`` times the channels, filter each channel on its own, project
    back down without a nonlinearity (it would destroy information in the narrow
    representation); the input is added when the shape is unchanged."""

    def __init__(self, cin, cout, stride, expand_ratio):
        super().__init__()
        hidden = int(round(cin * expand_ratio))
        self.use_res_connect = stride == 1 and cin == cout
        layers = [conv_bn_relu6(cin, hidden, kernel=1)] if expand_ratio != 1 else []
        layers += [conv_bn_relu6(hidden, hidden, stride=stride, groups=hidden),
                   nn.Conv2d(hidden, cout, 1, bias=False), nn.BatchNorm2d(cout)]
        self.conv = nn.Sequential(*layers)

    def forward(self, x):
        return x + self.conv(x) if self.use_res_connect else self.conv(x)


class MobileNetV2(nn.Module):
    """A 3x3 stem, the seventeen inverted residual blocks of ``SETTINGS``, a 1x1 convolution
    to 1280 channels, a global average pool and a dropout-then-linear classifier.
    ``width_mult`` scales every layer's channels."""

    def __init__(self, num_classes=1000, in_channels=3, width_mult=1.0, small_input=False, dropout=0.2):
        super().__init__()
        cin = _divisible(32 * width_mult)
        self.last_channel = _divisible(1280 * max(1.0, width_mult))
        features = [conv_bn_relu6(in_channels, cin, stride=1 if small_input else 2)]
        for k, (t, c, n, s) in enumerate(SETTINGS):
            cout = _divisible(c * width_mult)
            stride = 1 if small_input and k == 1 else s
            for i in range(n):
                features.append(InvertedResidual(cin, cout, stride if i == 0 else 1, t))
                cin = cout
        features.append(conv_bn_relu6(cin, self.last_channel, kernel=1))
        self.features = nn.Sequential(*features)
        self.classifier = nn.Sequential(nn.Dropout(dropout), nn.Linear(self.last_channel, num_classes))
        for m in self.modules():  # torchvision's initialisation
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out")
            elif isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, 0, 0.01)
                nn.init.zeros_(m.bias)

    def forward(self, x):
        x = nn.functional.adaptive_avg_pool2d(self.features(x), (1, 1))
        return self.classifier(torch.flatten(x, 1))


def mobilenet_v2(num_classes=1000, in_channels=3, width_mult=1.0, small_input=False, dropout=0.2):
    """MobileNetV2 as in the paper (``width_mult=1.0``); see ``MobileNetV2``."""
    return MobileNetV2(num_classes, in_channels, width_mult, small_input, dropout)
