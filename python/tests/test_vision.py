"""Convolutional networks in syntorch.torch (convolutions, batch and group norm, pooling,
resampling) and the same code through the bridge from real PyTorch."""

import pytest

import syntorch
import syntorch.torch as torch
import syntorch.torch.nn as nn
import syntorch.torch.nn.functional as F

from models.resnet import make_resnet


def test_the_layers_give_pytorchs_shapes_and_train():
    syntorch.init(console=True)
    x = torch.empty(4, 3, 32, 32, device="cuda")
    stem = nn.Conv2d(3, 16, 3, stride=2, padding=1)
    bn = nn.BatchNorm2d(16)
    h = F.relu(bn(stem(x)))
    assert list(h.shape) == [4, 16, 16, 16]
    assert list(nn.MaxPool2d(2)(h).shape) == [4, 16, 8, 8]
    assert list(nn.AvgPool2d(3, stride=1, padding=1)(h).shape) == [4, 16, 16, 16]
    assert list(nn.AdaptiveAvgPool2d(4)(h).shape) == [4, 16, 4, 4]
    assert list(nn.Upsample(scale_factor=2, mode="bilinear")(h).shape) == [4, 16, 32, 32]
    assert list(F.interpolate(h, size=(20, 24)).shape) == [4, 16, 20, 24]
    assert list(nn.GroupNorm(4, 16)(h).shape) == [4, 16, 16, 16]
    assert list(nn.ConvTranspose2d(16, 8, 2, stride=2)(h).shape) == [4, 8, 32, 32]
    assert list(nn.Flatten()(h).shape) == [4, 16 * 16 * 16]
    assert list(nn.Conv1d(3, 6, 5)(torch.empty(2, 3, 50, device="cuda")).shape) == [2, 6, 46]
    assert list(nn.BatchNorm1d(6)(torch.empty(2, 6, 46, device="cuda")).shape) == [2, 6, 46]
    assert list(nn.Conv3d(2, 4, 3, padding=1)(torch.empty(1, 2, 4, 8, 8, device="cuda")).shape) == [1, 4, 4, 8, 8]
    assert list(nn.BatchNorm3d(4)(torch.empty(1, 4, 4, 8, 8, device="cuda")).shape) == [1, 4, 4, 8, 8]
    w = torch.empty(8, 3, 3, 3, device="cuda")
    assert list(F.conv1d(torch.empty(1, 3, 10, device="cuda"), torch.empty(8, 3, 3, device="cuda")).shape) == [1, 8, 8]
    assert list(F.conv2d(x, w, padding=1).shape) == [4, 8, 32, 32]
    assert list(F.conv3d(torch.empty(1, 3, 4, 4, 4, device="cuda"), torch.empty(8, 3, 1, 1, 1, device="cuda")).shape) \
        == [1, 8, 4, 4, 4]
    assert list(F.conv_transpose2d(h, torch.empty(16, 4, 2, 2, device="cuda"), stride=2).shape) == [4, 4, 32, 32]
    assert list(F.max_pool1d(torch.empty(1, 2, 10, device="cuda"), 2).shape) == [1, 2, 5]
    assert list(F.max_pool3d(torch.empty(1, 2, 4, 4, 4, device="cuda"), 2).shape) == [1, 2, 2, 2, 2]
    assert list(F.avg_pool1d(torch.empty(1, 2, 10, device="cuda"), 2).shape) == [1, 2, 5]
    assert list(F.avg_pool3d(torch.empty(1, 2, 4, 4, 4, device="cuda"), 2).shape) == [1, 2, 2, 2, 2]
    mean, var = torch.empty(16, device="cuda"), torch.empty(16, device="cuda")
    assert list(F.batch_norm(h, mean, var).shape) == list(h.shape)
    assert list(F.group_norm(h, 2).shape) == list(h.shape)
    loss = F.adaptive_avg_pool2d(h, 1).sum()
    loss.backward()
    assert list(stem.weight.grad.shape) == [16, 3, 3, 3] and list(bn.weight.grad.shape) == [16]
    stats = syntorch.trace_manager.stats()
    ops = syntorch._session.console()
    assert "conv_wgrad" in ops and "conv_dgrad" in ops and "batchnorm_backward" in ops
    assert stats["kernels"] > 40


def test_bad_arguments_name_what_is_wrong():
    syntorch.init()
    x = torch.empty(1, 3, 8, 8, device="cuda")
    with pytest.raises(RuntimeError, match="expected input.*to have 6 channels"):
        F.conv2d(x, torch.empty(4, 6, 3, 3, device="cuda"))
    with pytest.raises(ValueError, match="must be divisible by groups"):
        nn.Conv2d(3, 8, 3, groups=2)
    with pytest.raises(RuntimeError, match="divisible by num_groups"):
        F.group_norm(torch.empty(1, 6, 4, 4, device="cuda"), 4)
    with pytest.raises(RuntimeError, match="mode 'bicubic' is not supported"):
        F.interpolate(x, scale_factor=2, mode="bicubic")
    with pytest.raises(NotImplementedError, match="padding='same' is not supported"):
        F.conv2d(x, torch.empty(4, 3, 3, 3, device="cuda"), padding="same")
    with pytest.raises(NotImplementedError, match="padding='same' is not supported"):
        nn.Conv2d(3, 4, 3, padding="same")
    with pytest.raises(ValueError, match=r"max_pool2d: kernel_size must have 1 or 2 values, got 3"):
        F.max_pool2d(x, (2, 2, 2))
    with pytest.raises(ValueError, match="scale_factor must have 1 or 2 values"):
        F.interpolate(x, scale_factor=(2, 2, 2))
    assert list(F.adaptive_avg_pool2d(x, (None, 2)).shape) == [1, 3, 8, 2]


@pytest.mark.parametrize("train", [False, True], ids=["inference", "training"])
def test_a_resnet_costs_about_the_same_through_the_bridge_and_on_syntorch_torch(train):
    real = pytest.importorskip("torch")
    import syntorch.pytorch as sp

    bridged = sp.simulate(make_resnet(real), (real.randn(128, 3, 224, 224),), train=train,
                          loss_fn=(lambda o: o.sum()) if train else None)
    syntorch.init(console=False)
    model = make_resnet(torch)
    x = torch.empty(128, 3, 224, 224, device="cuda")
    if train:
        model(x).sum().backward()
    else:
        model.eval()
        with torch.no_grad():
            model(x)
    own = syntorch.trace_manager.stats()
    assert bridged["aten"]["unmodelled"] == [] and bridged["aten"]["generic_elementwise"] == []
    # The same kernels but for a few small copies of the backward; PyTorch's finer ATen ops (views
    # dispatched on the host before the first kernel) add the rest.
    assert bridged["simulated_time_s"] == pytest.approx(own["simulated_time_s"], rel=0.03)
    assert bridged["peak_memory_bytes"][0] == pytest.approx(own["peak_memory_bytes"][0], rel=0.01)


def test_cudnn_allow_tf32_moves_fp32_convolutions_off_the_tf32_units():
    def conv_time(allow):
        torch.backends.cudnn.allow_tf32 = allow
        try:
            syntorch.init()
            x = torch.empty(64, 256, 56, 56, device="cuda")
            torch.cuda.synchronize()
            F.conv2d(x, torch.empty(256, 256, 3, 3, device="cuda"), padding=1)
            return syntorch.trace_manager.stats()["simulated_time_s"]
        finally:
            torch.backends.cudnn.allow_tf32 = True
    assert conv_time(False) > 1.4 * conv_time(True)  # fp32 (Winograd on vector units) against TF32 tensor cores
