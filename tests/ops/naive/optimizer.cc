// Naive references for the optimizer updates, written from the textbook formulas in double (the
// kernels update in place; the harness gives these fresh copies of the inputs).
#include <cmath>

#include "naive_util.h"

namespace {
using namespace pd::naive;
}

PD_NAIVE_REF(sgd_step) {
  Reals p = vals(in[0][0]), g = vals(in[1][0]);
  const double lr = get<double>(attrs, "lr", 0), wd = get<double>(attrs, "weight_decay", 0);
  for (size_t i = 0; i < p.size(); ++i) p[i] = p[i] - lr * (g[i] + wd * p[i]);
  return {make(p, in[0][0].shape())};
}

PD_NAIVE_REF(momentum_step) {
  Reals p = vals(in[0][0]), g = vals(in[1][0]), vel = vals(in[2][0]);
  const double lr = get<double>(attrs, "lr", 0), mu = get<double>(attrs, "momentum", 0.9);
  const double wd = get<double>(attrs, "weight_decay", 0);
  const bool nesterov = get<bool>(attrs, "nesterov", false);
  for (size_t i = 0; i < p.size(); ++i) {
    const double d = g[i] + wd * p[i];
    vel[i] = mu * vel[i] + d;
    p[i] -= lr * (nesterov ? d + mu * vel[i] : vel[i]);
  }
  return {make(p, in[0][0].shape()), make(vel, in[2][0].shape())};
}

PD_NAIVE_REF(adam_step) {
  Reals p = vals(in[0][0]), g = vals(in[1][0]), m = vals(in[2][0]), v = vals(in[3][0]);
  const double lr = get<double>(attrs, "lr", 0), b1 = get<double>(attrs, "beta1", 0.9), b2 = get<double>(attrs, "beta2", 0.999);
  const double eps = get<double>(attrs, "eps", 1e-8), wd = get<double>(attrs, "weight_decay", 0);
  const double t = static_cast<double>(get<int64_t>(attrs, "step", 1));
  const bool decoupled = get<bool>(attrs, "decoupled", false);
  for (size_t i = 0; i < p.size(); ++i) {
    double d = g[i];
    if (decoupled) p[i] -= lr * wd * p[i];
    else d += wd * p[i];
    m[i] = b1 * m[i] + (1 - b1) * d;
    v[i] = b2 * v[i] + (1 - b2) * d * d;
    const double m_hat = m[i] / (1 - std::pow(b1, t)), v_hat = v[i] / (1 - std::pow(b2, t));
    p[i] -= lr * m_hat / (std::sqrt(v_hat) + eps);
  }
  const Ints& s = in[0][0].shape();
  return {make(p, s), make(m, s), make(v, s)};
}
