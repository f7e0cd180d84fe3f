# Sourced by the CLI tests: a scratch directory removed on exit, fail() counting failures, and the
# Fashion-MNIST test set as a data spec for pd-infer --data and pd-quant --calib / --eval.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[1]}")" && pwd)
WORK=$(mktemp -d)
[ -n "${KEEP_WORK:-}" ] || trap 'rm -rf "$WORK"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# write_test_spec FILE LIMIT: the first LIMIT test samples, normalised as tests/cli/tiny_mlp.yaml trains.
write_test_spec() {
  cat > "$1" <<YAML
data:
  test:
    features: /usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz
    labels: /usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz
    limit: $2
  transforms: [{scale: 0.00392156862745098}, {normalize: {mean: [0.286], std: [0.353]}}]
YAML
}
