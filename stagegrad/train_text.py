"""``stagegrad train --model gpt`` (or ``lstm``): a character-level language model on
Shakespeare's plays, and ``stagegrad sample``: text from its checkpoint.

Training draws ``--batch-size`` random windows of ``--context`` characters from the
training split each step (next-character targets), with AdamW and a cosine learning rate
over ``--steps``; clipping the gradient norm at 1 keeps the early steps of a transformer
stable. Every ``--eval-every`` steps, and at the end, the validation loss (nats per
character) is the mean over the same ``--eval-batches`` windows of the validation split,
so numbers from two stages or from PyTorch compare directly. ``--time-limit`` ends the
run early, with a final evaluation. ``--save`` writes a checkpoint at every evaluation
holding the model's configuration and vocabulary, which ``stagegrad sample`` rebuilds the
model from, and which ``--resume`` continues (the step, the optimizer, the schedule and
the batch generator's state travel in it). ``--stage torch`` runs the same program, and
the same zoo model, on PyTorch.
"""
import math
import time

from . import datafiles, installed_text, load_stage, stage_type, zoo
from . import train_parts as P
from .progress import Progress, seconds, stat

_CONFIG = {"gpt": ("context", "n_layer", "n_head", "n_embd", "n_kv_head", "positions", "dropout"),
           "lstm": ("n_embd", "hidden", "n_layer", "dropout")}
_KEYS = ("model", "optimizer", "scheduler", "step", "model_kind", "config", "vocab", "shuffle_state")


def add_arguments(g):
    """The language models' options, in their own group of ``stagegrad train --help``."""
    g.add_argument("--steps", type=P.positive, default=2000, help="optimizer steps (default 2000)")
    g.add_argument("--context", type=P.positive, default=64,
                   help="characters per training window, the GPT's context (default 64)")
    g.add_argument("--n-layer", type=P.positive, default=4,
                   help="transformer or LSTM layers (default 4)")
    g.add_argument("--n-head", type=P.positive, default=4, help="attention heads (default 4)")
    g.add_argument("--n-kv-head", type=P.positive, default=None,
                   help="key/value heads for grouped-query attention (default: --n-head)")
    g.add_argument("--n-embd", type=P.positive, default=128, help="embedding width (default 128)")
    g.add_argument("--hidden", type=P.positive, default=256, help="the LSTM's hidden size (default 256)")
    g.add_argument("--positions", choices=("learned", "rotary", "sinusoidal"), default="learned",
                   help="the GPT's position encoding (default learned)")
    g.add_argument("--dropout", type=_probability, default=0.0, help="dropout probability (default 0)")
    g.add_argument("--eval-every", type=P.positive, default=250,
                   help="steps between validation evaluations (default 250)")
    g.add_argument("--eval-batches", type=P.positive, default=20,
                   help="batches of the validation split per evaluation (default 20)")
    g.add_argument("--time-limit", type=_seconds, default=None,
                   help="stop training after this many seconds, then evaluate (default: none)")
    g.add_argument("--max-chars", type=P.count, default=None,
                   help="use only the first N characters of the corpus (default: all of it)")
    g.add_argument("--sample", type=_non_negative, default=0,
                   help="characters to generate after training (default 0)")
    add_sampling_arguments(g)


def add_sampling_arguments(g):
    """Options shared by ``train --sample`` and ``sample``."""
    g.add_argument("--temperature", type=P.learning_rate, default=0.8,
                   help="divides the logits before sampling: lower is more conservative (default 0.8)")
    g.add_argument("--top-k", type=P.positive, default=10,
                   help="sample among the k most likely characters (default 10)")
    g.add_argument("--prompt", default="\n", help="text the sample continues (default: a new line)")


def _probability(text):
    return P.real(text, lambda x: 0 <= x < 1, "a probability in [0, 1)")


def _seconds(text):
    return P.real(text, lambda x: x > 0, "a positive number of seconds")


def _non_negative(text):
    return P.integer(text, 0, math.inf, "a count >= 0")


def build_model(sg, kind, vocab_size, config):
    """The zoo's GPT or LSTM language model on ``sg`` for a configuration dict."""
    z = zoo.models(sg)
    if kind == "gpt":
        return z.gpt.GPT(vocab_size, block_size=config["context"], n_layer=config["n_layer"],
                         n_head=config["n_head"], n_embd=config["n_embd"], n_kv_head=config["n_kv_head"],
                         dropout=config["dropout"], positions=config["positions"])
    return z.lstm_lm.LSTMLanguageModel(vocab_size, n_embd=config["n_embd"], hidden_size=config["hidden"],
                                       num_layers=config["n_layer"], dropout=config["dropout"])


def logits_of(model, x):
    """Next-character logits (B, T, V): the LSTM also returns its state, dropped here."""
    out = model(x)
    return out[0] if isinstance(out, tuple) else out


def _loss(sg, logits, targets):
    """The mean next-character cross-entropy over every position of the batch."""
    return sg.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def get_batch(sg, tokens, batch_size, context, generator):
    """``batch_size`` random windows of ``tokens`` and the same windows one character on."""
    start = sg.randint(0, tokens.shape[0] - context, (batch_size,), generator=generator)
    index = start.unsqueeze(1) + sg.arange(context)
    return tokens[index], tokens[index + 1]


def train_step(sg, model, opt, schedule, x, y):
    """One optimizer step on the windows ``x`` and their targets ``y``, the gradient's norm
    clipped at 1, then ``schedule`` stepped (unless it is None). Returns the loss's value
    and the logits."""
    logits = logits_of(model, x)
    loss = _loss(sg, logits, y)
    opt.zero_grad()
    loss.backward()
    sg.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    if schedule is not None:
        schedule.step()
    return loss.item(), logits


def estimate_loss(sg, model, tokens, batch_size, context, batches):
    """The mean cross-entropy (nats per character) over ``batches`` fixed windows."""
    model.eval()
    generator = sg.Generator().manual_seed(1234)  # the same windows at every evaluation
    total = 0.0
    with sg.no_grad():
        for _ in range(batches):
            x, y = get_batch(sg, tokens, batch_size, context, generator)
            total += _loss(sg, logits_of(model, x), y).item()
    model.train()
    return total / batches


def corpus(sg, root, context, max_chars):
    """The training and validation token tensors on ``sg`` and the tokenizer. PyTorch has
    no Shakespeare reader: stage 0's reads the archive and hands over the ids."""
    source = load_stage("0").datasets if P.is_torch(sg) else sg.datasets
    splits = [source.Shakespeare(root, split, context, max_chars=max_chars) for split in ("train", "val")]
    if P.is_torch(sg):
        return [sg.tensor(s.tokens.tolist()) for s in splits] + [splits[0].tokenizer]
    return [s.tokens for s in splits] + [splits[0].tokenizer]


def run(args):
    sg = load_stage(args.stage, peers=True)
    kind = args.model
    config = {k: getattr(args, k) for k in _CONFIG[kind]}
    ckpt = _checkpoint(sg, args.resume, kind, config, args.steps) if args.resume else None
    root = datafiles.shakespeare_dir(args.data, args.download)
    print(f"data: Shakespeare from {root}")
    train_tokens, val_tokens, tokenizer = corpus(sg, root, args.context, args.max_chars)
    if ckpt is not None and ckpt["vocab"] != "".join(tokenizer.chars):
        raise ValueError(f"cannot resume from {args.resume}: it was trained on another vocabulary "
                         f"(use the --max-chars it was started with)")
    sg.manual_seed(args.seed)
    model = build_model(sg, kind, tokenizer.vocab_size, config)
    opt = sg.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    schedule = sg.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.steps)
    batches = sg.Generator().manual_seed(args.seed)
    step = 0
    if ckpt is not None:
        model.load_state_dict(ckpt["model"])
        opt.load_state_dict(ckpt["optimizer"])
        schedule.load_state_dict(ckpt["scheduler"])
        batches.set_state(ckpt["shuffle_state"])
        step = ckpt["step"]
        print(f"resumed from {args.resume} after step {step}")

    threads = sg.get_num_threads()
    name = f"torch (PyTorch {sg.__version__})" if P.is_torch(sg) else sg.__name__
    print(f"stage {name}, {threads} thread{'s' if threads != 1 else ''}, model {kind} "
          f"({sum(p.numel() for p in model.parameters()):,} parameters), {train_tokens.shape[0]:,} training "
          f"and {val_tokens.shape[0]:,} validation characters, vocabulary {tokenizer.vocab_size}, batch "
          f"{args.batch_size} x {args.context}, lr {args.lr:g} (cosine to 0 over {args.steps} steps)")

    def evaluate_and_save():
        loss = estimate_loss(sg, model, val_tokens, args.batch_size, args.context, args.eval_batches)
        if args.save:
            sg.save({"model": model.state_dict(), "optimizer": opt.state_dict(),
                     "scheduler": schedule.state_dict(), "step": step, "model_kind": kind, "config": config,
                     "vocab": "".join(tokenizer.chars), "shuffle_state": batches.get_state()}, args.save)
        return loss

    wall = time.perf_counter()
    bar = Progress(args.steps - step, "train")
    t0, seen, loss_value, val_loss, first = time.perf_counter(), 0, float("nan"), float("nan"), step
    model.train()
    while step < args.steps:
        x, y = get_batch(sg, train_tokens, args.batch_size, args.context, batches)
        loss_value, _ = train_step(sg, model, opt, schedule, x, y)
        step += 1
        seen += x.numel()
        elapsed = time.perf_counter() - t0
        out_of_time = args.time_limit is not None and elapsed >= args.time_limit
        bar.update(step - first, loss=loss_value, **{"chars/s": seen / elapsed})
        if step % args.eval_every == 0 or step == args.steps or out_of_time:
            val_loss = evaluate_and_save()
            print(f"step {step}: train loss {loss_value:.4f}, validation loss {val_loss:.4f} "
                  f"({seconds(time.perf_counter() - t0)})")
        if out_of_time:
            print(f"time limit of {args.time_limit:g} s reached after step {step} of {args.steps}")
            break
    train_time = time.perf_counter() - t0
    if step == first:  # a resumed run that had already finished
        val_loss = estimate_loss(sg, model, val_tokens, args.batch_size, args.context, args.eval_batches)
    wall = time.perf_counter() - wall
    summary = {"stage": sg.__name__, "model": kind, "steps": step, "final_loss": loss_value,
               "val_loss": val_loss, "chars_per_s": seen / train_time if seen else float("nan"),
               "wall_s": wall}
    print(f"validation loss {val_loss:.4f} nats/char | final train loss {loss_value:.4f} | "
          f"{stat('chars/s', summary['chars_per_s'])} | wall time {seconds(wall)}")
    if args.sample:
        summary["sample"] = generate(sg, model, tokenizer, args.prompt, args.sample, args.temperature,
                                     args.top_k, args.seed)
        print(summary["sample"])
    return summary


def generate(sg, model, tokenizer, prompt, chars, temperature, top_k, seed):
    """``prompt`` continued by ``chars`` sampled characters."""
    model.eval()
    idx = sg.tensor([tokenizer.encode(prompt or "\n")])
    out = model.generate(idx, chars, temperature=temperature, top_k=top_k,
                         generator=sg.Generator().manual_seed(seed))
    return tokenizer.decode(out[0].tolist())


def _checkpoint(sg, path, kind, config=None, steps=None):
    """The checkpoint at ``path``, checked to be a language model's that ``--save`` wrote
    (and, when resuming, for the same configuration and number of steps)."""
    try:
        ckpt = P.load_checkpoint(sg, path)
    except OSError as e:
        raise ValueError(f"cannot read {path}: {e.strerror or e}") from None
    if not isinstance(ckpt, dict) or not all(k in ckpt for k in _KEYS):
        raise ValueError(f"{path} is not a language-model checkpoint that 'stagegrad train --save' wrote "
                         f"(it holds {P.contents(ckpt)})")
    if kind is not None and ckpt["model_kind"] != kind:
        raise ValueError(f"{path} holds a {ckpt['model_kind']!r} model, not {kind!r}")
    if config is not None and ckpt["config"] != config:
        raise ValueError(f"cannot resume from {path}: it was trained with {ckpt['config']}, this run asks "
                         f"for {config}")
    if steps is not None and ckpt["scheduler"].get("T_max") != steps:
        raise ValueError(f"cannot resume from {path}: its schedule spans {ckpt['scheduler'].get('T_max')} "
                         f"steps and this run's {steps}; resume with the --steps it was started with")
    bad = P.bad_shuffle_state(sg, ckpt["shuffle_state"])
    if bad:
        raise ValueError(f"cannot resume from {path}: {bad}")
    return ckpt


def add_sample_arguments(p):
    """``stagegrad sample``'s options."""
    p.add_argument("checkpoint", help="a checkpoint 'stagegrad train --model gpt|lstm --save' wrote")
    p.add_argument("--stage", default="3", type=stage_type(peers=True),
                   help=f"stage number or package: {installed_text()} are installed here; or 'torch'. "
                        f"A checkpoint loads on the framework that wrote it (default 3)")
    p.add_argument("--chars", type=P.positive, default=500, help="characters to generate (default 500)")
    p.add_argument("--seed", type=P.seed, default=0, help="the sampling generator's seed (default 0)")
    add_sampling_arguments(p)


def sample(args):
    """Print text generated from a checkpoint."""
    sg = load_stage(args.stage, peers=True)
    ckpt = _checkpoint(sg, args.checkpoint, None)
    vocab = ckpt["vocab"]
    tokenizer = (load_stage("0").datasets if P.is_torch(sg) else sg.datasets).CharTokenizer(vocab)
    model = build_model(sg, ckpt["model_kind"], tokenizer.vocab_size, ckpt["config"])
    model.load_state_dict(ckpt["model"])
    text = generate(sg, model, tokenizer, args.prompt, args.chars, args.temperature, args.top_k, args.seed)
    print(text)
    return text
