// Naive-loop references for the losses (cross_entropy, mse_loss, binary_cross_entropy_with_logits,
// nll_loss) and embedding.
#include "naive_util.h"

namespace {
using namespace pd::naive;
}

PD_NAIVE_REF(cross_entropy) {
  const pd::Tensor& logits = in[0][0];
  Ints s = logits.shape();
  Reals v = vals(logits);
  std::vector<int64_t> label = in[1][0].to_vector<int64_t>();
  int64_t nd = static_cast<int64_t>(s.size());
  int64_t axis = norm_axis(get<int64_t>(attrs, "axis", -1), nd);
  int64_t ignore = get<int64_t>(attrs, "ignore_index", -100);
  double eps = get<double>(attrs, "label_smoothing", 0.0);
  std::string reduction = get<std::string>(attrs, "reduction", "mean");
  int64_t outer = 1, inner = 1, C = s[axis];
  for (int64_t i = 0; i < axis; ++i) outer *= s[i];
  for (int64_t i = axis + 1; i < nd; ++i) inner *= s[i];
  Ints ls = s;
  ls.erase(ls.begin() + axis);
  Reals loss(static_cast<size_t>(outer * inner), 0.0);
  int64_t valid = 0;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k = 0; k < inner; ++k) {
      int64_t li = o * inner + k;
      int64_t y = label[li];
      if (y == ignore) continue;
      ++valid;
      auto at = [&](int64_t c) { return v[(o * C + c) * inner + k]; };
      double m = -std::numeric_limits<double>::infinity();
      for (int64_t c = 0; c < C; ++c) m = std::max(m, at(c));
      double sum = 0;
      for (int64_t c = 0; c < C; ++c) sum += std::exp(at(c) - m);
      double lse = m + std::log(sum);
      double nll = lse - at(y);
      double smooth = 0;
      for (int64_t c = 0; c < C; ++c) smooth += lse - at(c);
      smooth /= static_cast<double>(C);
      loss[li] = (1 - eps) * nll + eps * smooth;
    }
  if (reduction == "none") return {make(loss, ls)};
  double total = 0;
  for (double l : loss) total += l;
  if (reduction == "mean") total /= static_cast<double>(valid);
  return {make({total}, {})};
}

PD_NAIVE_REF(embedding) {
  (void)attrs;  // padding_idx only affects the gradient
  std::vector<int64_t> ids = in[0][0].to_vector<int64_t>();
  const pd::Tensor& w = in[1][0];
  Reals wv = vals(w);
  int64_t D = w.shape()[1];
  Reals out;
  out.reserve(ids.size() * static_cast<size_t>(D));
  for (int64_t id : ids)
    for (int64_t d = 0; d < D; ++d) out.push_back(wv[id * D + d]);
  Ints os = in[0][0].shape();
  os.push_back(D);
  return {make(out, os)};
}

namespace {
// Per-element losses -> none (the element shape), sum or mean (0-D).
std::vector<pd::Tensor> reduced(const Reals& loss, const Ints& shape, const std::string& reduction, double count) {
  if (reduction == "none") return {make(loss, shape)};
  double total = 0;
  for (double l : loss) total += l;
  return {make({reduction == "mean" ? total / count : total}, {})};
}
}  // namespace

PD_NAIVE_REF(mse_loss) {
  Reals x = vals(in[0][0]), y = vals(in[1][0]);
  Reals loss(x.size());
  for (size_t i = 0; i < x.size(); ++i) loss[i] = (x[i] - y[i]) * (x[i] - y[i]);
  return reduced(loss, in[0][0].shape(), get<std::string>(attrs, "reduction", "mean"), static_cast<double>(x.size()));
}

// The textbook form -[pw y log(sigmoid(x)) + (1 - y) log(1 - sigmoid(x))], fine for moderate x.
PD_NAIVE_REF(binary_cross_entropy_with_logits) {
  Ints s = in[0][0].shape();
  Reals x = vals(in[0][0]), y = vals(in[1][0]);
  const bool has_pw = !in[2].empty() && in[2][0].defined();
  Ints ps = has_pw ? in[2][0].shape() : Ints{};
  Reals pw = has_pw ? vals(in[2][0]) : Reals{1.0};
  Reals loss(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    // pos_weight's element for x's position i: right-aligned broadcasting.
    Ints p = unravel(static_cast<int64_t>(i), s);
    Ints q(ps.size());
    for (size_t d = 0; d < ps.size(); ++d) q[d] = ps[d] == 1 ? 0 : p[s.size() - ps.size() + d];
    const double w = has_pw ? pw[ravel(q, ps)] : 1.0;
    const double sig = 1.0 / (1.0 + std::exp(-x[i]));
    loss[i] = -(w * y[i] * std::log(sig) + (1 - y[i]) * std::log(1 - sig));
  }
  return reduced(loss, s, get<std::string>(attrs, "reduction", "mean"), static_cast<double>(x.size()));
}

PD_NAIVE_REF(nll_loss) {
  Ints s = in[0][0].shape();
  Reals x = vals(in[0][0]);
  std::vector<int64_t> label = in[1][0].to_vector<int64_t>();
  const int64_t ignore = get<int64_t>(attrs, "ignore_index", -100);
  Ints ls = in[1][0].shape();
  const size_t class_axis = s.size() == 1 ? 0 : 1;
  Reals loss(label.size(), 0.0);
  double count = 0;
  for (size_t k = 0; k < label.size(); ++k) {
    if (label[k] == ignore) continue;
    Ints p = unravel(static_cast<int64_t>(k), ls);
    p.insert(p.begin() + static_cast<int64_t>(class_axis), label[k]);
    loss[k] = -x[ravel(p, s)];
    count += 1;
  }
  return reduced(loss, ls, get<std::string>(attrs, "reduction", "mean"), count);
}
