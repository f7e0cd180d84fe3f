// pointwise_conv, depthwise_conv and gather_channel_blocks split a batch's pixels (rows) across threads,
// an image in near-equal parts where the images do not divide evenly among the threads
// (cpu::parallel_for_images): every pixel is computed once, on any thread count, and the sums are those
// of plain loops. Called directly, the convolutions on the widest vector blocks this CPU runs (16 lanes
// on AVX-512, 8 on AVX2).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

#include "cpu/ref/depthwise_conv.h"
#include "cpu/ref/pointwise_conv.h"
#include "kernels.h"
#include "pd/core/cpu_features.h"
#include "pd/core/threads.h"
#include "pd/pd.h"

namespace {

struct Case {
  int64_t n, c, h, w, cout, k, stride;  // depthwise: cout == c, groups == c, padding k / 2
};

// Blocked [N, C / L, H, W, L] index of channel ch at (y, x).
int64_t at(int64_t L, int64_t C, int64_t H, int64_t W, int64_t n, int64_t ch, int64_t y, int64_t x) {
  return (((n * (C / L) + ch / L) * H + y) * W + x) * L + ch % L;
}

// The convolution from plain loops in double: a 1x1 over every input channel, or a k x k window per
// channel (depthwise), with bias and relu.
std::vector<double> loops(const Case& k, bool depthwise, int64_t L, const std::vector<float>& x, const std::vector<float>& w,
                          const std::vector<float>& bias, int64_t OH, int64_t OW) {
  std::vector<double> out(static_cast<size_t>(k.n * k.cout * OH * OW));
  const int64_t pad = k.k / 2;
  for (int64_t n = 0; n < k.n; ++n)
    for (int64_t o = 0; o < k.cout; ++o)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          double s = bias[static_cast<size_t>(o)];
          if (depthwise) {
            for (int64_t ky = 0; ky < k.k; ++ky)
              for (int64_t kx = 0; kx < k.k; ++kx) {
                const int64_t y = oh * k.stride + ky - pad, col = ow * k.stride + kx - pad;
                if (y < 0 || y >= k.h || col < 0 || col >= k.w) continue;
                s += double{w[static_cast<size_t>((o * k.k + ky) * k.k + kx)]} * x[static_cast<size_t>(at(L, k.c, k.h, k.w, n, o, y, col))];
              }
          } else {
            for (int64_t c = 0; c < k.c; ++c)
              s += double{w[static_cast<size_t>(o * k.c + c)]} * x[static_cast<size_t>(at(L, k.c, k.h, k.w, n, c, oh, ow))];
          }
          out[static_cast<size_t>(at(L, k.cout, OH, OW, n, o, oh, ow))] = std::max(s, 0.0);
        }
  return out;
}

void check_split(const Case& k, bool depthwise) {
  const int64_t L = pd::cpu_has_avx512() ? 16 : 8;
  const int64_t pad = depthwise ? k.k / 2 : 0;
  const int64_t OH = (k.h + 2 * pad - k.k) / k.stride + 1, OW = (k.w + 2 * pad - k.k) / k.stride + 1;
  const pd::Tensor x = pd::ops::uniform({k.n, k.c / L, k.h, k.w, L}, -1, 1, 7);
  const pd::Tensor w = pd::ops::uniform({k.cout, depthwise ? 1 : k.c, k.k, k.k}, -0.5, 0.5, 8);
  const pd::Tensor bias = pd::ops::uniform({k.cout}, -0.2, 0.2, 9);
  const pd::Shape out_shape{k.n, k.cout / L, OH, OW, L};
  const std::vector<double> want = loops(k, depthwise, L, x.to_vector<float>(), w.to_vector<float>(), bias.to_vector<float>(), OH, OW);
  const int threads = pd::num_threads();
  std::vector<std::vector<float>> got;
  for (int t : {1, 2, 3}) {
    pd::set_num_threads(t);
    pd::Tensor out = pd::ops::full(out_shape, -7.0, pd::DType::f32);  // a pixel left out stays -7
    namespace ref = pd::kernels::reference;
    const bool took = depthwise ? ref::depthwise_conv({}, x, w, bias, pd::Tensor(), {k.stride, k.stride}, {pad, pad}, {1, 1}, k.c,
                                                      pd::Activation::relu, L, out)
                                : ref::pointwise_conv({}, x, w, bias, pd::Tensor(), {1, 1}, {0, 0}, 1, pd::Activation::relu, L, out);
    REQUIRE(took);
    got.push_back(out.to_vector<float>());
  }
  pd::set_num_threads(threads);
  INFO((depthwise ? "depthwise " : "pointwise ") << k.n << " x " << k.c << " x " << k.h << " x " << k.w << " -> " << k.cout << ", stride "
                                                 << k.stride);
  REQUIRE(got[0].size() == want.size());
  CHECK(got[0] == got[1]);
  CHECK(got[0] == got[2]);
  int64_t wrong = 0;
  for (size_t i = 0; i < want.size(); ++i) wrong += std::abs(got[0][i] - want[i]) > 1e-4 * (1 + std::abs(want[i]));
  CHECK(wrong == 0);
}

}  // namespace

TEST_CASE("pointwise_conv and depthwise_conv: every pixel once on 1, 2 and 3 threads, the sums of plain loops", "[conv][kernel]") {
  if (!pd::cpu_has_avx2_fma()) {
    WARN("skipped: the kernels run on AVX2 and AVX-512 hosts");
    return;
  }
  const int64_t L = pd::cpu_has_avx512() ? 16 : 8;
  // Pointwise: one image of 14x14 (3 threads: parts of 64, 64 and 68 pixels), 3 images of 9x11 (2 threads:
  // each image in parts of 48 and 51), one of 40x40 (parts of several runs), 4 images (whole to each of 2).
  for (const Case& k : {Case{1, 2 * L, 14, 14, 3 * L, 1, 1}, Case{3, L, 9, 11, 2 * L, 1, 1}, Case{1, 2 * L, 40, 40, L, 1, 1},
                        Case{4, L, 13, 13, 4 * L, 1, 1}})
    check_split(k, /*depthwise=*/false);
  // Depthwise on maps wider than a vector (the row kernel): 13 rows of 2 blocks, stride 1 and 2; 3 images;
  // 5 rows of 4 blocks (3 threads: parts of 1, 2 and 2 rows).
  for (const Case& k : {Case{1, 2 * L, 13, 19, 2 * L, 3, 1}, Case{1, 2 * L, 27, 35, 2 * L, 3, 2}, Case{3, L, 11, 21, L, 5, 1},
                        Case{1, 4 * L, 5, 40, 4 * L, 3, 1}})
    check_split(k, /*depthwise=*/true);
}

TEST_CASE("gather_channel_blocks at batch 1: every pixel once on 1, 2 and 3 threads", "[kernel]") {
  // ShuffleNet's shuffle of two inputs of 20 channels (2 blocks each) on an odd map: 2 threads cut its
  // 41 x 39 pixels into parts of 799 and 800, 3 threads into 533, 533 and 533.
  const int64_t L = 16, H = 41, W = 39;
  const std::vector<int64_t> channels{20, 20};
  std::vector<int64_t> index;
  for (int64_t c = 0; c < 20; ++c) index.insert(index.end(), {c, 20 + c});  // 40 out: blocks of 16, 16, 8
  const std::vector<pd::Tensor> xs{pd::ops::uniform({1, 2, H, W, L}, -1, 1, 3), pd::ops::uniform({1, 2, H, W, L}, -1, 1, 4)};
  // The joined input channel c of pixel p, from the blocked inputs.
  const std::vector<std::vector<float>> values{xs[0].to_vector<float>(), xs[1].to_vector<float>()};
  const auto input = [&](int64_t c, int64_t p) {
    const int64_t k = c % 20;
    return values[static_cast<size_t>(c / 20)][static_cast<size_t>((k / L * H * W + p) * L + k % L)];
  };
  std::vector<float> want(static_cast<size_t>(3 * H * W * L), 0.0f);
  for (size_t j = 0; j < index.size(); ++j)
    for (int64_t p = 0; p < H * W; ++p)
      want[static_cast<size_t>((static_cast<int64_t>(j) / L * H * W + p) * L + static_cast<int64_t>(j) % L)] = input(index[j], p);
  const int threads = pd::num_threads();
  for (int t : {1, 2, 3}) {
    CAPTURE(t);
    pd::set_num_threads(t);
    pd::Tensor out = pd::ops::full({1, 3, H, W, L}, -7.0, pd::DType::f32);  // a pixel left out stays -7
    pd::kernels::reference::gather_channel_blocks<float>({}, xs, channels, index, out);
    CHECK(out.to_vector<float>() == want);
  }
  pd::set_num_threads(threads);
}
