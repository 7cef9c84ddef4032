"""torch.nn.utils.rnn.pad_sequence: variable-length sequences into one padded batch."""

import builtins


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """A tensor of the longest sequence's length filled with padding_value (one fill kernel), each
    sequence copied into its slot (a copy kernel each), as PyTorch's."""
    import syntorch.torch as torch
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    if padding_side not in ("left", "right"):
        raise ValueError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    first = sequences[0]
    longest = builtins.max(s.shape[0] for s in sequences)
    trailing = list(first.shape[1:])
    for s in sequences:
        if list(s.shape[1:]) != trailing:
            raise RuntimeError("The size of tensors in pad_sequence must match beyond their first dim")
    shape = [len(sequences), longest] + trailing if batch_first else [longest, len(sequences)] + trailing
    out = torch.full(shape, padding_value, dtype=first.dtype, device=first.device)
    for i, s in enumerate(sequences):
        n = s.shape[0]
        start = longest - n if padding_side == "left" else 0
        slot = out[i].narrow(0, start, n) if batch_first else out[:, i].narrow(0, start, n)
        slot.copy_(s)
    return out
