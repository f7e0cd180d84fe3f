# Peer for bench/dist.sh: PyTorch DistributedDataParallel with the gloo backend on CPU, training the
# architecture of examples/resnet_fmnist.yaml (or mlp_fmnist.yaml) on the first N Fashion-MNIST samples
# with the same global batch split over the ranks, one thread per rank. Prints samples/s of rank 0.
# usage: python torch_ddp_fmnist.py --world 2 [--arch resnet|mlp] [--limit N] [--batch B] [--epochs E]
import argparse, os, time
import numpy as np, torch, torch.distributed as dist, torch.multiprocessing as mp
import torch.nn as nn, torch.nn.functional as F

from fmnist_data import D, idx

class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False); self.b1 = nn.BatchNorm2d(cout)
        self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False); self.b2 = nn.BatchNorm2d(cout)
        self.proj = None if stride == 1 and cin == cout else nn.Sequential(
            nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
    def forward(self, x):
        y = self.b2(self.c2(F.relu(self.b1(self.c1(x)))))
        return F.relu(y + (x if self.proj is None else self.proj(x)))

def resnet():
    return nn.Sequential(nn.Conv2d(1, 32, 3, 1, 1, bias=False), nn.BatchNorm2d(32), nn.ReLU(),
                         Block(32, 32, 1), Block(32, 64, 2), Block(64, 128, 2),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, 10))

def mlp():
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10))

def run(rank, a):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=a.world)
    x = (torch.tensor(idx(D + "train-images-idx3-ubyte.gz")[:a.limit], dtype=torch.float32) / 255. - 0.286) / 0.353
    y = torch.tensor(idx(D + "train-labels-idx1-ubyte.gz")[:a.limit], dtype=torch.int64)
    torch.manual_seed(0)
    net = resnet() if a.arch == "resnet" else mlp()
    model = nn.parallel.DistributedDataParallel(net)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=5e-4)
    per = a.batch // a.world
    dist.barrier(); t0 = time.time(); seen = 0
    for ep in range(a.epochs):
        g = torch.Generator().manual_seed(ep); perm = torch.randperm(len(x), generator=g)
        for i in range(0, len(x), a.batch):
            b = perm[i:i + a.batch][rank * per:(rank + 1) * per]
            loss = F.cross_entropy(model(x[b]), y[b])
            opt.zero_grad(); loss.backward(); opt.step(); seen += len(b) * a.world
    dist.barrier(); t = time.time() - t0
    if rank == 0:
        print(f"torch {torch.__version__} DDP gloo world={a.world} arch={a.arch} samples={seen} seconds={t:.2f} "
              f"samples_per_s={seen / t:.0f}", flush=True)
    dist.destroy_process_group()

if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--world", type=int, default=2); p.add_argument("--arch", default="resnet")
    p.add_argument("--limit", type=int, default=4096); p.add_argument("--batch", type=int, default=128)
    p.add_argument("--epochs", type=int, default=1)
    a = p.parse_args()
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1"); os.environ.setdefault("MASTER_PORT", "29561")
    mp.spawn(run, args=(a,), nprocs=a.world)
