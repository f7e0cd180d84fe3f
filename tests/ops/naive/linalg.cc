// Naive-loop references for matmul and linear.
#include "naive_util.h"

namespace {
using namespace pd::naive;
}

PD_NAIVE_REF(matmul) {
  const pd::Tensor& x = in[0][0];
  const pd::Tensor& y = in[1][0];
  bool tx = get<bool>(attrs, "transpose_x", false), ty = get<bool>(attrs, "transpose_y", false);
  Ints xs = x.shape(), ys = y.shape();
  Reals xv = vals(x), yv = vals(y);
  // NumPy: a 1-D x is the row [1, K], a 1-D y the column [K, 1]; the added axis leaves the result.
  const bool x_vec = xs.size() == 1, y_vec = ys.size() == 1;
  if (x_vec) xs = {1, xs[0]}, tx = false;
  if (y_vec) ys = {ys[0], 1}, ty = false;
  size_t xn = xs.size(), yn = ys.size();
  int64_t xr = xs[xn - 2], xc = xs[xn - 1], yr = ys[yn - 2], yc = ys[yn - 1];
  int64_t M = tx ? xc : xr, K = tx ? xr : xc, N = ty ? yr : yc;
  Ints xb(xs.begin(), xs.end() - 2), yb(ys.begin(), ys.end() - 2);
  size_t nb = std::max(xb.size(), yb.size());
  Ints ob(nb);
  for (size_t i = 0; i < nb; ++i) {
    int64_t a = i + xb.size() >= nb ? xb[i + xb.size() - nb] : 1;
    int64_t b = i + yb.size() >= nb ? yb[i + yb.size() - nb] : 1;
    ob[i] = a == 1 ? b : a;
  }
  int64_t B = numel_of(ob);
  Reals out(static_cast<size_t>(B * M * N), 0.0);
  for (int64_t b = 0; b < B; ++b) {
    Ints bi = unravel(b, ob);
    int64_t xo = 0, yo = 0;
    for (size_t i = 0; i < xb.size(); ++i) {
      int64_t d = xb[i];
      xo = xo * d + (d == 1 ? 0 : bi[i + nb - xb.size()]);
    }
    for (size_t i = 0; i < yb.size(); ++i) {
      int64_t d = yb[i];
      yo = yo * d + (d == 1 ? 0 : bi[i + nb - yb.size()]);
    }
    const double* xp = xv.data() + xo * xr * xc;
    const double* yp = yv.data() + yo * yr * yc;
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double acc = 0;
        for (int64_t k = 0; k < K; ++k) {
          double a = tx ? xp[k * xc + i] : xp[i * xc + k];
          double c = ty ? yp[j * yc + k] : yp[k * yc + j];
          acc += a * c;
        }
        out[(b * M + i) * N + j] = acc;
      }
  }
  Ints os = ob;
  if (!x_vec) os.push_back(M);
  if (!y_vec) os.push_back(N);
  return {make(out, os)};
}

PD_NAIVE_REF(linear) {
  (void)attrs;
  const pd::Tensor& x = in[0][0];
  const pd::Tensor& w = in[1][0];
  bool has_bias = in.size() > 2 && !in[2].empty() && in[2][0].defined();
  Ints xs = x.shape();
  Reals xv = vals(x), wv = vals(w), bv;
  if (has_bias) bv = vals(in[2][0]);
  int64_t O = w.shape()[0], I = w.shape()[1];
  int64_t rows = numel_of(Ints(xs.begin(), xs.end() - 1));
  Reals out(static_cast<size_t>(rows * O), 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < O; ++o) {
      double acc = has_bias ? bv[o] : 0.0;
      for (int64_t i = 0; i < I; ++i) acc += xv[r * I + i] * wv[o * I + i];
      out[r * O + o] = acc;
    }
  Ints os = xs;
  os.back() = O;
  return {make(out, os)};
}
