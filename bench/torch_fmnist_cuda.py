# GPU peer for `pd-train --device cuda`: PyTorch eager on the same GPU, the recipes of
# examples/mlp_fmnist.yaml and examples/resnet_fmnist.yaml (batches built on the host and copied to
# the GPU each step, as pd-train does; random horizontal flips for the residual net).
# usage: python3 torch_fmnist_cuda.py --arch mlp|resnet [--epochs N] [--amp bf16|f16]   prints samples/s and test accuracy
# --amp: torch.autocast around forward and loss (O1), with a GradScaler for f16, as `amp:` in pd-train.
import argparse, math, time
import numpy as np, torch, torch.nn as nn, torch.nn.functional as F

from fmnist_data import D, idx
p = argparse.ArgumentParser()
p.add_argument("--arch", default="mlp"); p.add_argument("--epochs", type=int, default=1)
p.add_argument("--amp", choices=["bf16", "f16"])
a = p.parse_args()
dev = torch.device("cuda")

def images(name):
    return (torch.tensor(idx(D + name), dtype=torch.float32) / 255. - 0.286) / 0.353

def bn_conv(cin, cout, k, s):
    return [nn.Conv2d(cin, cout, k, stride=s, padding=k // 2, bias=False), nn.BatchNorm2d(cout)]

class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.a = nn.Sequential(*bn_conv(cin, cout, 3, stride), nn.ReLU(), *bn_conv(cout, cout, 3, 1))
        self.proj = nn.Sequential(*bn_conv(cin, cout, 1, stride)) if stride != 1 else nn.Identity()
    def forward(self, x):
        return F.relu(self.a(x) + self.proj(x))

torch.manual_seed(0)
xtr, xte = images("train-images-idx3-ubyte.gz"), images("t10k-images-idx3-ubyte.gz")
ytr = torch.tensor(idx(D + "train-labels-idx1-ubyte.gz"), dtype=torch.int64)
yte = torch.tensor(idx(D + "t10k-labels-idx1-ubyte.gz"), dtype=torch.int64)
if a.arch == "mlp":
    net = nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10))
    batch, opt, warmup = 64, None, 0
else:
    net = nn.Sequential(*bn_conv(1, 32, 3, 1), nn.ReLU(), Block(32, 32, 1), Block(32, 64, 2), Block(64, 128, 2),
                        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, 10))
    batch, warmup = 128, 200
net = net.to(dev)
opt = (torch.optim.Adam(net.parameters(), lr=1e-3) if a.arch == "mlp"
       else torch.optim.AdamW(net.parameters(), lr=0.003, weight_decay=5e-4))
base = [g["lr"] for g in opt.param_groups]
amp_dtype = {"bf16": torch.bfloat16, "f16": torch.float16}.get(a.amp)
scaler = torch.amp.GradScaler("cuda", enabled=a.amp == "f16")
steps = math.ceil(len(xtr) / batch) * a.epochs
step, t_train, n_train = 0, 0.0, 0
for epoch in range(a.epochs):
    net.train()
    perm = torch.randperm(len(xtr))
    torch.cuda.synchronize(); t0 = time.perf_counter()
    for i in range(0, len(xtr), batch):
        sel = perm[i:i + batch]
        x, y = xtr[sel], ytr[sel]
        if a.arch == "resnet":
            flip = torch.rand(len(sel)) < 0.5
            x = torch.where(flip[:, None, None, None], x.flip(3), x)
        x, y = x.to(dev), y.to(dev)
        scale = (step + 1) / warmup if step < warmup else 0.5 * (1 + math.cos(math.pi * step / steps))
        for g, b in zip(opt.param_groups, base): g["lr"] = b * scale
        with torch.autocast("cuda", dtype=amp_dtype or torch.float32, enabled=amp_dtype is not None):
            loss = F.cross_entropy(net(x), y)
        opt.zero_grad(); scaler.scale(loss).backward(); scaler.step(opt); scaler.update(); step += 1
        loss.item()  # pd-train reads the loss every step too
    torch.cuda.synchronize(); t_train += time.perf_counter() - t0; n_train += len(xtr)
    net.eval(); correct = 0
    with torch.no_grad():
        for i in range(0, len(xte), 500):
            correct += (net(xte[i:i + 500].to(dev)).argmax(1).cpu() == yte[i:i + 500]).sum().item()
    print(f"torch {torch.__version__} {a.arch}{' amp ' + a.amp if a.amp else ''} epoch {epoch + 1}: {n_train / t_train:.0f} samples/s, test_acc {correct / len(xte):.4f}", flush=True)
