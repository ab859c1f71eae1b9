"""A character-level LSTM language model: an embedding, a multi-layer LSTM and a linear
read-out, which shares the embedding's weights when their sizes agree."""
import torch
from torch import nn
from torch.nn import functional as F


class LSTMLanguageModel(nn.Module):
    """``forward(idx, state=None)`` gives next-token logits (B, T, vocab_size) and the LSTM's
    final ``(h, c)``, which a following call can continue from (truncated backpropagation
    through time, or decoding one character at a time)."""

    def __init__(self, vocab_size, n_embd=128, hidden_size=256, num_layers=2, dropout=0.0, tie_weights=True):
        super().__init__()
        self.encoder = nn.Embedding(vocab_size, n_embd)
        self.drop = nn.Dropout(dropout)
        self.rnn = nn.LSTM(n_embd, hidden_size, num_layers, batch_first=True, dropout=dropout,
                           proj_size=n_embd if tie_weights and hidden_size != n_embd else 0)
        self.decoder = nn.Linear(n_embd if tie_weights else hidden_size, vocab_size)
        if tie_weights:  # the LSTM's output has the embedding's width (projected if need be)
            self.decoder.weight = self.encoder.weight

    def forward(self, idx, state=None):
        out, state = self.rnn(self.drop(self.encoder(idx)), state)
        return self.decoder(self.drop(out)), state

    def generate(self, idx, max_new_tokens, temperature=1.0, top_k=None, generator=None):
        """Continue ``idx`` (B, T) by ``max_new_tokens`` sampled tokens, carrying the LSTM's
        state from one character to the next (``temperature`` and ``top_k`` as GPT's)."""
        if temperature <= 0:
            raise ValueError(f"LSTMLanguageModel.generate: temperature must be positive, got {temperature}")
        with torch.no_grad():
            feed, state = idx, None
            for _ in range(max_new_tokens):
                logits, state = self(feed, state)
                logits = logits[:, -1, :] / temperature
                if top_k is not None:
                    kth = torch.topk(logits, min(top_k, logits.shape[-1])).values[:, -1:]
                    logits = logits.masked_fill(logits < kth, float("-inf"))
                feed = torch.multinomial(F.softmax(logits, dim=-1), 1, generator=generator)
                idx = torch.cat([idx, feed], dim=1)
        return idx
