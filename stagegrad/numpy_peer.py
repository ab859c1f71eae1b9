"""NumPy as a peer: the journey's workloads written directly in NumPy.

NumPy has no autograd, so the backward passes here are written out by hand. These are
reference points measured in the same run as the stages; no stage ever calls them.
"""
import numpy as np
from numpy.lib.stride_tricks import sliding_window_view


class AdamW:
    """PyTorch's AdamW arithmetic (decoupled weight decay, bias-corrected moments)."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
        self.params, self.lr, self.betas, self.eps, self.wd = params, lr, betas, eps, weight_decay
        self.m = [np.zeros_like(p) for p in params]
        self.v = [np.zeros_like(p) for p in params]
        self.t = 0

    def step(self, grads):
        self.t += 1
        b1, b2 = self.betas
        c1, c2 = 1 - b1 ** self.t, 1 - b2 ** self.t
        for p, g, m, v in zip(self.params, grads, self.m, self.v):
            p *= np.float32(1 - self.lr * self.wd)
            m += (1 - b1) * (g - m)
            v *= b2
            v += (1 - b2) * g * g
            p -= (self.lr / c1) * m / (np.sqrt(v) / np.sqrt(c2) + self.eps)


class MLP:
    """784-128-10 with ReLU, cross-entropy on class indices, an AdamW step."""

    def __init__(self, params, lr=1e-3):
        self.w1, self.b1, self.w2, self.b2 = (params[k].copy() for k in ("0.weight", "0.bias",
                                                                        "2.weight", "2.bias"))
        self.opt = AdamW([self.w1, self.b1, self.w2, self.b2], lr=lr)

    def step(self, x, y):
        """One training step; returns the loss before the update."""
        h = x @ self.w1.T + self.b1
        a = np.maximum(h, 0)
        logits = a @ self.w2.T + self.b2
        shifted = logits - logits.max(axis=1, keepdims=True)
        e = np.exp(shifted)
        s = e.sum(axis=1, keepdims=True)
        n = len(y)
        rows = np.arange(n)
        loss = float(np.mean(np.log(s[:, 0]) - shifted[rows, y]))
        g = e / s
        g[rows, y] -= 1
        g /= n
        gw2, gb2 = g.T @ a, g.sum(axis=0)
        ga = g @ self.w2
        ga *= h > 0
        gw1, gb1 = ga.T @ x, ga.sum(axis=0)
        self.opt.step([gw1, gb1, gw2, gb2])
        return loss


def conv2d_forward(x, w, b, padding):
    """``conv2d(x, w, b)`` with stride 1 by im2col; returns the output and the columns."""
    kh, kw = w.shape[2:]
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    cols = sliding_window_view(xp, (kh, kw), axis=(2, 3))  # (B, C, H, W, kh, kw), a view
    y = np.einsum("bchwij,ocij->bohw", cols, w, optimize=True) + b[None, :, None, None]
    return y, cols


def conv2d_forward_backward(x, w, b, padding):
    """``y = conv2d(x, w, b)`` (stride 1) and the gradients of ``y.sum()``.

    Returns ``(y, grad_x, grad_w, grad_b)``.
    """
    kh, kw = w.shape[2:]
    y, cols = conv2d_forward(x, w, b, padding)
    gy = np.ones_like(y)
    gw = np.einsum("bohw,bchwij->ocij", gy, cols, optimize=True)
    gb = gy.sum(axis=(0, 2, 3))
    gcols = np.einsum("bohw,ocij->bchwij", gy, w, optimize=True)
    h, wd = y.shape[2], y.shape[3]
    gxp = np.zeros((x.shape[0], x.shape[1], h + kh - 1, wd + kw - 1), dtype=x.dtype)
    for i in range(kh):  # col2im: scatter every kernel offset back
        for j in range(kw):
            gxp[:, :, i:i + h, j:j + wd] += gcols[..., i, j]
    gx = gxp[:, :, padding:padding + x.shape[2], padding:padding + x.shape[3]]
    return y, gx, gw, gb
