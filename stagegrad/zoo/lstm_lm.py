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

    def stream(self, idx, max_new_tokens, temperature=1.0, top_k=None, generator=None):
        """Yield the ``max_new_tokens`` sampled tokens (B, 1) that continue ``idx`` (B, T), one at
        a time, carrying the LSTM's state from one character to the next (``temperature`` and
        ``top_k`` as GPT's)."""
        if temperature <= 0:
            raise ValueError(f"LSTMLanguageModel.generate: temperature must be positive, got {temperature}")
        feed, state = idx, None
        for _ in range(max_new_tokens):
            with torch.no_grad():  # per token: the caller runs between tokens in its own grad mode
                logits, state = self(feed, state)
                logits = logits[:, -1, :] / temperature
                if top_k is not None:
                    kth = torch.topk(logits, min(top_k, logits.shape[-1])).values[:, -1:]
                    logits = logits.masked_fill(logits < kth, float("-inf"))
                feed = torch.multinomial(F.softmax(logits, dim=-1), 1, generator=generator)
            yield feed

    def generate(self, idx, max_new_tokens, temperature=1.0, top_k=None, generator=None):
        """``idx`` (B, T) continued by ``max_new_tokens`` tokens that ``stream`` samples."""
        tokens = list(self.stream(idx, max_new_tokens, temperature, top_k, generator))
        return torch.cat([idx, *tokens], dim=1) if tokens else idx
