"""The workloads the device commands time (``devices``, and ``null_launch`` for the cuda
device's host cost): each ``build(sg, device, size)`` returns the call to time."""

MLP = (784, 256, 10)


def pair(sg, dev, *shape):
    """Two random tensors of ``shape`` on ``dev``."""
    return sg.randn(*shape, device=dev), sg.randn(*shape, device=dev)


def add(sg, dev, n):
    """``a + b`` on two vectors of ``n`` elements."""
    a, b = pair(sg, dev, n)
    return lambda: a + b


def matmul(sg, dev, n):
    """``a @ b`` on two ``n`` x ``n`` matrices."""
    a, b = pair(sg, dev, n, n)
    return lambda: a @ b


def mlp_step(sg, dev, batch):
    """One SGD step of a 784-256-10 MLP with ReLU on a batch of ``batch``."""
    sg.manual_seed(0)
    nn = sg.nn
    model = nn.Sequential(nn.Linear(MLP[0], MLP[1]), nn.ReLU(), nn.Linear(MLP[1], MLP[2])).to(dev)
    x, y = sg.randn(batch, MLP[0], device=dev), sg.randint(0, MLP[2], (batch,), device=dev)
    return _sgd_step(sg, model, x, y)


def cnn_step(sg, dev, batch):
    """One SGD step of a small CNN (3x3 convolution to 8 channels, ReLU, max pool, linear) on 28x28 images."""
    sg.manual_seed(0)
    nn = sg.nn
    model = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                          nn.Linear(8 * 14 * 14, 10)).to(dev)
    x, y = sg.randn(batch, 1, 28, 28, device=dev), sg.randint(0, 10, (batch,), device=dev)
    return _sgd_step(sg, model, x, y)


def _sgd_step(sg, model, x, y):
    """One call: forward, cross-entropy against ``y``, backward and an SGD step (lr 0.01)."""
    opt = sg.optim.SGD(model.parameters(), lr=0.01)

    def step():
        loss = sg.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return step
