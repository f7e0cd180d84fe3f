# Fashion-MNIST for the Python peers under bench/: the Debian package's directory and an IDX reader
# (numpy only, so that the torch and paddle venvs can both import it).
import gzip, struct
import numpy as np

D = "/usr/share/datasets/fashion-mnist/"

def idx(path):
    """Images as uint8 [N, 1, rows, cols], labels as uint8 [N]."""
    with gzip.open(path) as f:
        magic, n = struct.unpack(">II", f.read(8))
        if magic == 2051:
            r, c = struct.unpack(">II", f.read(8))
            return np.frombuffer(f.read(), np.uint8).reshape(n, 1, r, c)
        return np.frombuffer(f.read(), np.uint8)
