"""torch.nn's recurrent layers (RNN, LSTM, GRU and their cells) with PyTorch's parameters, shapes
and arguments, run as cuDNN runs them: each layer's input projection for every time step in one
GEMM, then per step a GEMM of the hidden state and the gates' pointwise math. cuDNN fuses each
step's pointwise math into one kernel; here it is a few elementwise kernels a step, so a small
recurrent layer's launches are overcounted (its GEMMs are the same)."""

from . import Module, _parameter, functional as F

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def _step(mode, xw, h, c, w_hh, b_hh):
    """One time step: xw the input's projection (bias included), h (and c) the state."""
    import syntorch.torch as torch
    hw = F.linear(h, w_hh, b_hh)
    if mode == "LSTM":
        i, f, g, o = (xw + hw).chunk(4, -1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        return torch.sigmoid(o) * torch.tanh(c), c
    if mode == "GRU":
        xr, xz, xn = xw.chunk(3, -1)
        hr, hz, hn = hw.chunk(3, -1)
        r, z = torch.sigmoid(xr + hr), torch.sigmoid(xz + hz)
        n = torch.tanh(xn + r * hn)
        return (1.0 - z) * n + z * h, None
    pre = xw + hw
    return (torch.tanh(pre) if mode == "RNN_TANH" else torch.relu(pre)), None


class RNNBase(Module):
    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__()
        if not isinstance(hidden_size, int) or isinstance(hidden_size, bool) or hidden_size <= 0:
            raise ValueError(f"hidden_size must be a positive integer, got {hidden_size!r}")
        if not isinstance(num_layers, int) or isinstance(num_layers, bool) or num_layers <= 0:
            raise ValueError(f"num_layers must be a positive integer, got {num_layers!r}")
        if not 0 <= float(dropout) <= 1:
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an element "
                             "being zeroed")
        if proj_size:
            raise NotImplementedError(f"nn.{type(self).__name__}: argument 'proj_size' is not supported")
        self.mode, self.input_size, self.hidden_size = mode, input_size, hidden_size
        self.num_layers, self.bias, self.batch_first = num_layers, bias, batch_first
        self.dropout, self.bidirectional, self.proj_size = float(dropout), bidirectional, proj_size
        gates = _GATES[mode] * hidden_size
        directions = 2 if bidirectional else 1
        self._flat_weights_names = []
        for layer in range(num_layers):
            width = input_size if layer == 0 else hidden_size * directions
            for d in range(directions):
                suffix = f"_l{layer}" + ("_reverse" if d else "")
                shapes = [("weight_ih", (gates, width)), ("weight_hh", (gates, hidden_size))]
                if bias:
                    shapes += [("bias_ih", (gates,)), ("bias_hh", (gates,))]
                for name, shape in shapes:
                    self.register_parameter(name + suffix, _parameter(*shape, device=device, dtype=dtype))
                    self._flat_weights_names.append(name + suffix)

    def _weights(self, layer, d):
        suffix = f"_l{layer}" + ("_reverse" if d else "")
        get = self._parameters.get
        return (get("weight_ih" + suffix), get("weight_hh" + suffix), get("bias_ih" + suffix),
                get("bias_hh" + suffix))

    def forward(self, input, hx=None):
        import syntorch.torch as torch
        batched = input.dim() == 3
        if input.dim() not in (2, 3):
            raise ValueError(f"{type(self).__name__}: Expected input to be 2D or 3D, got {input.dim()}D instead")
        x = input if batched else input.unsqueeze(1)
        if batched and self.batch_first:
            x = x.transpose(0, 1)
        steps, batch = x.size(0), x.size(1)
        directions = 2 if self.bidirectional else 1
        state_shape = (self.num_layers * directions, batch, self.hidden_size)
        lstm = self.mode == "LSTM"
        if hx is None:
            h0 = torch.zeros(*state_shape, dtype=x.dtype, device=x.device)
            c0 = torch.zeros(*state_shape, dtype=x.dtype, device=x.device) if lstm else None
        else:
            h0, c0 = hx if lstm else (hx, None)
            if not batched:
                h0 = h0.unsqueeze(1)
                c0 = c0.unsqueeze(1) if c0 is not None else None
            if tuple(h0.shape) != state_shape:
                raise RuntimeError(f"Expected hidden size {state_shape}, got {tuple(h0.shape)}")
        last_h, last_c = [], []
        for layer in range(self.num_layers):
            outs = []
            for d in range(directions):
                w_ih, w_hh, b_ih, b_hh = self._weights(layer, d)
                xw = F.linear(x, w_ih, b_ih)  # every step's input projection: one GEMM
                k = layer * directions + d
                h, c = h0[k], (c0[k] if lstm else None)
                seq = [None] * steps
                for t in (range(steps - 1, -1, -1) if d else range(steps)):
                    h, c = _step(self.mode, xw[t], h, c, w_hh, b_hh)
                    seq[t] = h
                outs.append(torch.stack(seq))
                last_h.append(h)
                if lstm:
                    last_c.append(c)
            x = outs[0] if directions == 1 else torch.cat(outs, -1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, True)
        h_n = torch.stack(last_h)
        c_n = torch.stack(last_c) if lstm else None
        out = x
        if batched and self.batch_first:
            out = out.transpose(0, 1)
        if not batched:
            out, h_n = out.squeeze(1), h_n.squeeze(1)
            c_n = c_n.squeeze(1) if c_n is not None else None
        return (out, (h_n, c_n)) if lstm else (out, h_n)

    def flatten_parameters(self):
        """cuDNN's packing of the weights into one buffer: nothing to do here."""

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if not self.bias:
            s += ", bias=False"
        if self.batch_first:
            s += ", batch_first=True"
        if self.dropout:
            s += f", dropout={self.dropout}"
        if self.bidirectional:
            s += ", bidirectional=True"
        return s


class RNN(RNNBase):
    def __init__(self, input_size, hidden_size, num_layers=1, nonlinearity="tanh", bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, device=None, dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", input_size, hidden_size, num_layers,
                         bias, batch_first, dropout, bidirectional, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity


class LSTM(RNNBase):
    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         proj_size, device=device, dtype=dtype)


class GRU(RNNBase):
    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, device=None, dtype=None):
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         device=device, dtype=dtype)


class RNNCellBase(Module):
    def __init__(self, mode, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__()
        self.mode, self.input_size, self.hidden_size, self.bias = mode, input_size, hidden_size, bias
        gates = _GATES[mode] * hidden_size
        self.weight_ih = _parameter(gates, input_size, device=device, dtype=dtype)
        self.weight_hh = _parameter(gates, hidden_size, device=device, dtype=dtype)
        if bias:
            self.bias_ih = _parameter(gates, device=device, dtype=dtype)
            self.bias_hh = _parameter(gates, device=device, dtype=dtype)
        else:
            object.__setattr__(self, "bias_ih", None)
            object.__setattr__(self, "bias_hh", None)

    def forward(self, input, hx=None):
        import syntorch.torch as torch
        batched = input.dim() == 2
        x = input if batched else input.unsqueeze(0)
        lstm = self.mode == "LSTM"
        if hx is None:
            zeros = torch.zeros(x.size(0), self.hidden_size, dtype=x.dtype, device=x.device)
            h, c = zeros, (torch.zeros_like(zeros) if lstm else None)
        else:
            h, c = hx if lstm else (hx, None)
            if not batched:
                h = h.unsqueeze(0)
                c = c.unsqueeze(0) if c is not None else None
        h, c = _step(self.mode, F.linear(x, self.weight_ih, self.bias_ih), h, c, self.weight_hh, self.bias_hh)
        if not batched:
            h = h.squeeze(0)
            c = c.squeeze(0) if c is not None else None
        return (h, c) if lstm else h


class RNNCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity: {nonlinearity}")
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", input_size, hidden_size, bias,
                         device=device, dtype=dtype)
        self.nonlinearity = nonlinearity


class LSTMCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__("LSTM", input_size, hidden_size, bias, device=device, dtype=dtype)


class GRUCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__("GRU", input_size, hidden_size, bias, device=device, dtype=dtype)

