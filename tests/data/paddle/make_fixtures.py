#!/usr/bin/env python3
"""Writes the PaddlePaddle fixtures of tests/cli/pd_convert_test.sh: three small inference models saved by
paddle.jit.save exactly as users save theirs, each with an input and Paddle's own output as .npy.
Run it with a PaddlePaddle 2.6 interpreter (ProgramDesc .pdmodel) and with a 3.x one (PIR .json):

    ~/.cache/pd-peers/paddle26/bin/python tests/data/paddle/make_fixtures.py   # writes p2_*
    ~/.cache/pd-peers/paddle3/bin/python tests/data/paddle/make_fixtures.py    # writes p3_*
    ... make_fixtures.py decoder                                               # only p*_decoder
    ... make_fixtures.py superres                                              # only p*_superres
    ... make_fixtures.py seghead                                               # only p*_seghead

(each venv: python3 -m venv DIR && DIR/bin/pip install "paddlepaddle==2.6.*" or "paddlepaddle==3.*").
The files are committed so that CI needs no paddle.
"""
import os
import sys

import numpy as np
import paddle
import paddle.nn as nn
import paddle.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
MAJOR = int(paddle.__version__.split(".")[0])
PREFIX = "p2_" if MAJOR == 2 else "p3_"
paddle.seed(0)
np.random.seed(0)


class LeNet(nn.Layer):
    """LeNet-size: conv2d, depthwise conv, pool2d (max/avg), relu/hardswish/sigmoid, concat, split,
    scale, flatten, matmul_v2 + elementwise_add (nn.Linear), dropout (inference mode), softmax."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2D(1, 6, 5, padding=2)
        self.dw = nn.Conv2D(6, 6, 3, padding=1, groups=6)
        self.conv2 = nn.Conv2D(12, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 64)
        self.fc2 = nn.Linear(64, 10)
        self.drop = nn.Dropout(0.2)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2, 2)
        x = paddle.concat([x, F.hardswish(self.dw(x))], axis=1)
        a, b = paddle.split(x, [4, -1], axis=1)  # shufflenet-style channel regrouping
        x = paddle.concat([b, a], axis=1)
        x = F.avg_pool2d(F.sigmoid(self.conv2(x)), 2, 2)
        x = paddle.flatten(x, 1) * 2.0 + 0.5
        x = self.drop(F.relu(self.fc1(x)))
        return F.softmax(self.fc2(x), axis=-1)


class ResidualNet(nn.Layer):
    """Conv + batch_norm + relu stem, two residual blocks (elementwise_add), global average pool,
    reshape2 to [N, C], linear head."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2D(3, 8, 3, padding=1, bias_attr=False), nn.BatchNorm2D(8), nn.ReLU())
        self.blocks = nn.LayerList([self._block(8) for _ in range(2)])
        self.pool = nn.AdaptiveAvgPool2D(1)
        self.head = nn.Linear(8, 5)
        for m in self.sublayers():  # non-trivial running statistics, so a wrong epsilon or order shows
            if isinstance(m, nn.BatchNorm2D):
                m._mean.set_value(paddle.rand(m._mean.shape) * 0.2)
                m._variance.set_value(paddle.rand(m._variance.shape) + 0.5)

    @staticmethod
    def _block(c):
        return nn.Sequential(nn.Conv2D(c, c, 3, padding=1, bias_attr=False), nn.BatchNorm2D(c), nn.ReLU(),
                             nn.Conv2D(c, c, 3, padding=1, bias_attr=False), nn.BatchNorm2D(c))

    def forward(self, x):
        x = self.stem(x)
        for b in self.blocks:
            x = F.relu(x + b(x))
        x = self.pool(x)
        return self.head(paddle.reshape(x, [-1, 8]))


class Encoder(nn.Layer):
    """Token embedding (lookup_table_v2) + learned positions (slice), a 2-layer nn.TransformerEncoder
    (layer_norm, matmul with transpose_y, softmax, gelu, reshape2/transpose2, scale), an additive
    padding mask built with unsqueeze2, and the first token's features."""

    def __init__(self, vocab=50, dim=32, heads=4, max_len=16):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.pos = self.create_parameter([1, max_len, dim])
        layer = nn.TransformerEncoderLayer(dim, heads, 64, dropout=0.1, activation="gelu")
        self.encoder = nn.TransformerEncoder(layer, 2)
        self.head = nn.Linear(dim, 3)

    def forward(self, ids, mask):
        seq = ids.shape[1]
        x = self.embed(ids) + self.pos[:, :seq, :]
        attn_mask = paddle.unsqueeze((1.0 - mask) * -1e4, axis=[1, 2])
        x = self.encoder(x, attn_mask)
        return self.head(x[:, 0, :])


class Decoder(nn.Layer):
    """A segmentation decoder: conv2d_transpose (stride 2, output_padding, groups; its bias a separate add),
    nearest_interp_v2 by a scale factor, bilinear_interp_v2 to a size (half-pixel, align_corners, and
    align_mode 1's asymmetric coordinates), nearest to a size."""

    def __init__(self):
        super().__init__()
        self.down = nn.Conv2D(3, 8, 3, stride=2, padding=1)
        self.up = nn.Conv2DTranspose(8, 6, 3, stride=2, padding=1, output_padding=1, groups=2)
        self.head = nn.Conv2D(6, 4, 1)

    def forward(self, x):  # x: [batch, 3, 10, 12]
        f = F.relu(self.down(x))  # [.., 5, 6]
        u = self.up(F.interpolate(f, scale_factor=2, mode="nearest"))  # [.., 20, 24]
        a = F.interpolate(u, size=[9, 11], mode="bilinear", align_corners=False)
        b = F.interpolate(u, size=[9, 11], mode="bilinear", align_corners=True)
        c = F.interpolate(u, size=[9, 11], mode="bilinear", align_corners=False, align_mode=1)
        d = F.interpolate(f, size=[9, 11], mode="nearest")
        return paddle.concat([self.head(a + b + c).flatten(1), d.flatten(1)], axis=1)


class SuperRes(nn.Layer):
    """A super-resolution head: bicubic_interp_v2 up by a scale factor (half-pixel coordinates, a = -0.75),
    to a size with align_corners, and down to a size (taps past the edges)."""

    def __init__(self):
        super().__init__()
        self.feat = nn.Conv2D(3, 6, 3, padding=1)
        self.head = nn.Conv2D(6, 3, 3, padding=1)

    def forward(self, x):  # x: [batch, 3, 7, 9]
        f = F.relu(self.feat(x))
        a = F.interpolate(f, scale_factor=2, mode="bicubic", align_corners=False)  # [.., 14, 18]
        b = F.interpolate(f, size=[11, 5], mode="bicubic", align_corners=True)
        c = F.interpolate(a, size=[8, 10], mode="bicubic", align_corners=False)
        return paddle.concat([self.head(a).flatten(1), b.flatten(1), c.flatten(1)], axis=1)


class SegHead(nn.Layer):
    """A PaddleSeg head: logits resized back to the input's extents read by paddle.shape (OutSize: a slice
    of the shape, cast to int32), features to a size given extent by extent (SizeTensor: 0-D slices) and
    down by a scale held in a tensor (Scale)."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2D(3, 8, 3, stride=2, padding=1)
        self.cls = nn.Conv2D(8, 3, 1)

    def forward(self, x):  # x: [batch, 3, 12, 10]
        f = F.relu(self.stem(x))
        logit = F.interpolate(self.cls(f), paddle.shape(x)[2:], mode="bilinear", align_corners=False)
        h, w = paddle.shape(x)[2], paddle.shape(x)[3]
        up = F.interpolate(f, size=[h, w], mode="nearest")
        down = F.interpolate(f, scale_factor=paddle.full([2], 0.5), mode="bilinear", align_corners=False, align_mode=0)
        return paddle.concat([logit.flatten(1), up.flatten(1), down.flatten(1)], axis=1)


def save(name, model, specs, inputs):
    model.eval()
    path = os.path.join(HERE, PREFIX + name)
    paddle.jit.save(model, path, input_spec=specs)
    out = model(*[paddle.to_tensor(a) for a in inputs])
    for i, a in enumerate(inputs):
        np.save(f"{path}.input{i}.npy", a)
    np.save(path + ".output.npy", out.numpy())
    print("wrote", path, [os.path.basename(f) for f in os.listdir(HERE) if f.startswith(PREFIX + name)])


def decoder():
    x = np.random.rand(2, 3, 10, 12).astype("float32")
    save("decoder", Decoder(), [paddle.static.InputSpec([None, 3, 10, 12], "float32", "x")], [x])


def superres():
    x = np.random.rand(2, 3, 7, 9).astype("float32")
    save("superres", SuperRes(), [paddle.static.InputSpec([None, 3, 7, 9], "float32", "x")], [x])


def seghead():
    x = np.random.rand(2, 3, 12, 10).astype("float32")
    model = SegHead()
    save("seghead", model, [paddle.static.InputSpec([None, 3, 12, 10], "float32", "x")], [x])
    # The same weights with the spatial extents left to run time, as PaddleSeg exports by default.
    save("seghead_any_size", model, [paddle.static.InputSpec([None, 3, None, None], "float32", "x")], [x])


LATER = {"decoder": decoder, "superres": superres, "seghead": seghead}  # added later: made alone, the rest kept


def main():
    if len(sys.argv) == 2 and sys.argv[1] in LATER:
        return LATER[sys.argv[1]]()
    img = np.random.rand(2, 1, 28, 28).astype("float32")
    save("lenet", LeNet(), [paddle.static.InputSpec([None, 1, 28, 28], "float32", "image")], [img])
    x = np.random.rand(2, 3, 16, 16).astype("float32")
    save("resnet", ResidualNet(), [paddle.static.InputSpec([None, 3, 16, 16], "float32", "x")], [x])
    ids = np.random.randint(0, 50, size=(2, 8)).astype("int64")
    mask = np.ones((2, 8), "float32")
    mask[1, 5:] = 0.0
    save("encoder", Encoder(), [paddle.static.InputSpec([None, 8], "int64", "ids"),
                                paddle.static.InputSpec([None, 8], "float32", "mask")], [ids, mask])
    for make in LATER.values():
        make()


if __name__ == "__main__":
    main()
