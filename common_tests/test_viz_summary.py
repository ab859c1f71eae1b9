"""Introspection: ``sg.viz.graph`` (the autograd graph as DOT text, rendered by Graphviz
when installed) and ``sg.nn.summary`` (torchinfo's table, compared with torchinfo 1.8 on
the same architectures built in PyTorch)."""
import re
import shutil
import subprocess
from collections import Counter

import pytest

from .oracle import need_torch

DOT = shutil.which("dot")
NO_DOT = "Graphviz's dot program is not installed: the DOT text cannot be rendered here"


# ------------------------------------------------------------------ the graph

def parse_dot(text):
    """A minimal reading of the DOT we write: {id: [label lines]} and [(src, dst, label)]."""
    assert text.startswith("digraph autograd {") and text.rstrip().endswith("}")
    label = r'"((?:[^"\\]|\\.)*)"'
    nodes = {m[1]: m[2].split("\\n") for m in re.finditer(r'^  (\w+) \[label=' + label, text, re.M)}
    edges = [(m[1], m[2], m[3]) for m in
             re.finditer(r'^  (\w+) -> (\w+)(?: \[label=" ((?:[^"\\]|\\.)*)"\])?', text, re.M)]
    for src, dst, _ in edges:
        assert src in nodes and dst in nodes, f"edge {src} -> {dst} names an undeclared node"
    return nodes, edges


def walk(root):
    """Every node of the graph behind ``root`` (a grad_fn), each once."""
    seen, stack = {id(root): root}, [root]
    while stack:
        for edge in stack.pop().next_edges:
            if edge is not None and id(edge[0]) not in seen:
                seen[id(edge[0])] = edge[0]
                stack.append(edge[0])
    return list(seen.values())


def meta(t):
    return ("x".join(map(str, t.shape)) or "scalar") + " " + t.dtype.name


def mlp_loss(sg):
    model = sg.nn.Sequential(sg.nn.Linear(4, 3), sg.nn.ReLU(), sg.nn.Linear(3, 2))
    outputs = []
    for layer in model:
        layer.register_forward_hook(lambda m, args, out: outputs.append(out))
    x = sg.randn(5, 4)
    loss = sg.nn.functional.cross_entropy(model(x), sg.tensor([0, 1, 0, 1, 1]))
    return model, outputs, loss


def test_mlp_graph(sg):
    model, outputs, loss = mlp_loss(sg)
    params = dict(model.named_parameters())
    nodes, edges = parse_dot(str(sg.viz.graph(loss, params=params)))
    graph = walk(loss.grad_fn)
    # one DOT node per Function application, with its grad_fn's name
    names = Counter(n.name() for n in graph)
    shown = Counter(label[0].split(" (")[0] for nid, label in nodes.items() if nid.startswith("n")
                    and not nid.endswith("_leaf") and "_s" not in nid)
    assert shown == names
    # every parameter: a leaf named from params, with its shape, into its AccumulateGrad
    labels = {nid: label for nid, label in nodes.items()}
    for name, p in params.items():
        (leaf,) = [nid for nid, label in labels.items() if label == [name, meta(p)]]
        (acc,) = [dst for src, dst, _ in edges if src == leaf]
        assert labels[acc] == ["AccumulateGrad"]
        assert {lab for src, _, lab in edges if src == acc} == {meta(p)}
    assert names["AccumulateGrad"] == len(params)
    # the output node, fed by the loss's grad_fn with the loss's shape
    (out,) = [nid for nid, label in labels.items() if label[0] == "output"]
    assert labels[out] == ["output", "scalar float32"]
    assert [lab for _, dst, lab in edges if dst == out] == ["scalar float32"]
    # each layer's output, where it is in the graph, flows out of its grad_fn with its shape
    by_name = {}
    for src, _, lab in edges:
        by_name.setdefault(labels[src][0].split(" (")[0], set()).add(lab)
    checked = 0
    for t in outputs:
        if t.grad_fn is not None and any(t.grad_fn is n for n in graph):
            assert meta(t) in by_name[t.grad_fn.name()]
            checked += 1
    assert checked >= 1
    assert "5x2 float32" in {lab for _, _, lab in edges}  # the logits reach the loss


def test_function_once_per_application_and_saved_tensors(sg):
    class Double(sg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    w = sg.randn(3, 4, requires_grad=True)
    y = Double.apply(Double.apply(w)).sum()
    nodes, edges = parse_dot(str(sg.viz.graph(y)))
    assert sum(label == ["DoubleBackward"] for label in nodes.values()) == 2
    assert ["leaf", "3x4 float32"] in nodes.values()  # no params: named by shape
    saved = [label for label in nodes.values() if label[0].startswith("saved")]
    assert saved == [["saved 0", "3x4 float32"]] * 2
    bare, _ = parse_dot(str(sg.viz.graph(y, show_saved=False)))
    assert not any(label[0].startswith("saved") for label in bare.values())


def test_deterministic_and_escaped(sg):
    def picture():
        sg.manual_seed(0)
        model, _, loss = mlp_loss(sg)
        odd = {'we"ird\\name\nline': p for p in model.parameters()}  # one odd name, the last parameter
        return str(sg.viz.graph(loss, params={**dict(model.named_parameters()), **odd}))

    first = picture()
    assert picture() == first  # no addresses or dict order leak into the text
    assert ', we\\"ird\\\\name\\nline' in first
    assert 'we"ird' not in first.replace('\\"', "")
    parse_dot(first)


def test_not_recorded(sg):
    with pytest.raises(ValueError, match="does not require grad"):
        sg.viz.graph(sg.randn(2, 2) * 2)
    with pytest.raises(TypeError):
        sg.viz.graph([1.0])


@pytest.mark.skipif(DOT is None, reason=NO_DOT)
def test_renders_with_dot(sg, tmp_path):
    _, _, loss = mlp_loss(sg)
    g = sg.viz.graph(loss)
    assert g.render(tmp_path / "g.svg") == tmp_path / "g.svg"
    assert "<svg" in (tmp_path / "g.svg").read_text()
    g.render(tmp_path / "g.png", format="png")
    assert (tmp_path / "g.png").read_bytes().startswith(b"\x89PNG")
    assert "<svg" in g._repr_svg_()
    # Graphviz reads back as many nodes and edges as we wrote
    nodes, edges = parse_dot(g.source)
    plain = subprocess.run([DOT, "-Tplain"], input=g.source, capture_output=True, text=True,
                           check=True).stdout
    kinds = Counter(line.split()[0] for line in plain.splitlines())
    assert kinds["node"] == len(nodes) and kinds["edge"] == len(edges)


def test_render_without_dot(sg, tmp_path, monkeypatch):
    _, _, loss = mlp_loss(sg)
    g = sg.viz.graph(loss)
    monkeypatch.setattr(sg.viz.shutil, "which", lambda name: None)
    with pytest.raises(sg.viz.GraphvizNotFoundError, match="apt install graphviz"):
        g.render(tmp_path / "g.svg")
    assert g._repr_svg_() is None
    assert str(g).startswith("digraph")  # the text needs nothing


# ------------------------------------------------------------------ the summary

def tied_model(nn):
    """An embedding whose weight the output layer shares, a layer called twice, a
    ModuleList that is never called itself."""
    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(10, 4)
            self.out = nn.Linear(4, 10, bias=False)
            self.out.weight = self.emb.weight
            self.act = nn.Tanh()
            self.blocks = nn.ModuleList([nn.Linear(4, 4), nn.Linear(4, 4)])

        def forward(self, x):
            h = self.act(self.emb(x))
            for block in self.blocks:
                h = self.act(block(h))
            return self.out(h)
    return Tied()


def frozen(nn):
    model = nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3))
    model[0].weight.requires_grad_(False)
    return model


ALL_COLUMNS = ("input_size", "output_size", "num_params", "params_percent", "kernel_size", "mult_adds",
               "trainable")
SUMMARY_CASES = {
    "mlp": (lambda nn: nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2)), dict(input_size=(5, 4))),
    "cnn_batchnorm": (lambda nn: nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
        nn.Linear(64, 10)), dict(input_size=(2, 1, 8, 8), col_names=ALL_COLUMNS)),
    "nested": (lambda nn: nn.Sequential(
        nn.Sequential(nn.Linear(4, 8), nn.Sequential(nn.Linear(8, 8), nn.Tanh())), nn.Linear(8, 2)),
        dict(input_size=[(3, 4)], depth=2)),
    "nested_deep": (lambda nn: nn.Sequential(nn.Sequential(nn.Linear(4, 8), nn.Sequential(nn.Linear(8, 8))),
                                             nn.Linear(8, 2)), dict(input_size=(3, 4), col_names=ALL_COLUMNS,
                                                                     row_settings=("var_names", "depth"))),
    "tied": (tied_model, dict(input_data="ids", col_names=ALL_COLUMNS)),
    "rnn": (lambda nn: nn.Sequential(nn.RNN(4, 6, batch_first=True)), dict(input_size=(2, 3, 4))),
    "lstm": (lambda nn: nn.LSTM(4, 5, num_layers=2, batch_first=True), dict(input_size=(2, 3, 4), verbose=2)),
    "frozen": (frozen, dict(input_size=(5, 4), col_names=("num_params", "trainable", "params_percent"))),
    "no_input": (lambda nn: nn.Sequential(nn.Linear(4, 3), nn.Sequential(nn.ReLU(), nn.Linear(3, 2))),
                 dict()),
}


@pytest.mark.parametrize("case", SUMMARY_CASES)
def test_summary_against_torchinfo(sg, case, capsys):
    torch = need_torch()
    torchinfo = pytest.importorskip("torchinfo")
    build, options = SUMMARY_CASES[case]
    ours_kw, theirs_kw = dict(options), dict(options)
    if options.get("input_data") == "ids":
        ours_kw["input_data"] = [sg.zeros(2, 3, dtype=sg.int64)]
        theirs_kw["input_data"] = [torch.zeros(2, 3, dtype=torch.int64)]
    theirs = torchinfo.summary(build(torch.nn), **theirs_kw)
    expected_out = capsys.readouterr().out
    ours = sg.nn.summary(build(sg.nn), **ours_kw)
    assert capsys.readouterr().out == str(ours) + "\n"  # printed, as torchinfo prints
    assert (ours.total_params, ours.trainable_params, ours.non_trainable_params, ours.total_mult_adds,
            ours.total_param_bytes, ours.total_output_bytes) == \
        (theirs.total_params, theirs.trainable_params, theirs.total_params - theirs.trainable_params,
         theirs.total_mult_adds, theirs.total_param_bytes, theirs.total_output_bytes)
    rows = [(r.class_name, r.depth, r.depth_index, r.output_size, r.num_params, r.is_recursive)
            for r in ours.summary_list]
    assert rows == [(r.class_name, r.depth, r.depth_index, list(r.output_size), r.num_params, r.is_recursive)
                    for r in theirs.summary_list]
    # torchinfo on Python 3.11+ prints its unit enum as "Units.MEGABYTES" where it means "M"
    assert str(ours) == str(theirs).replace("(Units.MEGABYTES)", "(M)")
    printed = str(ours) + "\n" if options.get("verbose", 1) else ""
    assert expected_out.replace("(Units.MEGABYTES)", "(M)") == printed


def test_summary_quiet_and_errors(sg, capsys):
    model = sg.nn.Sequential(sg.nn.Linear(4, 3))
    stats = sg.nn.summary(model, input_size=(2, 4), verbose=0)
    assert capsys.readouterr().out == ""
    assert stats.total_params == 15 and "Total params: 15" in str(stats)
    assert model.training  # the pass ran in eval mode, and the mode came back
    assert not model[0]._forward_hooks and not model[0]._forward_pre_hooks  # hooks removed
    with pytest.raises(ValueError, match="not both"):
        sg.nn.summary(model, input_size=(2, 4), input_data=sg.randn(2, 4))
    with pytest.raises(ValueError, match="unknown columns"):
        sg.nn.summary(model, input_size=(2, 4), col_names=("bogus",))


def test_to_graphviz(sg, monkeypatch):
    """The graph as the graphviz package's Source: the same DOT text, and where Graphviz's
    dot program is installed, the package draws it with every node and edge we wrote."""
    graphviz = pytest.importorskip("graphviz", reason="the graphviz package is not installed "
                                                      "(pip install -e '.[test]' installs it)")
    _, _, loss = mlp_loss(sg)
    g = sg.viz.graph(loss)
    source = g.to_graphviz()
    assert isinstance(source, graphviz.Source) and source.source == g.source
    if DOT is not None:
        nodes, edges = parse_dot(g.source)
        plain = source.pipe(format="plain", encoding="utf-8")
        kinds = Counter(line.split()[0] for line in plain.splitlines())
        assert kinds["node"] == len(nodes) and kinds["edge"] == len(edges)
        assert "<svg" in source.pipe(format="svg", encoding="utf-8")
    monkeypatch.setitem(__import__("sys").modules, "graphviz", None)
    with pytest.raises(ImportError, match=r"stagegrad\[graphviz\]"):
        g.to_graphviz()
