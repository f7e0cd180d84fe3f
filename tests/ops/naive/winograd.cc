// Naive references for winograd_weight and winograd_conv2d, straight from the definition of F(4x4, 3x3)
// with the interpolation points 0, +-1, +-2, infinity, in double. winograd_conv2d is defined for any
// weight U: out = A^T (sum over input channels of U .* B^T d B) A per 4x4 tile, the input zero-padded as
// far as the last tile reaches; with U = winograd_weight(g) that is conv2d with g.
#include "naive_util.h"

namespace {
using namespace pd::naive;

constexpr double kG[6][3] = {{0.25, 0, 0},           {-1.0 / 6, -1.0 / 6, -1.0 / 6}, {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                             {1.0 / 24, 1.0 / 12, 1.0 / 6}, {1.0 / 24, -1.0 / 12, 1.0 / 6}, {0, 0, 1}};
constexpr double kBT[6][6] = {{4, 0, -5, 0, 1, 0},  {0, -4, -4, 1, 1, 0}, {0, 4, -4, -1, 1, 0},
                              {0, -2, -1, 2, 1, 0}, {0, 2, -1, -2, 1, 0}, {0, 4, 0, -5, 0, 1}};
constexpr double kAT[4][6] = {{1, 1, 1, 1, 1, 0}, {0, 1, -1, 2, -2, 0}, {0, 1, 1, 4, 4, 0}, {0, 1, -1, 8, -8, 1}};

}  // namespace

PD_NAIVE_REF(winograd_weight) {
  const Ints ws = in[0][0].shape();
  const int64_t K = ws[0], C = ws[1];
  const Reals w = vals(in[0][0]);
  Reals u(static_cast<size_t>(36 * C * K));
  for (int64_t k = 0; k < K; ++k)
    for (int64_t c = 0; c < C; ++c)
      for (int i = 0; i < 6; ++i)
        for (int j = 0; j < 6; ++j) {
          double s = 0;  // (G g G^T)[i][j]
          for (int a = 0; a < 3; ++a)
            for (int b = 0; b < 3; ++b) s += kG[i][a] * w[((k * C + c) * 3 + a) * 3 + b] * kG[j][b];
          u[((i * 6 + j) * C + c) * K + k] = s;
        }
  return {make(u, {36, C, K})};
}

// The convolution part (with bias); fused.cc adds the residual and the activation.
PD_NAIVE_REF(winograd_conv2d_unfused) {
  const Ints xs = in[0][0].shape(), us = in[1][0].shape();
  const int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], K = us[2];
  Ints pad = get<Ints>(attrs, "padding", {0, 0});
  const int64_t OH = H + 2 * pad[0] - 2, OW = W + 2 * pad[1] - 2;
  const Reals x = vals(in[0][0]), u = vals(in[1][0]);
  const bool has_bias = in.size() > 2 && !in[2].empty() && in[2][0].defined();
  const Reals bias = has_bias ? vals(in[2][0]) : Reals(static_cast<size_t>(K), 0.0);
  Reals out(static_cast<size_t>(N * K * OH * OW));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t ty = 0; ty * 4 < OH; ++ty)
      for (int64_t tx = 0; tx * 4 < OW; ++tx) {
        // V[c][i][j] = (B^T d_c B)[i][j]
        std::vector<double> v(static_cast<size_t>(C * 36), 0.0);
        for (int64_t c = 0; c < C; ++c)
          for (int i = 0; i < 6; ++i)
            for (int j = 0; j < 6; ++j)
              for (int a = 0; a < 6; ++a)
                for (int b = 0; b < 6; ++b) {
                  const int64_t y = ty * 4 - pad[0] + a, xx = tx * 4 - pad[1] + b;
                  if (y < 0 || y >= H || xx < 0 || xx >= W) continue;
                  v[c * 36 + i * 6 + j] += kBT[i][a] * x[((n * C + c) * H + y) * W + xx] * kBT[j][b];
                }
        for (int64_t k = 0; k < K; ++k) {
          double m[6][6] = {};
          for (int64_t c = 0; c < C; ++c)
            for (int p = 0; p < 36; ++p) m[p / 6][p % 6] += u[(p * C + c) * K + k] * v[c * 36 + p];
          for (int i = 0; i < 4 && ty * 4 + i < OH; ++i)
            for (int j = 0; j < 4 && tx * 4 + j < OW; ++j) {
              double s = bias[k];
              for (int a = 0; a < 6; ++a)
                for (int b = 0; b < 6; ++b) s += kAT[i][a] * m[a][b] * kAT[j][b];
              out[((n * K + k) * OH + ty * 4 + i) * OW + tx * 4 + j] = s;
            }
        }
      }
  return {make(out, {N, K, OH, OW})};
}
