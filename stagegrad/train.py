"""``stagegrad train``: train on MNIST with any installed stage.

The same program runs on every stage: only ``sg`` changes. Progress shows live loss and
throughput; the summary gives test accuracy, samples/s and wall time. ``--save`` writes a
checkpoint after every epoch and ``--resume`` continues from one, bit for bit: the
shuffling generator's state travels in the checkpoint.
"""
import time

from . import load_stage
from .progress import Progress


def build_model(sg, kind):
    nn = sg.nn
    if kind == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))
    if kind == "cnn":  # LeNet-style
        return nn.Sequential(
            nn.Conv2d(1, 8, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 5), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(16 * 5 * 5, 120), nn.ReLU(), nn.Linear(120, 10))
    raise ValueError(f"unknown model {kind!r}: expected 'mlp' or 'cnn'")


def add_arguments(p):
    p.add_argument("--stage", default="0", help="stage number or package (default 0)")
    p.add_argument("--model", default="mlp", choices=["mlp", "cnn"])
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=1e-3, help="AdamW learning rate")
    p.add_argument("--weight-decay", type=float, default=0.0)
    p.add_argument("--subset", type=_count, default=6000,
                   help="train on the first N training images, or 'all' (default: 6000, which "
                        "keeps the pure-Python stages to about a minute per epoch)")
    p.add_argument("--test-subset", type=int, default=None,
                   help="evaluate on the first N test images (default: all 10,000)")
    p.add_argument("--data", default=None, help="directory holding the MNIST IDX files")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--save", default=None, help="write a checkpoint here after every epoch")
    p.add_argument("--resume", default=None, help="continue from this checkpoint")


def _count(text):
    if text == "all":
        return None
    n = int(text)
    if n < 1:
        raise ValueError(f"expected a positive count or 'all', got {text}")
    return n


def evaluate(sg, model, dataset, batch_size=500):
    model.eval()
    correct = 0
    loader = sg.data.DataLoader(dataset, batch_size=batch_size)
    bar = Progress(len(loader), "  test")
    with sg.no_grad():
        for i, (x, y) in enumerate(loader, 1):
            correct += (model(x).argmax(dim=1) == y).sum().item()
            bar.update(i, acc=correct / min(i * batch_size, len(dataset)))
    return correct / len(dataset)


def run(args):
    sg = load_stage(args.stage)
    if args.epochs < 1 or args.batch_size < 1:
        raise ValueError("--epochs and --batch-size must be positive")
    train_set = sg.datasets.MNIST(root=args.data, train=True)
    test_set = sg.datasets.MNIST(root=args.data, train=False)
    if args.subset is not None:
        train_set = sg.data.Subset(train_set, range(min(args.subset, len(train_set))))
    if args.test_subset is not None:
        test_set = sg.data.Subset(test_set, range(min(args.test_subset, len(test_set))))

    sg.manual_seed(args.seed)
    model = build_model(sg, args.model)
    opt = sg.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    shuffle = sg.Generator(args.seed)
    start_epoch = 0
    if args.resume:
        ckpt = sg.load(args.resume)
        if ckpt.get("model_kind") != args.model:
            raise ValueError(f"{args.resume} holds a {ckpt.get('model_kind')!r} model, not {args.model!r}")
        model.load_state_dict(ckpt["model"])
        opt.load_state_dict(ckpt["optimizer"])
        shuffle.set_state(ckpt["shuffle_state"])
        start_epoch = ckpt["epoch"]
        print(f"resumed from {args.resume} after epoch {start_epoch}")
    loader = sg.data.DataLoader(train_set, batch_size=args.batch_size, shuffle=True, generator=shuffle)

    print(f"stage {sg.__name__}, model {args.model} ({sum(p.numel() for p in model.parameters()):,} "
          f"parameters), {len(train_set):,} training images, batch {args.batch_size}")
    wall = time.perf_counter()
    train_time, seen, loss_value = 0.0, 0, float("nan")
    for epoch in range(start_epoch, args.epochs):
        model.train()
        bar = Progress(len(loader), f"epoch {epoch + 1}/{args.epochs}")
        t0 = time.perf_counter()
        for i, (x, y) in enumerate(loader, 1):
            loss = sg.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            loss_value = loss.item()
            seen += x.shape[0]
            bar.update(i, loss=loss_value, **{"samples/s": seen / (train_time + time.perf_counter() - t0)})
        train_time += time.perf_counter() - t0
        if args.save:
            sg.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": epoch + 1,
                     "model_kind": args.model, "shuffle_state": shuffle.get_state()}, args.save)
            print(f"checkpoint written to {args.save}")
    accuracy = evaluate(sg, model, test_set)
    wall = time.perf_counter() - wall
    summary = {"stage": sg.__name__, "model": args.model, "train_images_seen": seen,
               "final_loss": loss_value, "test_accuracy": accuracy,
               "samples_per_s": seen / train_time if train_time else float("nan"), "wall_s": wall}
    print(f"test accuracy {accuracy:.2%} on {len(test_set):,} images | final train loss "
          f"{loss_value:.4f} | {summary['samples_per_s']:.0f} samples/s | wall time {wall:.1f} s")
    return summary
