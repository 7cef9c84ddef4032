"""torch.nn.init: weights carry no values in a simulation, so every initialiser returns its tensor."""


def _keep(tensor, *args, **kwargs):
    return tensor


normal_ = uniform_ = zeros_ = ones_ = constant_ = xavier_uniform_ = xavier_normal_ = _keep
kaiming_uniform_ = kaiming_normal_ = trunc_normal_ = orthogonal_ = _keep
