# Peer for bench/train_fmnist.sh: PyTorch training the architecture of examples/resnet_fmnist.yaml (the
# model of torch_ddp_fmnist.py) in one process with the example's recipe: batch 128, AdamW lr 3e-3
# weight decay 5e-4, a linear warmup over 200 steps from 0 and a cosine decay to 0 over the run (as
# pd-train's `schedule: {type: cosine, warmup_steps: 200}`), inputs (x/255 - 0.286)/0.353, random
# horizontal flips. Prints samples/s of the
# training loop (evaluation excluded), test accuracy and peak RSS, as ../shared/peers/torch_fmnist.py.
# usage: python torch_resnet_fmnist.py [--epochs E] [--limit N] [--threads T]
import argparse, math, resource, time
import torch, torch.nn.functional as F
from torch_ddp_fmnist import D, idx, resnet

p = argparse.ArgumentParser()
p.add_argument("--epochs", type=int, default=1); p.add_argument("--limit", type=int, default=60000)
p.add_argument("--threads", type=int, default=2); p.add_argument("--batch", type=int, default=128)
a = p.parse_args()
torch.set_num_threads(a.threads)
torch.manual_seed(0)
norm = lambda u8: (torch.tensor(u8, dtype=torch.float32) / 255. - 0.286) / 0.353
x, y = norm(idx(D + "train-images-idx3-ubyte.gz")[:a.limit]), torch.tensor(idx(D + "train-labels-idx1-ubyte.gz")[:a.limit], dtype=torch.int64)
tx, ty = norm(idx(D + "t10k-images-idx3-ubyte.gz")), torch.tensor(idx(D + "t10k-labels-idx1-ubyte.gz"), dtype=torch.int64)
net = resnet()
opt = torch.optim.AdamW(net.parameters(), lr=3e-3, weight_decay=5e-4)
total = a.epochs * math.ceil(len(x) / a.batch)  # pd-train's total_steps (the last batch may be partial)
factor = lambda s: min(1.0, s / 200) * (1 + math.cos(math.pi * min(s, total) / total)) / 2
sched = torch.optim.lr_scheduler.LambdaLR(opt, factor)
train_s, seen = 0.0, 0
for ep in range(a.epochs):
    net.train(); t0 = time.time()
    perm = torch.randperm(len(x))
    for i in range(0, len(x), a.batch):
        b = perm[i:i + a.batch]
        xb = x[b]
        flip = torch.rand(len(b)) < 0.5
        xb[flip] = xb[flip].flip(-1)
        loss = F.cross_entropy(net(xb), y[b])
        opt.zero_grad(); loss.backward(); opt.step(); sched.step(); seen += len(b)
    train_s += time.time() - t0
net.eval(); correct = 0
with torch.no_grad():
    for i in range(0, len(tx), 500):
        correct += (net(tx[i:i + 500]).argmax(1) == ty[i:i + 500]).sum().item()
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(f"arch=resnet epochs={a.epochs} threads={torch.get_num_threads()} samples_per_s={seen / train_s:.0f} "
      f"test_acc={correct / len(tx):.4f} peak_rss_mb={rss:.0f} torch={torch.__version__}")
