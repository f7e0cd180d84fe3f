# Peer for examples/vit_fmnist.yaml: the same vision transformer and recipe in PyTorch (the peer that
# counts is PyTorch 2.x from pip: bash ../shared/peers/torch2_venv.sh). 4x4 patches to width 64, a zero
# class token, learned positions (uniform, std 0.02), 4 pre-norm nn.TransformerEncoderLayer (4 heads,
# feed-forward 128, GELU, no dropout), final LayerNorm, the class token to a Linear. AdamW lr 2e-3,
# weight decay 0.05, 300 warmup steps then cosine to 0, global grad-norm clip 1.0, batch 128, random
# horizontal flips, inputs normalised to mean 0.286 / std 0.353. Prints one line like torch_fmnist.py.
#   usage: python bench/torch_vit_fmnist.py [--epochs N] [--threads N] [--limit N]
import argparse, math, resource, time
import numpy as np, torch, torch.nn as nn, torch.nn.functional as F

from fmnist_data import D, idx
p = argparse.ArgumentParser()
p.add_argument("--epochs", type=int, default=10); p.add_argument("--threads", type=int, default=2)
p.add_argument("--limit", type=int, default=0); p.add_argument("--batch", type=int, default=128)
a = p.parse_args()

def images(name):
    return (torch.tensor(idx(D + name), dtype=torch.float32) / 255. - 0.286) / 0.353

class ViT(nn.Module):
    def __init__(self, dim=64, layers=4, heads=4, ff=128, patch=4):
        super().__init__()
        self.proj = nn.Conv2d(1, dim, patch, stride=patch)
        tokens = (28 // patch) ** 2 + 1
        self.cls = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos = nn.Parameter(torch.empty(1, tokens, dim).uniform_(-0.02 * 3 ** 0.5, 0.02 * 3 ** 0.5))
        layer = nn.TransformerEncoderLayer(dim, heads, ff, dropout=0.0, activation="gelu", batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, 10)

    def forward(self, x):
        t = self.proj(x).flatten(2).transpose(1, 2)
        t = torch.cat([self.cls.expand(t.shape[0], -1, -1), t], 1) + self.pos
        return self.head(self.norm(self.encoder(t))[:, 0])

torch.set_num_threads(a.threads); torch.manual_seed(0)
xtr, xte = images("train-images-idx3-ubyte.gz"), images("t10k-images-idx3-ubyte.gz")
ytr = torch.tensor(idx(D + "train-labels-idx1-ubyte.gz"), dtype=torch.int64)
yte = torch.tensor(idx(D + "t10k-labels-idx1-ubyte.gz"), dtype=torch.int64)
if a.limit:
    xtr, ytr, xte, yte = xtr[:a.limit], ytr[:a.limit], xte[:a.limit], yte[:a.limit]
net = ViT()
opt = torch.optim.AdamW(net.parameters(), lr=2e-3, weight_decay=0.05)
steps_per_epoch = (len(xtr) + a.batch - 1) // a.batch
total, warmup = a.epochs * steps_per_epoch, 300
sched = torch.optim.lr_scheduler.LambdaLR(
    opt, lambda s: min(1.0, s / warmup) * (1 + math.cos(math.pi * min(s, total) / total)) / 2)

t0 = time.time(); steps = 0
for ep in range(a.epochs):
    perm = torch.randperm(len(xtr)); net.train()
    for i in range(0, len(xtr), a.batch):
        b = perm[i:i + a.batch]
        x = xtr[b]
        flip = torch.rand(len(b)) < 0.5
        x = torch.where(flip[:, None, None, None], x.flip(3), x)
        loss = F.cross_entropy(net(x), ytr[b])
        opt.zero_grad(); loss.backward()
        nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        opt.step(); sched.step(); steps += 1
t1 = time.time(); net.eval()
with torch.no_grad():
    acc = sum((net(xte[i:i + 1000]).argmax(1) == yte[i:i + 1000]).sum().item() for i in range(0, len(xte), 1000)) / len(xte)
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(f"arch=vit epochs={a.epochs} threads={torch.get_num_threads()} steps={steps} torch={torch.__version__} "
      f"train_s={t1 - t0:.2f} samples_per_s={len(xtr) * a.epochs / (t1 - t0):.0f} test_acc={acc:.4f} "
      f"peak_rss_mb={rss:.0f}")
