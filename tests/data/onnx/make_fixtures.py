#!/usr/bin/env python3
"""Writes the ONNX fixtures of tests/cli/pd_convert_test.sh: small models exported by torch.onnx (the
TorchScript exporter, as users' opset 13-17 files are made; dynamo_net by the default exporter of torch 2.9+,
opset 20), each with an input and onnxruntime's output
as .npy, and hand-made broken models for the error paths. Needs torch, onnx and onnxruntime:

    PY=$(bash ../shared/peers/torch2_venv.sh) && $PY tests/data/onnx/make_fixtures.py [NAME ...]

The files are committed so that CI needs none of these packages.
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
import torch
import torch.nn as nn
import torch.nn.functional as F
from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))
torch.manual_seed(0)


class ConvNet(nn.Module):
    """LeNet-size: conv + bn, relu6, max pool (ceil mode), avg pool, dropout, and torch's
    view(x.size(0), -1) flatten, whose Shape/Gather/Unsqueeze/Concat subgraph keeps the batch dynamic."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
        self.bn1 = nn.BatchNorm2d(6)
        self.conv2 = nn.Conv2d(6, 16, 3, stride=1, padding=1, bias=False)
        self.fc1 = nn.Linear(16 * 4 * 4, 32)
        self.fc2 = nn.Linear(32, 10)
        self.drop = nn.Dropout(0.3)

    def forward(self, x):
        x = F.max_pool2d(F.relu6(self.bn1(self.conv1(x))), 3, 2, ceil_mode=True)
        x = F.avg_pool2d(torch.sigmoid(self.conv2(x)), 2)
        x = F.leaky_relu(x, 0.1)
        x = F.adaptive_avg_pool2d(x, 4)
        x = x.view(x.size(0), -1)
        return F.log_softmax(self.fc2(self.drop(torch.tanh(self.fc1(x)))), dim=1)


class MobileBlock(nn.Module):
    """MobileNetV3-style: depthwise conv, squeeze-excitation (global pool, hardsigmoid, mul), hardswish,
    a residual add, and an asymmetric padding Conv."""

    def __init__(self):
        super().__init__()
        self.expand = nn.Conv2d(8, 16, 1)
        self.bn = nn.BatchNorm2d(16)
        self.dw = nn.Conv2d(16, 16, 3, padding=1, groups=16)
        self.se1 = nn.Conv2d(16, 4, 1)
        self.se2 = nn.Conv2d(4, 16, 1)
        self.project = nn.Conv2d(16, 8, 1)
        self.head = nn.Linear(8, 5)

    def forward(self, x):
        y = F.hardswish(self.bn(self.expand(x)))
        y = F.hardswish(self.dw(y))
        s = F.hardsigmoid(self.se2(F.relu(self.se1(F.adaptive_avg_pool2d(y, 1)))))
        y = self.project(y * s) + x
        y = F.pad(y, (0, 1, 0, 1))
        y = torch.flatten(F.adaptive_avg_pool2d(y, 1), 1)
        return F.softmax(self.head(y), dim=-1)


class DenseFire(nn.Module):
    """DenseNet / SqueezeNet pieces: channel concat of branches, silu, gelu (erf), a split, reductions."""

    def __init__(self):
        super().__init__()
        self.squeeze = nn.Conv2d(4, 4, 1)
        self.e1 = nn.Conv2d(4, 6, 1)
        self.e3 = nn.Conv2d(4, 6, 3, padding=1)
        self.fc = nn.Linear(12, 3)

    def forward(self, x):
        s = F.silu(self.squeeze(x))
        y = torch.cat([F.relu(self.e1(s)), F.gelu(self.e3(s))], 1)
        a, b = torch.split(y, [5, 7], dim=1)
        y = torch.cat([b, a], 1)
        y = y.mean(dim=(2, 3)) + y.amax(dim=(2, 3)) * 0.5
        return self.fc(y)


class Encoder(nn.Module):
    """A BERT-style encoder: token embedding + positions, two torch TransformerEncoder layers, a CLS head."""

    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(50, 16)
        self.pos = nn.Parameter(torch.randn(1, 8, 16) * 0.1)
        layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, activation="gelu", batch_first=True)
        self.enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(16)
        self.head = nn.Linear(16, 4)

    def forward(self, ids):
        h = self.enc(self.tok(ids) + self.pos)
        return self.head(self.norm(h)[:, 0])


class ShuffleBlock(nn.Module):
    """ShuffleNetV2 / EfficientNet pieces: a channel shuffle written as torch writes it (view to
    [batch, groups, channels // groups, h, w], transpose, view back: an integer Div in the shape
    subgraph, and reshapes of the dynamic batch around a transpose), SiLU and a squeeze-excitation."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(6, 12, 3, padding=1)
        self.bn = nn.BatchNorm2d(12)
        self.se1 = nn.Conv2d(12, 4, 1)
        self.se2 = nn.Conv2d(4, 12, 1)
        self.head = nn.Linear(12, 4)

    def forward(self, x):
        y = F.silu(self.bn(self.conv(x)))
        b, c, h, w = y.size()
        y = y.view(b, 3, c // 3, h, w).transpose(1, 2).contiguous().view(b, -1, h, w)
        y = y * torch.sigmoid(self.se2(F.silu(self.se1(F.adaptive_avg_pool2d(y, 1)))))
        return self.head(torch.flatten(F.adaptive_avg_pool2d(y, 1), 1))


class WindowBlock(nn.Module):
    """Swin's shifted-window attention (torchvision's own module): the window padding, the windows folded
    into the batch and back (Mul and Div of the batch in the shape subgraph, reshapes whose other extents
    2 and 3 do not divide), and the attention mask built with ScatterND and Not from the map's extents."""

    def __init__(self):
        super().__init__()
        from torchvision.models.swin_transformer import ShiftedWindowAttention
        self.norm = nn.LayerNorm(16)
        self.attn = ShiftedWindowAttention(16, [4, 4], [2, 2], num_heads=2)
        self.head = nn.Linear(16, 5)

    def forward(self, x):  # x: [batch, 8, 8, 16], channels last as Swin's blocks take it
        x = x + self.attn(self.norm(x))
        return self.head(x.mean(dim=(1, 2)))


class ClassToken(nn.Module):
    """A ViT's front (torchvision's encoder block): patches by a strided conv, a learned class token
    expanded to the dynamic batch (expand(n, -1, -1): Expand of a constant to [batch, 1, C], through
    Equal and Where on the target), and nn.MultiheadAttention, which reshapes the flat tokens
    sequence-first ([17, -1, 16])."""

    def __init__(self):
        super().__init__()
        from torchvision.models.vision_transformer import EncoderBlock
        self.patch = nn.Conv2d(3, 16, 4, stride=4)
        self.cls = nn.Parameter(torch.randn(1, 1, 16))
        self.block = EncoderBlock(2, 16, 32, 0.0, 0.0)
        self.head = nn.Linear(16, 5)

    def forward(self, x):
        n = x.shape[0]
        x = self.patch(x).reshape(n, 16, -1).permute(0, 2, 1)
        x = torch.cat([self.cls.expand(n, -1, -1), x], dim=1)
        return self.head(self.block(x)[:, 0])


class TokenMlp(nn.Module):
    """A transformer's MLP on [batch, tokens, channels], exported with constant folding on as users'
    files mostly are: torch folds each weight's transpose, leaving MatMul by a constant [K, N] matrix,
    then Add of the bias and GELU as Div, Erf, Add, Mul, Mul."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 32)
        self.fc2 = nn.Linear(32, 8)

    def forward(self, x):
        return (x + self.fc2(F.gelu(self.fc1(x)))).mean(dim=1)


class UpsampleFpn(nn.Module):
    """An FPN / U-Net decoder's resizing, each form torch writes: nearest by a scale factor (Resize with
    scales, asymmetric + floor), bilinear to a size with and without align_corners (sizes from the input's
    Shape: batch and channels stay dynamic), nearest to a size that is no multiple, and a bilinear
    downsample by 0.6."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.c2 = nn.Conv2d(8, 8, 3, stride=2, padding=1)
        self.lateral = nn.Conv2d(8, 8, 1)
        self.head = nn.Conv2d(8, 4, 3, padding=1)

    def forward(self, x):  # x: [batch, 3, 12, 10]
        f1 = torch.relu(self.c1(x))  # [.., 6, 5]
        f2 = torch.relu(self.c2(f1))  # [.., 3, 3]
        up = F.interpolate(f2, scale_factor=2, mode="nearest")[:, :, :6, :5] + self.lateral(f1)
        a = F.interpolate(up, size=(12, 10), mode="bilinear", align_corners=False)
        b = F.interpolate(up, size=(11, 7), mode="bilinear", align_corners=True)
        c = F.interpolate(f1, size=(13, 9), mode="nearest")
        d = F.interpolate(a, scale_factor=0.6, mode="bilinear", align_corners=False)
        return torch.cat([self.head(a).flatten(1), b.flatten(1), c.flatten(1), d.flatten(1)], dim=1)


class BicubicUp(nn.Module):
    """Bicubic resizing as super-resolution and detection heads write it: torch's bicubic up by a factor
    (half_pixel, Keys' a = -0.75), to a size with align_corners=True, and down by 0.6 (taps past the
    edges); the batch is dynamic."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 6, 3, padding=1)
        self.head = nn.Conv2d(6, 3, 3, padding=1)

    def forward(self, x):  # x: [batch, 3, 7, 9]
        f = torch.relu(self.c1(x))
        a = F.interpolate(f, scale_factor=2, mode="bicubic", align_corners=False)
        b = F.interpolate(f, size=(11, 5), mode="bicubic", align_corners=True)
        c = F.interpolate(a, scale_factor=0.6, mode="bicubic", align_corners=False)
        return torch.cat([self.head(a).flatten(1), b.flatten(1), c.flatten(1)], dim=1)


class AudioConv1d(nn.Module):
    """A 1-D convolution stack as audio and sequence models have (wav2vec2's feature encoder, TCNs): strided,
    dilated and grouped Conv1d, MaxPool1d, AvgPool1d, global average over time, a linear head."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv1d(2, 8, 5, stride=2, padding=2)
        self.c2 = nn.Conv1d(8, 8, 3, dilation=2, padding=2, groups=2)
        self.c3 = nn.Conv1d(8, 16, 3, padding=1, bias=False)
        self.head = nn.Linear(16, 4)

    def forward(self, x):  # x: [batch, 2, 40]
        x = F.gelu(self.c1(x))
        x = F.max_pool1d(F.relu(self.c2(x)), 2)
        x = F.avg_pool1d(self.c3(x), 3, stride=2, padding=1)
        return self.head(F.adaptive_avg_pool1d(x, 1).squeeze(-1))


class UNetUp(nn.Module):
    """A U-Net / GAN decoder's transposed convolutions: 2x2 stride 2 (U-Net's up-convolution), 3x3 stride 2
    with output_padding and groups, a dilated one without bias, and a 1-D ConvTranspose1d over the rows."""

    def __init__(self):
        super().__init__()
        self.up1 = nn.ConvTranspose2d(8, 6, 2, stride=2)
        self.up2 = nn.ConvTranspose2d(6, 4, 3, stride=2, padding=1, output_padding=1, groups=2)
        self.up3 = nn.ConvTranspose2d(4, 3, 3, padding=2, dilation=2, bias=False)
        self.up1d = nn.ConvTranspose1d(3, 2, 4, stride=2, padding=1)

    def forward(self, x):  # x: [batch, 8, 3, 4]
        y = self.up3(F.relu(self.up2(F.relu(self.up1(x)))))  # [.., 3, 12, 16]
        return self.up1d(y.flatten(2)).flatten(1)  # [.., 2 * 384]


class DilatedAspp(nn.Module):
    """DeepLabV3's ASPP on a small map: 3x3 convolutions at dilation 2 (every tap live), at dilation 8 (only
    the centre tap reads the 8x8 map: conv_tap_trim makes it 1x1), a pooled branch resized back, and a
    stride-2 one at dilation 6 on the stem's map in channel blocks, for which oneDNN 2.6 has only its
    reference kernel (paddle-cpp's reference blocked convolution runs it instead)."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 3, padding=1)
        self.d2 = nn.Conv2d(16, 16, 3, padding=2, dilation=2)
        self.d8 = nn.Conv2d(16, 16, 3, padding=8, dilation=8)
        self.s2 = nn.Conv2d(16, 16, 3, stride=2, padding=6, dilation=6)
        self.pool = nn.Conv2d(16, 16, 1)

    def forward(self, x):  # x: [batch, 3, 8, 8]
        f = F.relu(self.stem(x))
        p = F.interpolate(F.relu(self.pool(F.adaptive_avg_pool2d(f, 1))), size=(8, 8), mode="bilinear", align_corners=False)
        a = F.relu(self.d2(f)) + F.relu(self.d8(f)) + p
        return torch.cat([a.flatten(1), self.s2(f).flatten(1)], dim=1)


class DynamoNet(nn.Module):
    """What torch.onnx.export writes by default since torch 2.9 (its dynamo exporter, opset 20 in torch
    2.15): BatchNorm folded into the Conv, ReduceMean / ReduceMax with their axes as an input (opset 18),
    Resize with antialias and keep_aspect_ratio_policy, torch.chunk as a Split of explicit sizes, Gelu
    (opset 20) in both forms, LayerNormalization, Reshape with allowzero; the batch is a torch.export Dim."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 10, 3, padding=1)
        self.bn = nn.BatchNorm2d(10)
        self.norm = nn.LayerNorm(8)
        self.fc = nn.Linear(8, 5)

    def forward(self, x):  # x: [batch, 3, 8, 8]
        f = F.avg_pool2d(torch.relu(self.bn(self.conv(x))), 2)
        f = F.interpolate(f, scale_factor=2.0, mode="bilinear", align_corners=False)
        a, b, c = torch.chunk(f, 3, dim=1)  # 4, 4 and 2 channels
        pooled = F.pad(a, (1, 2, 0, 1)).mean(dim=(2, 3))
        peak = b.amax(dim=(2, 3))
        head = self.fc(F.gelu(self.norm(c.mean(dim=3).flatten(1)[:, :8])))
        return torch.cat([pooled, peak, head, F.gelu(c, approximate="tanh").flatten(1)], dim=1)


def randomize_bn(m):
    for mod in m.modules():
        if isinstance(mod, nn.BatchNorm2d):
            mod.running_mean.uniform_(-0.5, 0.5)
            mod.running_var.uniform_(0.5, 1.5)
            mod.weight.data.uniform_(0.5, 1.5)
            mod.bias.data.uniform_(-0.2, 0.2)


def save_with_ort_output(name, path, feed, input_name="input"):
    out = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {input_name: feed})[0]
    np.save(os.path.join(HERE, name + ".input.npy"), feed)
    np.save(os.path.join(HERE, name + ".output.npy"), out)
    m = onnx.load(path)
    print(f"{name}: opset {m.opset_import[0].version}, {os.path.getsize(path)} bytes, ops {sorted({n.op_type for n in m.graph.node})}")


def export(name, model, x, opset, dynamic_batch=True, input_name="input", fold=False):
    model.eval()
    randomize_bn(model)
    path = os.path.join(HERE, name + ".onnx")
    axes = {input_name: {0: "batch"}, "output": {0: "batch"}} if dynamic_batch else None
    # Constant folding off keeps BatchNormalization, Identity and the shape subgraphs, as users'
    # files often have them (`fold` for the other kind).
    torch.onnx.export(model, (x,), path, opset_version=opset, input_names=[input_name], output_names=["output"],
                      dynamic_axes=axes, do_constant_folding=fold, dynamo=False)
    onnx.checker.check_model(onnx.load(path))
    save_with_ort_output(name, path, x.numpy(), input_name)


def dynamo(name, model, x):
    """Exported by torch.onnx.export's default exporter (dynamo=True; its default opset)."""
    model.eval()
    randomize_bn(model)
    path = os.path.join(HERE, name + ".onnx")
    torch.onnx.export(model, (x,), path, input_names=["input"], output_names=["output"],
                      dynamic_shapes=({0: torch.export.Dim("batch", min=1, max=1024)},))
    onnx.checker.check_model(onnx.load(path), full_check=True)
    save_with_ort_output(name, path, x.numpy())


def opset18_forms():
    """The forms of opsets 18-21 the dynamo exporter does not happen to write, by onnx.helper at opset 21:
    Split by num_outputs with a smaller last part (10 -> 4, 4, 2), Pad and Resize (by sizes) on named axes,
    ReduceMax with axes as an input, ReduceMean with noop_with_empty_axes=1 and no axes (the identity),
    AveragePool with its dilations attribute, Cast with saturate, Gelu; the batch is dynamic."""
    x = helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 10, 4, 4])
    y = helper.make_tensor_value_info("output", TensorProto.FLOAT, ["batch", 16])
    ints = lambda name, v: helper.make_tensor(name, TensorProto.INT64, [len(v)], v)
    n = helper.make_node
    nodes = [n("Split", ["input"], ["a", "b", "c"], axis=1, num_outputs=3),
             n("Pad", ["a", "pads", "", "pad_axes"], ["a_padded"]),  # H 4 -> 5, W 4 -> 7
             n("Resize", ["b", "", "", "sizes"], ["b_resized"], axes=[2, 3], mode="linear"),  # [.., 8, 6]
             n("ReduceMax", ["a_padded", "hw"], ["a_max"], keepdims=0),
             n("ReduceMean", ["b_resized", "hw"], ["b_mean"], keepdims=0),
             n("Gelu", ["b_mean"], ["b_gelu"]),
             n("ReduceMean", ["c"], ["c_same"], noop_with_empty_axes=1),
             n("AveragePool", ["c_same"], ["c_pooled"], kernel_shape=[2, 2], strides=[2, 2], dilations=[1, 1]),
             n("Flatten", ["c_pooled"], ["c_flat"], axis=1),
             n("Cast", ["a_max"], ["a_cast"], to=TensorProto.FLOAT, saturate=1),
             n("Concat", ["a_cast", "b_gelu", "c_flat"], ["output"], axis=1)]
    consts = [ints("pads", [0, 1, 1, 2]), ints("pad_axes", [2, 3]), ints("sizes", [8, 6]), ints("hw", [2, 3])]
    m = helper.make_model(helper.make_graph(nodes, "opset18_forms", [x], [y], consts),
                          opset_imports=[helper.make_opsetid("", 21)])
    m.ir_version = 10
    onnx.checker.check_model(m, full_check=True)
    path = os.path.join(HERE, "opset18_forms.onnx")
    onnx.save(m, path)
    save_with_ort_output("opset18_forms", path, np.random.default_rng(1).standard_normal((2, 10, 4, 4)).astype(np.float32))


def gather_nd():
    """GatherND with indices known at import time, as the dynamo exporter writes mask[arange(b)[:, None],
    arange(s)] in HF transformers' attention masks: tuples over every position in order (the data itself),
    pairs picking rows (one negative), and single indices picking whole planes."""
    x = helper.make_tensor_value_info("input", TensorProto.FLOAT, [3, 4, 5])
    y = helper.make_tensor_value_info("output", TensorProto.FLOAT, [3, 45])
    grid = np.stack(np.meshgrid(np.arange(3), np.arange(4), indexing="ij"), axis=-1).astype(np.int64)
    consts = [helper.make_tensor("grid", TensorProto.INT64, grid.shape, grid.flatten()),
              helper.make_tensor("pairs", TensorProto.INT64, [3, 2], [0, 1, 2, 3, -1, 0]),
              helper.make_tensor("planes", TensorProto.INT64, [1, 1], [2]),
              helper.make_tensor("rows", TensorProto.INT64, [2], [3, -1]),
              helper.make_tensor("row", TensorProto.INT64, [2], [1, -1])]
    n = helper.make_node
    nodes = [n("GatherND", ["input", "grid"], ["same"]), n("Reshape", ["same", "rows"], ["same_rows"]),
             n("GatherND", ["input", "pairs"], ["picked"]),  # [3, 5]
             n("GatherND", ["input", "planes"], ["plane"]), n("Reshape", ["plane", "row"], ["plane_row"]),
             n("Expand", ["plane_row", "rows3"], ["plane_rows"]),
             n("Concat", ["same_rows", "picked", "plane_rows"], ["output"], axis=1)]
    consts.append(helper.make_tensor("rows3", TensorProto.INT64, [2], [3, 20]))
    m = helper.make_model(helper.make_graph(nodes, "gather_nd", [x], [y], consts), opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    onnx.checker.check_model(m, full_check=True)
    path = os.path.join(HERE, "gather_nd.onnx")
    onnx.save(m, path)
    save_with_ort_output("gather_nd", path, np.random.default_rng(2).standard_normal((3, 4, 5)).astype(np.float32))


def hf_text(name):
    """A tiny HF transformers model as users export one (needs `pip install transformers`): token ids and an
    attention mask with padding, batch and sequence dynamic, torch's default constant folding. BERT
    (bidirectional padding mask: And, Gather of a bool mask, GatherElements of token types) or GPT-2 (the
    causal mask: LessOrEqual, IsNaN in its attention)."""
    import transformers as tf

    class Logits(nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, ids, mask):
            return self.m(input_ids=ids, attention_mask=mask).logits

    torch.manual_seed(0)
    if name == "hf_bert":
        m = tf.BertForSequenceClassification(tf.BertConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                                           intermediate_size=64, vocab_size=100, max_position_embeddings=32,
                                                           num_labels=3))
    else:
        m = tf.GPT2LMHeadModel(tf.GPT2Config(n_embd=32, n_layer=2, n_head=2, vocab_size=100, n_positions=32))
    model = Logits(m).eval()
    ids = torch.randint(0, 100, (2, 8))
    mask = torch.ones(2, 8, dtype=torch.long)
    mask[1, 5:] = 0  # the second sequence is padded
    path = os.path.join(HERE, name + ".onnx")
    axes = {"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"},
            "output": {0: "batch"} if name == "hf_bert" else {0: "batch", 1: "seq"}}
    torch.onnx.export(model, (ids, mask), path, opset_version=14, input_names=["input_ids", "attention_mask"],
                      output_names=["output"], dynamic_axes=axes, dynamo=False)
    onnx.checker.check_model(onnx.load(path))
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    out = sess.run(None, {"input_ids": ids.numpy(), "attention_mask": mask.numpy()})[0]
    np.save(os.path.join(HERE, name + ".input_ids.npy"), ids.numpy())
    np.save(os.path.join(HERE, name + ".attention_mask.npy"), mask.numpy())
    np.save(os.path.join(HERE, name + ".output.npy"), out)
    ops = sorted({n.op_type for n in onnx.load(path).graph.node})
    print(f"{name}: transformers {tf.__version__}, {os.path.getsize(path)} bytes, ops {ops}")


def logic_ops():
    """The comparison, logical and NaN / Inf tests of HF transformers' mask code, by onnx.helper: IsNaN,
    IsInf (both signs and +inf only), variadic Max and Min, CumSum (exclusive, reverse), GreaterOrEqual,
    LessOrEqual, And, Or, Xor, GatherElements with indices shorter than the data and negative, each cast
    to float and concatenated; the input holds NaN, +inf and -inf."""
    x = helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 6])
    y = helper.make_tensor_value_info("output", TensorProto.FLOAT, ["batch", 75])
    c = helper.make_tensor("c", TensorProto.FLOAT, [6], [0.5, -1.0, 2.0, 0.0, 1.5, -0.25])
    half = helper.make_tensor("half", TensorProto.FLOAT, [], [0.5])
    axis = helper.make_tensor("axis", TensorProto.INT64, [], [1])
    idx = helper.make_tensor("idx", TensorProto.INT64, [1, 3], [5, -6, 2])
    n = helper.make_node
    nodes = [n("IsNaN", ["input"], ["nan"]), n("IsInf", ["input"], ["inf"]),
             n("IsInf", ["input"], ["pinf"], detect_negative=0), n("Max", ["input", "c", "half"], ["mx"]),
             n("Min", ["input", "c"], ["mn"]), n("CumSum", ["input", "axis"], ["cs"], exclusive=1, reverse=1),
             n("GreaterOrEqual", ["input", "c"], ["ge"]), n("LessOrEqual", ["input", "c"], ["le"]),
             n("And", ["ge", "le"], ["and"]), n("Or", ["ge", "nan"], ["or"]), n("Xor", ["ge", "le"], ["xor"]),
             n("Shape", ["input"], ["shape"]), n("Slice", ["shape", "zero", "one"], ["batch"]),
             n("Concat", ["batch", "three"], ["idx_shape"], axis=0), n("Expand", ["idx", "idx_shape"], ["idx_b"]),
             n("GatherElements", ["input", "idx_b"], ["ge_idx"], axis=1)]
    consts = [helper.make_tensor("zero", TensorProto.INT64, [1], [0]), helper.make_tensor("one", TensorProto.INT64, [1], [1]),
              helper.make_tensor("three", TensorProto.INT64, [1], [3])]
    parts = []
    for name in ["nan", "inf", "pinf", "ge", "le", "and", "or", "xor"]:
        nodes.append(n("Cast", [name], [name + "_f"], to=TensorProto.FLOAT))
        parts.append(name + "_f")
    parts += ["mx", "mn", "cs", "ge_idx", "input"]
    nodes.append(n("Concat", parts, ["output"], axis=1))
    m = helper.make_model(helper.make_graph(nodes, "logic_ops", [x], [y], [c, half, axis, idx] + consts),
                          opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    onnx.checker.check_model(m)
    path = os.path.join(HERE, "logic_ops.onnx")
    onnx.save(m, path)
    feed = np.random.default_rng(0).standard_normal((2, 6)).astype(np.float32)
    feed[0, 1], feed[1, 2], feed[0, 4] = np.nan, np.inf, -np.inf
    feed[1, 0], feed[1, 3] = 0.5, 0.0  # equal to c there: ties for >= and <=
    out = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"input": feed})[0]
    np.save(os.path.join(HERE, "logic_ops.input.npy"), feed)
    np.save(os.path.join(HERE, "logic_ops.output.npy"), out)
    print(f"logic_ops: opset 13, {os.path.getsize(path)} bytes, output {out.shape}")


def transposed_pads():
    """ConvTranspose as exporters other than torch write it, by onnx.helper: asymmetric pads (with
    output_padding), output_shape alone and with SAME_UPPER, auto_pad SAME_UPPER and SAME_LOWER with an
    odd total padding (dilated, grouped), each flattened and concatenated; the spatial extents are fixed
    (output_shape and SAME need them), the batch is dynamic."""
    rng = np.random.default_rng(1)
    x = helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 4, 5, 6])
    y = helper.make_tensor_value_info("output", TensorProto.FLOAT, ["batch", None])
    n = helper.make_node
    branches = [  # (weight shape, attributes)
        ([4, 3, 3, 3], dict(strides=[2, 2], pads=[0, 1, 1, 0])),
        ([4, 2, 3, 3], dict(strides=[2, 2], output_shape=[10, 12], group=2)),
        ([4, 3, 3, 3], dict(strides=[2, 2], output_shape=[10, 12], auto_pad="SAME_UPPER")),
        ([4, 3, 3, 3], dict(strides=[2, 2], auto_pad="SAME_UPPER")),
        ([4, 3, 3, 3], dict(strides=[2, 2], dilations=[2, 2], auto_pad="SAME_LOWER")),
        ([4, 3, 3, 2], dict(strides=[2, 2], pads=[2, 0, 0, 1], output_padding=[1, 1])),
    ]
    nodes, inits, parts = [], [], []
    for i, (ws, attrs) in enumerate(branches):
        inits.append(helper.make_tensor(f"w{i}", TensorProto.FLOAT, ws, rng.standard_normal(ws).astype(np.float32).ravel()))
        inputs = ["input", f"w{i}"]
        if i % 2 == 0:  # every other one with a bias
            cout = ws[1] * attrs.get("group", 1)
            inits.append(helper.make_tensor(f"b{i}", TensorProto.FLOAT, [cout], rng.standard_normal(cout).astype(np.float32)))
            inputs.append(f"b{i}")
        nodes += [n("ConvTranspose", inputs, [f"t{i}"], **attrs), n("Flatten", [f"t{i}"], [f"f{i}"], axis=1)]
        parts.append(f"f{i}")
    nodes.append(n("Concat", parts, ["output"], axis=1))
    m = helper.make_model(helper.make_graph(nodes, "transposed_pads", [x], [y], inits),
                          opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    onnx.checker.check_model(m)
    path = os.path.join(HERE, "transposed_pads.onnx")
    onnx.save(m, path)
    feed = rng.standard_normal((2, 4, 5, 6)).astype(np.float32)
    out = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"input": feed})[0]
    np.save(os.path.join(HERE, "transposed_pads.input.npy"), feed)
    np.save(os.path.join(HERE, "transposed_pads.output.npy"), out)
    print(f"transposed_pads: opset 13, {os.path.getsize(path)} bytes, output {out.shape}")


def broken():
    """Models every importer must refuse with a clear message."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    # Op types we do not have (one custom domain), several nodes each.
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="relu0"),
             helper.make_node("Celu", ["a"], ["b"], name="celu0"),
             helper.make_node("Celu", ["b"], ["c"], name="celu1"),
             helper.make_node("Mish", ["c"], ["d"], name="mish0"),
             helper.make_node("FusedGemm", ["d"], ["y"], name="fused0", domain="com.microsoft")]
    m = helper.make_model(helper.make_graph(nodes, "g", [x], [y]),
                          opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("com.microsoft", 1)])
    m.ir_version = 7
    onnx.save(m, os.path.join(HERE, "bad_unsupported.onnx"))
    # An opset newer than the range.
    m = helper.make_model(helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y]),
                          opset_imports=[helper.make_opsetid("", 24)])
    m.ir_version = 10
    onnx.save(m, os.path.join(HERE, "bad_opset.onnx"))
    # An opset-18 form the opset-17 checker never sees, so that its converter must refuse it: antialias.
    x4 = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4, 4])
    y4 = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 2, 2])
    scales = helper.make_tensor("scales", TensorProto.FLOAT, [4], [1, 1, 0.5, 0.5])
    node = helper.make_node("Resize", ["x", "", "scales"], ["y"], name="shrink", mode="linear", antialias=1)
    m = helper.make_model(helper.make_graph([node], "g", [x4], [y4], [scales]), opset_imports=[helper.make_opsetid("", 18)])
    m.ir_version = 8
    onnx.save(m, os.path.join(HERE, "bad_antialias.onnx"))
    # An initializer whose bytes do not match its dims.
    w = helper.make_tensor("w", TensorProto.FLOAT, [4], np.ones(4, np.float32).tobytes(), raw=True)
    w.raw_data = np.ones(3, np.float32).tobytes()
    m = helper.make_model(helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "g", [x], [y], [w]),
                          opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    onnx.save(m, os.path.join(HERE, "bad_initializer.onnx"))
    # External data in a file that is not there.
    w = helper.make_tensor("w", TensorProto.FLOAT, [4], np.ones(4, np.float32).tobytes(), raw=True)
    w.data_location = TensorProto.EXTERNAL
    w.ClearField("raw_data")
    e = w.external_data.add()
    e.key, e.value = "location", "weights.bin"
    m = helper.make_model(helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "g", [x], [y], [w]),
                          opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    onnx.save(m, os.path.join(HERE, "bad_external.onnx"))
    # A node reading a value nothing defines.
    m = helper.make_model(helper.make_graph([helper.make_node("Add", ["x", "ghost"], ["y"])], "g", [x], [y]),
                          opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    onnx.save(m, os.path.join(HERE, "bad_undefined.onnx"))
    # Shapes that do not fit: a [1, 4] input into a Gemm with a [3, 5] weight.
    w = helper.make_tensor("w", TensorProto.FLOAT, [3, 5], np.ones(15, np.float32))
    m = helper.make_model(helper.make_graph([helper.make_node("Gemm", ["x", "w"], ["y"], transB=1)], "g", [x], [y], [w]),
                          opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    onnx.save(m, os.path.join(HERE, "bad_shapes.onnx"))
    print("broken models written")


def bad_scatter():
    """ScatterND as the importer refuses it: on a run-time value, and with an index out of range."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])
    idx = helper.make_tensor("idx", TensorProto.INT64, [1, 2], [1, 3])
    upd = helper.make_tensor("upd", TensorProto.FLOAT, [1], [5.0])
    m = helper.make_model(helper.make_graph([helper.make_node("ScatterND", ["x", "idx", "upd"], ["y"], name="scatter0")], "g", [x], [y],
                                            [idx, upd]), opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    onnx.save(m, os.path.join(HERE, "bad_scatter_runtime.onnx"))
    data = helper.make_tensor("data", TensorProto.FLOAT, [2, 4], np.zeros(8, np.float32))
    far = helper.make_tensor("far", TensorProto.INT64, [1, 2], [1, 4])
    m = helper.make_model(helper.make_graph([helper.make_node("ScatterND", ["data", "far", "upd"], ["s"], name="scatter1"),
                                             helper.make_node("Add", ["x", "s"], ["y"])], "g", [x], [y], [data, far, upd]),
                          opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    onnx.save(m, os.path.join(HERE, "bad_scatter_index.onnx"))
    print("bad ScatterND models written")


FIXTURES = {
    "convnet": lambda: export("convnet", ConvNet(), torch.randn(3, 1, 32, 32), 13),
    "mobile_block": lambda: export("mobile_block", MobileBlock(), torch.randn(2, 8, 9, 9), 14),
    "dense_fire": lambda: export("dense_fire", DenseFire(), torch.randn(2, 4, 7, 7), 11),
    "encoder": lambda: export("encoder", Encoder(), torch.randint(0, 50, (2, 8)), 17, dynamic_batch=False, input_name="ids"),
    "shuffle_block": lambda: export("shuffle_block", ShuffleBlock(), torch.randn(2, 6, 8, 8), 13),
    "window_block": lambda: export("window_block", WindowBlock(), torch.randn(2, 8, 8, 16), 13),
    "class_token": lambda: export("class_token", ClassToken(), torch.randn(2, 3, 16, 16), 14),
    "token_mlp": lambda: export("token_mlp", TokenMlp(), torch.randn(2, 5, 8), 13, fold=True),
    "logic_ops": logic_ops,
    "transposed_pads": transposed_pads,
    "upsample_fpn": lambda: export("upsample_fpn", UpsampleFpn(), torch.randn(2, 3, 12, 10), 13),
    "bicubic_up": lambda: export("bicubic_up", BicubicUp(), torch.randn(2, 3, 7, 9), 13),
    "audio_conv1d": lambda: export("audio_conv1d", AudioConv1d(), torch.randn(2, 2, 40), 13),
    "unet_up": lambda: export("unet_up", UNetUp(), torch.randn(2, 8, 3, 4), 13),
    "dilated_aspp": lambda: export("dilated_aspp", DilatedAspp(), torch.randn(1, 3, 8, 8), 13),
    "dynamo_net": lambda: dynamo("dynamo_net", DynamoNet(), torch.randn(3, 3, 8, 8)),
    "opset18_forms": opset18_forms,
    "gather_nd": gather_nd,
    "hf_bert": lambda: hf_text("hf_bert"),
    "hf_gpt2": lambda: hf_text("hf_gpt2"),
    "broken": broken,
    "bad_scatter": bad_scatter,
}

if __name__ == "__main__":
    # Every fixture, or those named (`make_fixtures.py shuffle_block`), so that adding one leaves the
    # others' bytes as they are.
    for name in sys.argv[1:] or FIXTURES:
        FIXTURES[name]()
