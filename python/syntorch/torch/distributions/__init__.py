"""torch.distributions.Categorical: sampling and log-probabilities over the last dim of probs or
logits, each the kernels PyTorch's composition launches (values are not simulated)."""

from syntorch._unsupported import module_getattr as _module_getattr

__getattr__ = _module_getattr("torch.distributions")


class Categorical:
    def __init__(self, probs=None, logits=None, validate_args=None):
        import syntorch.torch as torch
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            self.probs = probs / probs.sum(-1, keepdim=True)
            self.logits = self.probs.clamp(min=torch.finfo(probs.dtype).tiny).log()
        else:
            self.logits = logits - logits.logsumexp(-1, keepdim=True)
            self.probs = torch.softmax(self.logits, -1)
        self.batch_shape = tuple(self.probs.shape[:-1])
        self._num_events = self.probs.shape[-1]

    @property
    def param_shape(self):
        return tuple(self.probs.shape)

    def sample(self, sample_shape=()):
        """multinomial draws of the rows: one per sample."""
        import syntorch.torch as torch
        n = 1
        for s in sample_shape:
            n *= s
        rows = self.probs.reshape(-1, self._num_events)
        draws = torch.multinomial(rows, n, True)  # [rows, n]
        return draws.t().reshape(*sample_shape, *self.batch_shape)

    def log_prob(self, value):
        """The log-probabilities at value's classes: a gather."""
        logits = self.logits.expand(*value.shape, self._num_events) if value.dim() > self.logits.dim() - 1 \
            else self.logits
        return logits.gather(-1, value.long().unsqueeze(-1)).squeeze(-1)

    def entropy(self):
        return -(self.probs * self.logits).sum(-1)
