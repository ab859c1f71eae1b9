"""Train a small MLP for a few epochs: a DataLoader over a TensorDataset, a loss class of
its own on torch.nn.modules.loss._Loss, Adam with a StepLR schedule, gradient clipping."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.modules.dropout import Dropout
from torch.nn.modules.loss import _Loss
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import DataLoader, TensorDataset


class SmoothedMSE(_Loss):
    """Mean squared error plus a small L1 term: a loss class of the program's own."""

    def forward(self, input, target):
        return F.mse_loss(input, target, reduction=self.reduction) + 0.1 * F.l1_loss(input, target)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 16)
        self.drop = Dropout(0.5)
        self.fc2 = nn.Linear(16, 2)

    def forward(self, x):
        return self.fc2(self.drop(torch.tanh(self.fc1(x))))


def main():
    model = Net()
    with torch.no_grad():  # set, not drawn: every framework starts from the same weights
        for i, p in enumerate(model.parameters()):
            p.copy_(torch.linspace(-0.5, 0.5 + 0.1 * i, p.numel()).reshape(p.shape))
    x = torch.linspace(-1.0, 1.0, 256).reshape(64, 4)
    y = torch.stack([x.sum(dim=1).sin(), (x[:, 0] * x[:, 1]).cos()], dim=1)
    loader = DataLoader(TensorDataset(x, y), batch_size=16, shuffle=False)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    scheduler = StepLR(optimizer, step_size=2, gamma=0.5)
    loss_fn = SmoothedMSE()
    model.train()
    model.drop.p = 0.0  # no randomness: the frameworks draw different masks
    for epoch in range(4):
        total = 0.0
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(xb), yb)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            total += loss.item()
        scheduler.step()
        print("epoch", epoch, "loss", round(total / len(loader), 6), "lr", scheduler.get_last_lr()[0])
    model.eval()
    with torch.no_grad():
        out = model(x[:3])
    print("outputs", *[round(v, 5) for v in out.flatten().tolist()])
    print("parameters", sum(p.numel() for p in model.parameters()), type(model.drop).__name__)


if __name__ == "__main__":
    main()
