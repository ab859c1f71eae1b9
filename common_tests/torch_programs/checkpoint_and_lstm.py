"""An LSTM reached through torch.nn.modules.rnn, saved with torch.save (its state dict in a
dict, and the whole module) and loaded back; DistributedDataParallel imported as a
data-parallel program does."""
import os
import sys

import torch
import torch.nn.modules.rnn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import Dataset


class Sequences(Dataset):
    """Fixed sequences: a Dataset of the program's own."""

    def __len__(self):
        return 3

    def __getitem__(self, i):
        return torch.linspace(-1.0 + i, 1.0 + i, 10).reshape(5, 2) / 3


def fill(model):
    with torch.no_grad():
        for i, p in enumerate(model.parameters()):
            p.copy_(torch.linspace(-0.3, 0.3 + 0.05 * i, p.numel()).reshape(p.shape))


def main(folder):
    lstm = torch.nn.modules.rnn.LSTM(input_size=2, hidden_size=3, batch_first=True)
    fill(lstm)
    batch = torch.stack([Sequences()[i] for i in range(len(Sequences()))])
    out, (h, c) = lstm(batch)
    print("lstm", *[round(v, 5) for v in h.flatten().tolist()])
    path = os.path.join(folder, "checkpoint.pt")
    torch.save({"epoch": 3, "model": lstm.state_dict(), "note": "lstm"}, path)
    loaded = torch.load(path)
    fresh = torch.nn.LSTM(input_size=2, hidden_size=3, batch_first=True)
    fresh.load_state_dict(loaded["model"])
    again, _ = fresh(batch)
    print("reloaded", loaded["epoch"], loaded["note"], bool(torch.equal(again, out)), sorted(loaded["model"])[:2])
    whole = os.path.join(folder, "model.pt")
    torch.save(lstm, whole)  # the whole module, as the word-language-model example saves it
    model = torch.load(whole, weights_only=False)
    print("whole module", type(model).__name__, bool(torch.equal(model(batch)[0], out)))
    print("data parallel", DistributedDataParallel.__name__, issubclass(DistributedDataParallel, torch.nn.Module))


if __name__ == "__main__":
    main(sys.argv[1])
