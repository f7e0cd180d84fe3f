# A torchvision ImageNet model exported to ONNX as users export it, for the zoo benches (onnx_zoo.sh,
# zoo_quant.py): random weights (seed 0) with batch-norm statistics and affines drawn away from their
# defaults, so that no layer's output is degenerate, and a random head where torchvision zero-initialises
# it (the ViTs: all-zero logits would match anything); 224x224, opset 13 (14 for the ViTs, whose attention
# torch writes as scaled_dot_product_attention from there), dynamic batch, the TorchScript exporter;
# input "input", output "logits". "segmentation.NAME" is torchvision.models.segmentation's NAME (21 classes,
# no aux head), its "out" map [batch, 21, 224, 224] as the output: DeepLabV3, FCN and LR-ASPP, whose heads
# resize with F.interpolate.
# With "dynamo" after OUT.onnx: torch.onnx.export's default exporter instead (dynamo, its opset: 20 in
# torch 2.15; the batch a torch.export Dim, traced at batch 2 since torch specialises extents of 1).
#   usage: PY bench/tv_export.py NAME OUT.onnx [dynamo]   (PY with torch and torchvision; dynamo: onnxscript)
import sys

import torch
import torchvision


class SegmentationOut(torch.nn.Module):
    """A segmentation model's dict of maps as its "out" map alone (what ONNX export needs)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x)["out"]


def export(name, path, exporter="torchscript"):
    torch.manual_seed(0)
    if name.startswith("segmentation."):
        seg = getattr(torchvision.models.segmentation, name.split(".", 1)[1])(weights=None, weights_backbone=None, aux_loss=False)
        m = SegmentationOut(seg).eval()
    else:
        m = getattr(torchvision.models, name)(weights=None).eval()
    with torch.no_grad():
        for mod in m.modules():
            if isinstance(mod, torch.nn.BatchNorm2d):
                mod.running_mean.uniform_(-0.1, 0.1)
                mod.running_var.uniform_(0.5, 1.5)
                mod.weight.uniform_(0.5, 1.5)
                mod.bias.uniform_(-0.1, 0.1)
        head = getattr(getattr(m, "heads", None), "head", None)
        if isinstance(head, torch.nn.Linear):
            head.weight.normal_(0, 0.02)
            head.bias.uniform_(-0.1, 0.1)
    if exporter == "dynamo":
        batch = torch.export.Dim("batch", min=1, max=1024)
        torch.onnx.export(m, (torch.randn(2, 3, 224, 224),), path, input_names=["input"], output_names=["logits"],
                          dynamic_shapes=({0: batch},))
        return
    opset = 14 if name.startswith("vit_") else 13
    torch.onnx.export(m, torch.randn(1, 3, 224, 224), path, opset_version=opset, input_names=["input"], output_names=["logits"],
                      dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}}, dynamo=False)


if __name__ == "__main__":
    export(*sys.argv[1:4])
