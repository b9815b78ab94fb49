#!/usr/bin/python3
"""Generate models the importer has never seen (not in the public suite).

Same CLI, files and determinism as generate.py, whose export code this reuses:

    /usr/bin/python3 tests/models/unseen.py --out DIR
    /usr/bin/python3 tests/models/unseen.py --out DIR --only squeezenet unet

For every model NAME this writes NAME.onnx, NAME.input.npy, NAME.output.npy
and DIR/manifest.json.  Names ending in _op11 / _op17 are the same model as
the name without the suffix, exported at that opset (torch 1.13 exports up
to opset 17); the others use --opset (default 13).  Inputs are small
(mostly 1x3x64x64) so the models run fast in the interpreter.  alexnet
needs 224x224 (its AdaptiveAvgPool2d(6) exports only when the feature map is
a multiple of 6); vgg11 is left out: at 64x64 its AdaptiveAvgPool2d(7) sees
a 2x2 map, which torch.onnx cannot export, and at 224x224 it is too big to
interpret quickly.  text_triu only exports at opset >= 14 (aten::triu).
"""

import os
import sys
from collections import OrderedDict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import generate as gen  # noqa: E402  (the public suite's export code)

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import torchvision  # noqa: E402
from torchvision import models as tvm  # noqa: E402


def _img(g, h=64, w=None, c=3):
    return torch.randn(1, c, h, w or h, generator=g, dtype=torch.float32)


def _randomize_norms(model):
    """GroupNorm/InstanceNorm affine params start at 1/0 (generate.py's
    make_nontrivial only randomizes them to ~N(0, 0.02)); give them sane
    nontrivial values.  Called by builders; seeded by torch.manual_seed."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, (nn.GroupNorm, nn.modules.instancenorm._InstanceNorm)) and m.affine:
                m.weight.uniform_(0.5, 1.5)
                m.bias.normal_(0, 0.1)
            if isinstance(m, nn.PReLU):
                m.weight.uniform_(0.05, 0.5)
    return model


# --- torchvision classifiers at small inputs ---

def build_squeezenet(g):
    return tvm.squeezenet1_1(weights=None, num_classes=10), _img(g), None


def build_shufflenet(g):
    return tvm.shufflenet_v2_x0_5(weights=None, num_classes=10), _img(g), None


def build_mnasnet(g):
    return tvm.mnasnet0_5(weights=None, num_classes=10), _img(g), None


def build_efficientnet(g):
    return tvm.efficientnet_b0(weights=None, num_classes=10), _img(g), None


def build_regnet(g):
    return tvm.regnet_y_400mf(weights=None, num_classes=10), _img(g), None


def build_densenet(g):
    # densenet121's structure (BN-ReLU-Conv dense layers, concat, transitions
    # with AvgPool) at a small config.
    m = tvm.DenseNet(growth_rate=8, block_config=(2, 2, 2, 2), num_init_features=16, bn_size=2,
                     num_classes=10)
    return m, _img(g), None


def build_densenet121(g):
    return tvm.densenet121(weights=None, num_classes=10), _img(g), None


def build_googlenet(g):
    m = tvm.googlenet(weights=None, aux_logits=False, init_weights=True, num_classes=10)
    return m, _img(g), None


def build_inception(g):
    # Inception-v3 at its own input, 299x299 (too big for the interpreter's
    # tests; the bench compiles it): its stem and grid reductions leave
    # prime widths (149, 147, 73, 71, 17), it has asymmetric 1x7 / 7x1
    # convolutions and explicit Pads before its 3x3 average pools. (At
    # 75x75, the smallest input, its last blocks see 1x1 maps.)
    m = tvm.inception_v3(weights=None, aux_logits=False, init_weights=True, num_classes=10)
    return m, _img(g, 299), None


def build_convnext_tiny(g):
    return tvm.convnext_tiny(weights=None, num_classes=10), _img(g), None


def build_convnext(g):
    # convnext_tiny's block (7x7 depthwise conv, permute to channels-last,
    # LayerNorm, MLP, layer scale, permute back) at small widths/depths.
    from torchvision.models.convnext import CNBlockConfig, ConvNeXt
    cfg = [CNBlockConfig(16, 32, 1), CNBlockConfig(32, 64, 1), CNBlockConfig(64, None, 1)]
    return ConvNeXt(cfg, num_classes=10), _img(g, 32), None


def build_vit(g):
    from torchvision.models.vision_transformer import VisionTransformer
    m = VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2, hidden_dim=32,
                          mlp_dim=64, num_classes=10)
    return m, _img(g, 32), None


def build_alexnet(g):
    # The classifier's AdaptiveAvgPool2d(6) only exports when the feature map
    # is a multiple of 6: 224x224 is the smallest such input.
    return tvm.alexnet(weights=None, num_classes=10), _img(g, 224), None


# --- hand-written models ---

class TextMHA(nn.Module):
    """Token embedding, nn.MultiheadAttention with a key_padding_mask from
    ids == 0 (pad) and a causal attn_mask, masked mean pooling, head."""

    def __init__(self, vocab=50, d=32, heads=4, n=10, triu=False):
        super().__init__()
        self.triu = triu
        self.emb = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.randn(1, 12, d) * 0.02)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, n)

    def forward(self, ids):
        t = ids.shape[1]
        pad = ids == 0
        if self.triu:  # Trilu (opset >= 14) and EyeLike
            causal = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
            causal = causal & ~torch.eye(t, dtype=torch.bool)
        else:  # Range + Unsqueeze + Greater
            pos = torch.arange(t)
            causal = pos.unsqueeze(0) > pos.unsqueeze(1)
        x = self.emb(ids) + self.pos[:, :t]
        a, _ = self.attn(x, x, x, key_padding_mask=pad, attn_mask=causal, need_weights=False)
        x = self.norm(x + a)
        keep = (~pad).unsqueeze(-1).to(x.dtype)
        x = (x * keep).sum(dim=1) / keep.sum(dim=1).clamp(min=1.0)
        return F.log_softmax(self.head(x), dim=-1)


def build_text_mha(g):
    ids = torch.randint(1, 50, (2, 12), generator=g, dtype=torch.int64)
    ids[0, 9:] = 0  # padding at the end of the first sequence
    ids[1, 11:] = 0
    return TextMHA(), ids, None


def build_text_triu(g):
    m, ids, dyn = build_text_mha(g)
    return TextMHA(triu=True), ids, dyn


class EncoderBlock(nn.Module):
    """A BERT-style encoder at a realistic sequence length: 2 post-norm
    nn.TransformerEncoderLayer (width 256, 4 heads, GELU feed-forward of
    1024) over 128 tokens, mean pooling, head. Its Linear layers multiply
    128 rows (what a compiler's packed GEMMs are for)."""

    def __init__(self, d=256, heads=4, ff=1024, layers=2, n=10):
        super().__init__()
        layer = nn.TransformerEncoderLayer(d, heads, ff, dropout=0.0, activation="gelu", batch_first=True)
        self.enc = nn.TransformerEncoder(layer, layers)
        self.head = nn.Linear(d, n)

    def forward(self, x):
        return self.head(self.enc(x).mean(dim=1))


def build_bert(g):
    return EncoderBlock(), torch.randn(1, 128, 256, generator=g), None


class UNetBlock(nn.Module):
    """Down (conv, maxpool), up with ConvTranspose2d, skip concat, and
    F.interpolate nearest / bilinear (align_corners False and True)."""

    def __init__(self, c=8):
        super().__init__()
        self.enc1 = nn.Sequential(nn.Conv2d(3, c, 3, padding=1), nn.BatchNorm2d(c), nn.ReLU())
        self.enc2 = nn.Sequential(nn.Conv2d(c, 2 * c, 3, padding=1), nn.ReLU())
        self.mid = nn.Conv2d(2 * c, 2 * c, 3, padding=1)
        self.up = nn.ConvTranspose2d(2 * c, c, 2, stride=2)
        self.up2 = nn.ConvTranspose2d(2 * c, c, 3, stride=2, padding=1, output_padding=1)
        self.dec = nn.Conv2d(3 * c, c, 3, padding=1)
        self.out = nn.Conv2d(3 * c, 4, 1)

    def forward(self, x):
        e1 = self.enc1(x)  # c, H
        e2 = self.enc2(F.max_pool2d(e1, 2))  # 2c, H/2
        m = self.mid(F.max_pool2d(e2, 2))  # 2c, H/4
        u = self.up(m)  # c, H/2
        d = F.relu(self.dec(torch.cat([u, e2], dim=1)))  # c, H/2
        n = F.interpolate(d, scale_factor=2.0, mode="nearest")  # c, H
        b = F.interpolate(self.up2(m), size=e1.shape[-2:], mode="bilinear", align_corners=False)
        a = F.interpolate(m[:, :c_of(m)], scale_factor=4.0, mode="bilinear", align_corners=True)
        return self.out(torch.cat([n, b + a, e1], dim=1))


def c_of(m):
    return m.shape[1] // 2


def build_unet(g):
    return UNetBlock(), _img(g, 32), None


class OpMix(nn.Module):
    """A grab bag of ops that export to Pad(reflect/edge), InstanceNorm,
    GroupNorm (InstanceNormalization + Reshape), PReLU, HardSwish, SiLU,
    Mish, Softplus, LogSoftmax, Split/Chunk, Gather with negative indices,
    Slice with steps (and negative steps via flip), Expand, Tile, Where,
    clamp, pow/sqrt, ELU/LeakyReLU/Hardsigmoid and mean/var reductions."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3)
        self.inorm = nn.InstanceNorm2d(8, affine=True)
        self.gnorm = nn.GroupNorm(2, 8)
        self.prelu = nn.PReLU(8)
        self.prelu1 = nn.PReLU()
        self.conv2 = nn.Conv2d(8, 8, 3, groups=2)
        self.lin = nn.Linear(4, 6)

    def forward(self, x):
        x = F.pad(x, (1, 1, 1, 1), mode="reflect")
        x = self.conv1(x)  # 8 x H x W
        x = self.prelu(self.inorm(x))
        x = F.pad(x, (2, 0, 1, 1), mode="replicate")
        x = self.prelu1(self.gnorm(self.conv2(x)))
        a, b = torch.chunk(x, 2, dim=1)
        p, q, r = torch.split(x, [2, 3, 3], dim=1)
        y = F.hardswish(a) + F.silu(b) + F.mish(a) * F.softplus(b)
        y = y + F.elu(a) - F.leaky_relu(b, 0.1) + F.hardsigmoid(a)
        z = torch.cat([p * 0.5, torch.clamp(q, -1.0, 1.0), torch.where(r > 0, r, r * r)], dim=1)
        z = z[:, :, ::2, 1::3]  # Slice with steps
        z = torch.flip(z, dims=[3])  # Slice with a negative step
        y = y[:, :, ::2, 1::3]
        last = z[:, -1]  # Gather with a negative index
        idx = torch.tensor([-1, 0, -2])
        sel = z.index_select(1, idx % z.shape[1]) + z[:, [-1, 0, -2]]
        w = (last.unsqueeze(1).expand(-1, 4, -1, -1) + y).repeat(1, 2, 1, 1)  # Expand, Tile
        v = torch.cat([w, sel, z], dim=1)  # 8 + 3 + 8 channels
        mu = v.mean(dim=(2, 3), keepdim=True)
        sd = torch.sqrt(((v - mu) ** 2).mean(dim=(2, 3), keepdim=True) + 1e-5)
        v = (v - mu) / sd
        h = self.lin(v[..., :4].reshape(1, -1, 4))
        return F.log_softmax(h.flatten(1), dim=-1)


def build_opmix(g):
    return OpMix(), _img(g, 16), None


class Losses(nn.Module):
    """A classifier head scored inside the model: cross-entropy with class
    weights and an ignored label (SoftmaxCrossEntropyLoss), a per-position
    nll_loss (NegativeLogLikelihoodLoss), torch.gather (GatherElements) and
    F.one_hot (OneHot)."""

    def __init__(self, g):
        super().__init__()
        self.lin = nn.Linear(6, 5)
        self.register_buffer("labels", torch.tensor([[0, 3, 4, 1], [2, -100, 1, 0]]))
        self.register_buffer("class_weight", torch.rand(5, generator=g) + 0.5)
        self.register_buffer("picks", torch.randint(0, 5, (2, 2, 4), generator=g))

    def forward(self, x):  # x: [2, 4, 6]
        logits = self.lin(x).transpose(1, 2)  # [N=2, C=5, d=4]
        ce = F.cross_entropy(logits, self.labels, weight=self.class_weight, ignore_index=-100)
        nll = F.nll_loss(F.log_softmax(logits, 1), self.labels.clamp(min=0), reduction="none")
        picked = torch.gather(logits, 1, self.picks)  # [2, 2, 4]
        onehot = F.one_hot(self.labels.clamp(min=0), 5).float()  # OneHot: [2, 4, 5]
        true_logit = (onehot.transpose(1, 2) * logits).sum(1)
        return picked.sum(1) + nll + ce + true_logit


def build_losses(g):
    return Losses(g), torch.randn(2, 4, 6, generator=g), None


class Resizes(nn.Module):
    """F.interpolate as exporters write it: bicubic (Resize cubic, half_pixel
    and align_corners), bilinear by a scale whose output size is rounded
    down (Resize with scales 0.75 of 10: 7 outputs mapped back by 1 / 0.75, not by
    in / out), nearest by 1.5."""

    def forward(self, x):  # [1, 3, 10, 10]
        a = F.interpolate(x, size=(13, 7), mode="bicubic", align_corners=False)
        b = F.interpolate(x, size=(13, 7), mode="bicubic", align_corners=True)
        c = F.interpolate(x, scale_factor=0.75, mode="bilinear", align_corners=False, recompute_scale_factor=False)
        d = F.interpolate(x, scale_factor=1.5, mode="nearest")
        return torch.cat([(a + b).flatten(1), c.flatten(1), d.flatten(1)], 1)


def build_resizes(g):
    return Resizes(), _img(g, 10), None


class Volumes(nn.Module):
    """Volumetric (3-D) data: MaxPool3d with padding and ceil_mode, AvgPool3d
    with and without the padding counted, with a linear channel mix in between."""

    def __init__(self, g):
        super().__init__()
        self.mix = nn.Linear(2, 2)

    def forward(self, x):  # [1, 2, 7, 9, 10]
        a = F.max_pool3d(x, kernel_size=3, stride=2, padding=1, ceil_mode=True)
        b = F.avg_pool3d(x, kernel_size=(2, 3, 3), stride=(1, 2, 2), padding=(1, 1, 0), count_include_pad=False)
        c = F.avg_pool3d(x, kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=True)
        mixed = self.mix(b.transpose(1, 4)).transpose(1, 4)
        return torch.cat([a.flatten(1), mixed.flatten(1), c.flatten(1)], 1)


def build_volumes(g):
    return Volumes(g), torch.randn(1, 2, 7, 9, 10, generator=g), None


class Video(nn.Module):
    """A video classifier's 3-D convolutions (torchvision's r3d/r(2+1)d
    blocks): a strided, padded Conv3d with bias, a (2+1)-D factorization
    (1x3x3 then 3x1x1), a dilated grouped Conv3d without bias and a
    depthwise one, BatchNorm3d, ReLU, a residual add, global average pooling
    and a linear head; and a 3-D decoder's transposed convolutions (strided
    with output padding, grouped, with bias; dilated in depth, without),
    their volumes flattened into the output; batch 2."""

    def __init__(self, g):
        super().__init__()
        self.stem = nn.Conv3d(3, 8, (3, 5, 5), stride=(1, 2, 2), padding=(1, 2, 2))
        self.bn = nn.BatchNorm3d(8)
        self.spatial = nn.Conv3d(8, 12, (1, 3, 3), padding=(0, 1, 1))
        self.temporal = nn.Conv3d(12, 8, (3, 1, 1), stride=(2, 1, 1), padding=(1, 0, 0))
        self.grouped = nn.Conv3d(8, 8, 3, padding=(2, 1, 2), dilation=(2, 1, 2), groups=2, bias=False)
        self.depthwise = nn.Conv3d(8, 8, 3, padding=1, groups=8)
        self.head = nn.Linear(8, 5)
        self.up = nn.ConvTranspose3d(8, 4, (3, 4, 4), stride=2, padding=1, output_padding=(1, 0, 1), groups=2)
        self.up_dilated = nn.ConvTranspose3d(8, 3, 3, stride=(1, 2, 1), padding=(2, 1, 0), dilation=(2, 1, 1),
                                             bias=False)
        with torch.no_grad():
            self.bn.running_mean.normal_(0, 0.1, generator=g)
            self.bn.running_var.uniform_(0.5, 1.5, generator=g)

    def forward(self, x):  # [2, 3, 6, 16, 16]: batch, channels, time, height, width
        y = F.relu(self.bn(self.stem(x)))
        y = F.relu(self.temporal(F.relu(self.spatial(y))))
        y = F.relu(self.grouped(y)) + y
        y = self.depthwise(y)
        return torch.cat([self.head(y.mean((2, 3, 4))), self.up(y).flatten(1), self.up_dilated(y).flatten(1)], 1)


def build_video(g):
    return Video(g), torch.randn(2, 3, 6, 16, 16, generator=g), None


class Scatters(nn.Module):
    """Writes into tensors: Tensor.scatter with distinct indices per row
    (ScatterElements), index assignment of whole rows and of single elements
    (index_put: ScatterND), scatter_add with repeated indices (ScatterElements
    with reduction add). Tested as scatters_op16 only: before opset 16 the
    exporter writes scatter_add as a plain scatter into zeros, whose result
    with repeated indices ONNX leaves undefined."""

    def __init__(self, g):
        super().__init__()
        self.lin = nn.Linear(6, 6)
        self.register_buffer("perm", torch.argsort(torch.rand(3, 6, generator=g), 1)[:, :4])
        self.register_buffer("repeats", torch.randint(0, 6, (3, 5), generator=g))
        self.register_buffer("rows", torch.tensor([2, 0]))

    def forward(self, x):  # [3, 6]
        h = self.lin(x)
        a = h.scatter(1, self.perm, h[:, :4] * 2)
        b = h.clone()
        b[self.rows] = x[:2] - 1
        b[1, 3] = 7.0
        c = h.scatter_add(1, self.repeats, x[:, :5])
        return torch.cat([a, b, c], 1)


def build_scatters(g):
    return Scatters(g), torch.randn(3, 6, generator=g), None


class Warps(nn.Module):
    """Spatial transformers: a sampling grid from a predicted affine transform
    (as F.affine_grid computes it; torch 1.13 cannot export affine_grid),
    then F.grid_sample bilinear (zeros), nearest (border) and bicubic
    (reflection), with and without align_corners (GridSample, opset >= 16:
    only warps_op16 exports)."""

    def __init__(self, g):
        super().__init__()
        self.theta = nn.Linear(3 * 8 * 8, 6)
        ys, xs = torch.meshgrid(torch.linspace(-1, 1, 6) * 5 / 6, torch.linspace(-1, 1, 7) * 6 / 7, indexing="ij")
        self.register_buffer("base", torch.stack([xs, ys, torch.ones_like(xs)], -1).view(1, 42, 3))

    def forward(self, x):  # [2, 3, 8, 8]
        theta = self.theta(x.flatten(1)).view(-1, 2, 3) * 0.3 + torch.tensor([[1.1, 0.1, 0.2], [-0.1, 0.9, -0.3]])
        grid = (self.base @ theta.transpose(1, 2)).view(2, 6, 7, 2)
        a = F.grid_sample(x, grid, mode="bilinear", padding_mode="zeros", align_corners=False)
        b = F.grid_sample(x, grid * 1.3, mode="nearest", padding_mode="border", align_corners=True)
        c = F.grid_sample(x, grid * 1.6, mode="bicubic", padding_mode="reflection", align_corners=False)
        return torch.cat([a.flatten(1), b.flatten(1), c.flatten(1)], 1)


def build_warps(g):
    return Warps(g), torch.randn(2, 3, 8, 8, generator=g), None


class Recurrent(nn.Module):
    """Sequence models: a two-layer bidirectional LSTM, a batch-first GRU
    (exported with linear_before_reset = 1) and a bidirectional ReLU RNN from
    given initial states (7 steps)."""

    def __init__(self, g):
        super().__init__()
        self.lstm = nn.LSTM(6, 8, num_layers=2, bidirectional=True)
        self.gru = nn.GRU(6, 5, batch_first=True)
        self.rnn = nn.RNN(6, 4, nonlinearity="relu", bidirectional=True)
        self.register_buffer("h0", torch.randn(2, 3, 4, generator=g))

    def forward(self, x):  # [7, 3, 6]: time, batch, features
        y, (h, c) = self.lstm(x)
        z, hz = self.gru(x.transpose(0, 1))
        w, hw = self.rnn(x, self.h0)
        seqs = torch.cat([y.flatten(1), z.transpose(0, 1).flatten(1), w.flatten(1)], 1)
        states = torch.cat([h.flatten(), c.flatten(), hz.flatten(), hw.flatten()])
        return torch.cat([seqs.flatten(), states]).unsqueeze(0)


def build_recurrent(g):
    return Recurrent(g), torch.randn(7, 3, 6, generator=g), None


class RecurrentSteps(Recurrent):
    """The same recurrent layers over a symbolic number of steps: their
    sequences side by side per step (each recurrence a loop over however
    many steps there are)."""

    def forward(self, x):  # [steps, 3, 6]
        y, _ = self.lstm(x)
        z, _ = self.gru(x.transpose(0, 1))
        w, _ = self.rnn(x, self.h0)
        return torch.cat([y, z.transpose(0, 1), w], 2)


def build_recurrent_steps(g):
    return RecurrentSteps(g), torch.randn(7, 3, 6, generator=g), {"input": {0: "steps"}, "output": {0: "steps"}}


class LongSequence(nn.Module):
    """A two-layer LSTM over 300 steps and a linear head on every step (when
    the steps were unrolled, their outputs concatenated 300 operands, once a
    select chain deeper than the IR parser's nesting limit)."""

    def __init__(self, g):
        super().__init__()
        self.lstm = nn.LSTM(8, 16, num_layers=2)
        self.head = nn.Linear(16, 4)

    def forward(self, x):  # [300, 2, 8]: time, batch, features
        y, _ = self.lstm(x)
        return self.head(y).flatten(1)


def build_long_sequence(g):
    return LongSequence(g), torch.randn(300, 2, 8, generator=g), None


class Ranking(nn.Module):
    """Beam-search style selection: torch.topk of log-probabilities (largest,
    along the last axis) and of distances (smallest, along axis 1), the
    indices feeding a gather (TopK)."""

    def __init__(self, g):
        super().__init__()
        self.proj = nn.Linear(8, 12)

    def forward(self, x):  # [4, 8]
        logp = F.log_softmax(self.proj(x), -1)
        best, idx = torch.topk(logp, 3, dim=-1)
        near, nidx = torch.topk((x[:, None, :] - x[None, :, :]).pow(2).sum(-1), 2, dim=1, largest=False)
        picked = torch.gather(self.proj(x), 1, idx)
        return torch.cat([best, picked, idx.float(), near, nidx.float()], 1)


def build_ranking(g):
    return Ranking(g), torch.randn(4, 8, generator=g), None


class Unpool(nn.Module):
    """A pooling encoder-decoder (SegNet style): MaxPool2d(return_indices)
    (MaxPool's Indices output, which the exporter turns into per-plane
    indices), a 1x1 conv, the values put back at those indices by a scatter
    (as MaxUnpool2d, which torch cannot run deterministically)."""

    def __init__(self, g):
        super().__init__()
        self.pool = nn.MaxPool2d(2, stride=2, return_indices=True)
        self.mix = nn.Conv2d(3, 3, 1)

    def forward(self, x):  # [2, 3, 8, 8]
        y, idx = self.pool(x)
        up = torch.zeros(2, 3, 64).scatter(2, idx.flatten(2), self.mix(y).flatten(2))
        return torch.cat([up.flatten(1), idx.flatten(1).float()], 1)


def build_unpool(g):
    return Unpool(g), torch.randn(2, 3, 8, 8, generator=g), None


class Quantized(nn.Module):
    """A QDQ model as quantization-aware training exports it: activations
    fake-quantized per tensor to uint8, conv weights per output channel and
    linear weights per tensor to int8 (QuantizeLinear/DequantizeLinear pairs
    around each conv and linear, with axis for the per-channel ones)."""

    def __init__(self, g):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.fc = nn.Linear(8 * 4 * 4, 10)
        self.register_buffer("w_scale", torch.rand(8, generator=g) * 0.01 + 0.005)
        self.register_buffer("w_zero", torch.zeros(8, dtype=torch.int32))

    def forward(self, x):  # [2, 3, 8, 8]
        def act(t, scale, zero):
            return torch.fake_quantize_per_tensor_affine(t, scale, zero, 0, 255)

        w = torch.fake_quantize_per_channel_affine(self.conv.weight, self.w_scale, self.w_zero, 0, -128, 127)
        y = F.conv2d(act(x, 0.03, 128), w, self.conv.bias, padding=1)
        y = F.max_pool2d(act(F.relu(y), 0.02, 0), 2)
        fw = torch.fake_quantize_per_tensor_affine(self.fc.weight, 0.004, 0, -128, 127)
        return F.linear(y.flatten(1), fw, self.fc.bias)


def build_quantized(g):
    return Quantized(g), torch.randn(2, 3, 8, 8, generator=g), None


class Scans(nn.Module):
    """Running sums (CumSum): position ids from a padding mask as Hugging Face
    models compute them (the cumsum of an int64 mask), a float cumsum along
    the features, and a reversed one along the batch through flips."""

    def forward(self, x):  # [3, 7]
        mask = (x > -0.5).long()
        pos = torch.cumsum(mask, dim=1) * mask - 1
        run = torch.cumsum(x, dim=-1)
        back = torch.flip(torch.cumsum(torch.flip(x, [0]), 0), [0])
        return torch.cat([pos.float(), run, back], 1)


def build_scans(g):
    return Scans(), torch.randn(3, 7, generator=g), None


class Einsums(nn.Module):
    """Attention written with einsum, as some exports do: per-head scores
    'bhqd,bhkd->bhqk', softmax, 'bhqk,bhkd->bhqd', a bilinear head
    'bd,de,be->b' (three operands) and an outer product."""

    def __init__(self, g):
        super().__init__()
        self.qkv = nn.Linear(8, 24)
        self.w = nn.Parameter(torch.randn(8, 8, generator=g) * 0.3)

    def forward(self, x):  # [2, 5, 8]
        q, k, v = self.qkv(x).reshape(2, 5, 3, 2, 4).permute(2, 0, 3, 1, 4)
        att = torch.softmax(torch.einsum("bhqd,bhkd->bhqk", q, k) * 0.5, -1)
        o = torch.einsum("bhqk,bhkd->bhqd", att, v).permute(0, 2, 1, 3).reshape(2, 5, 8)
        m = o.mean(1)
        bil = torch.einsum("bd,de,be->b", m, self.w, m)
        return torch.cat([o.flatten(1), torch.einsum("b,d->bd", bil, m[0])], 1)


def build_einsums(g):
    return Einsums(g), torch.randn(2, 5, 8, generator=g), None


@torch.jit.script
def _refine(h, x, w, b, steps: int):
    acc = torch.zeros_like(h)
    for i in range(steps):
        h = torch.tanh(torch.matmul(h, w.t()) + b + x * (i + 1))
        acc = acc + h
    return h, acc


class Loops(nn.Module):
    """A loop that TorchScript keeps (ONNX Loop): a scripted refinement of a
    state over a fixed number of steps, each step using the iteration
    number, with a running sum carried beside the state."""

    def __init__(self):
        super().__init__()
        self.cell = nn.Linear(6, 6)

    def forward(self, x):  # [2, 6]
        h, acc = _refine(x, x, self.cell.weight, self.cell.bias, 3)
        return torch.cat([h, acc], 1)


def build_loops(g):
    return Loops(), torch.randn(2, 6, generator=g), None


class Unsupported(nn.Module):
    """An op outside the op set: torchvision's NMS (NonMaxSuppression, whose
    output length depends on the values); the import must fail listing it,
    not give a wrong answer."""

    def forward(self, x):  # [6, 5]
        boxes = torch.cat([x[:, :2], x[:, :2] + x[:, 2:4].abs() + 0.1], 1)
        keep = torchvision.ops.nms(boxes, x[:, 4], 0.5)
        return x[keep].sum(0, keepdim=True)


def build_unsupported(g):
    return Unsupported(), torch.randn(6, 5, generator=g), None


def _dynamic_batch(builder, seq=False):
    """The model with a symbolic batch (and sequence) dimension."""
    def b(g):
        m, x, _ = builder(g)
        axes = {0: "batch", 1: "seq"} if seq else {0: "batch"}
        return m, x, {"input": axes, "output": {0: "batch"}}
    return b


def _with_norms(builder):
    def b(g):
        m, x, dyn = builder(g)
        return _randomize_norms(m), x, dyn
    return b


# name -> (builder, seed), as generate.MODELS.
BASE = OrderedDict([
    ("squeezenet", (build_squeezenet, 101)),
    ("shufflenet", (build_shufflenet, 102)),
    ("mnasnet", (build_mnasnet, 103)),
    ("efficientnet", (build_efficientnet, 104)),
    ("regnet", (build_regnet, 105)),
    ("densenet", (build_densenet, 106)),
    ("densenet121", (build_densenet121, 107)),
    ("googlenet", (build_googlenet, 108)),
    ("inception", (build_inception, 134)),
    ("convnext", (build_convnext, 109)),
    ("convnext_tiny", (build_convnext_tiny, 110)),
    ("vit", (build_vit, 111)),
    ("alexnet", (build_alexnet, 112)),
    ("text_mha", (build_text_mha, 114)),
    ("text_triu", (build_text_triu, 117)),
    ("bert", (build_bert, 119)),
    ("unet", (_with_norms(build_unet), 115)),
    ("opmix", (_with_norms(build_opmix), 116)),
    ("unsupported", (build_unsupported, 118)),
    ("losses", (build_losses, 120)),
    ("resizes", (build_resizes, 121)),
    ("volumes", (build_volumes, 122)),
    ("scatters", (build_scatters, 123)),
    ("warps", (build_warps, 124)),
    ("recurrent", (build_recurrent, 125)),
    ("ranking", (build_ranking, 126)),
    ("unpool", (build_unpool, 127)),
    ("quantized", (build_quantized, 128)),
    ("scans", (build_scans, 129)),
    ("einsums", (build_einsums, 130)),
    ("loops", (build_loops, 131)),
    ("long_sequence", (build_long_sequence, 132)),
    ("video", (build_video, 133)),
    # Symbolic batch: shape arithmetic (channel shuffle, class token Expand,
    # MHA reshapes) must stay symbolic.
    ("shufflenet_dyn", (_dynamic_batch(build_shufflenet), 102)),
    ("vit_dyn", (_dynamic_batch(build_vit), 111)),
    ("text_mha_dyn", (_dynamic_batch(build_text_mha), 114)),
    ("text_mha_dynseq", (_dynamic_batch(build_text_mha, seq=True), 114)),
    ("unet_dyn", (_dynamic_batch(_with_norms(build_unet)), 115)),
    # Symbolic time steps: each recurrence is a loop over however many there are.
    ("recurrent_dyn", (build_recurrent_steps, 125)),
])
# Variants exported at another opset: name -> (base, opset).
VARIANTS = OrderedDict([
    ("opmix_op11", ("opmix", 11)),
    ("unet_op11", ("unet", 11)),
    ("text_mha_op11", ("text_mha", 11)),
    ("squeezenet_op11", ("squeezenet", 11)),
    ("opmix_op17", ("opmix", 17)),
    ("unet_op17", ("unet", 17)),
    ("text_mha_op17", ("text_mha", 17)),
    ("vit_op17", ("vit", 17)),
    ("text_triu_op17", ("text_triu", 17)),
    ("convnext_op17", ("convnext", 17)),
    ("scatters_op16", ("scatters", 16)),
    ("warps_op16", ("warps", 16)),
])
MODELS = OrderedDict(BASE)
for _v, (_b, _o) in VARIANTS.items():
    MODELS[_v] = BASE[_b]


def main(argv=None):
    ap = gen.argument_parser(__doc__.split("\n\n")[0], MODELS)
    ap.add_argument("--opset", type=int, default=gen.DEFAULT_OPSET,
                    help="ONNX opset of models without an _opNN suffix (default %d)" % gen.DEFAULT_OPSET)
    ap.add_argument("--keep-going", action="store_true",
                    help="report a model that fails to export and go on (exit 1 at the end)")
    ap.add_argument("--quiet", action="store_true", help="no per-model progress lines")
    args = ap.parse_args(argv)

    gen.set_deterministic()
    os.makedirs(args.out, exist_ok=True)
    names = args.only or list(MODELS)

    manifest_path = os.path.join(args.out, "manifest.json")
    manifest = {"models": gen.previous_models(manifest_path, args.only)}

    failed = []
    for name in names:
        opset = VARIANTS[name][1] if name in VARIANTS else args.opset
        try:
            entry, elapsed = gen.generate(name, args.out, opset, models=MODELS)
        except Exception as e:  # noqa: BLE001 -- torch.onnx raises many kinds
            if not args.keep_going:
                raise
            first = (str(e).strip().splitlines() or [type(e).__name__])[0]
            print("%-16s export failed: %s: %s" % (name, type(e).__name__, first[:200]), flush=True)
            failed.append(name)
            continue
        manifest["models"][name] = entry
        if not args.quiet:
            ops = ", ".join("%s:%d" % kv for kv in entry["ops"].items())
            print("%-16s op%-2d %6.2fs %4d nodes  %s" % (name, opset, elapsed, entry["num_nodes"], ops),
                  flush=True)

    gen.write_manifest(manifest_path, manifest, MODELS)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
