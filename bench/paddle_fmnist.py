# Peer baseline: PaddlePaddle (pip package paddlepaddle, CPU build) trains LeNet-5 or the MLP on
# Fashion-MNIST with the recipe of ../shared/peers/torch_fmnist.py, so the three can be compared in one run.
# usage: python3 bench/paddle_fmnist.py [--arch lenet|mlp] [--epochs N] [--threads N] [--lr X] [--batch N]
# Recipe: Adam, cosine decay to 0 over the run, inputs (x/255 - 0.286)/0.353.
import argparse, os, resource, time
import numpy as np

p = argparse.ArgumentParser()
p.add_argument("--arch", default="lenet"); p.add_argument("--epochs", type=int, default=1)
p.add_argument("--threads", type=int, default=2); p.add_argument("--lr", type=float, default=2e-3)
p.add_argument("--batch", type=int, default=64)
a = p.parse_args()
os.environ["OMP_NUM_THREADS"] = str(a.threads)
import paddle, paddle.nn as nn, paddle.nn.functional as F
paddle.set_device("cpu"); paddle.seed(0); np.random.seed(0)
from fmnist_data import D, idx

def images(name):
    return ((idx(D + name).astype(np.float32) / 255. - 0.286) / 0.353).astype(np.float32)

xtr, xte = images("train-images-idx3-ubyte.gz"), images("t10k-images-idx3-ubyte.gz")
ytr = idx(D + "train-labels-idx1-ubyte.gz").astype(np.int64)
yte = idx(D + "t10k-labels-idx1-ubyte.gz").astype(np.int64)
if a.arch == "lenet":
    net = nn.Sequential(nn.Conv2D(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2D(2),
                        nn.Conv2D(6, 16, 5), nn.ReLU(), nn.MaxPool2D(2), nn.Flatten(),
                        nn.Linear(400, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10))
else:
    net = nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10))
steps_per_epoch = (len(xtr) + a.batch - 1) // a.batch
sched = paddle.optimizer.lr.CosineAnnealingDecay(learning_rate=a.lr, T_max=a.epochs * steps_per_epoch)
opt = paddle.optimizer.Adam(learning_rate=sched, parameters=net.parameters())

t0 = time.time(); steps = 0
for ep in range(a.epochs):
    perm = np.random.permutation(len(xtr)); net.train()
    for i in range(0, len(xtr), a.batch):
        b = perm[i:i + a.batch]
        loss = F.cross_entropy(net(paddle.to_tensor(xtr[b])), paddle.to_tensor(ytr[b]))
        loss.backward(); opt.step(); opt.clear_grad(); sched.step(); steps += 1
t1 = time.time(); net.eval()
with paddle.no_grad():
    pred = np.concatenate([net(paddle.to_tensor(xte[i:i + 1000])).argmax(1).numpy() for i in range(0, len(xte), 1000)])
acc = float((pred == yte).mean())
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(f"arch={a.arch} epochs={a.epochs} threads={a.threads} steps={steps} train_s={t1 - t0:.2f} "
      f"samples_per_s={len(xtr) * a.epochs / (t1 - t0):.0f} test_acc={acc:.4f} peak_rss_mb={rss:.0f} paddle={paddle.__version__}")
