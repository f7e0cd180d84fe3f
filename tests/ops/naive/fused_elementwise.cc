// Naive reference for fused_elementwise: its own little parser of the expression text, evaluated per
// output element in double, each input indexed through NumPy broadcasting. It shares nothing with the
// kernel (neither the compiled steps nor the scalar formulas).
#include <cctype>
#include <cstdlib>
#include <functional>

#include "naive_util.h"

namespace {
using namespace pd::naive;

// Evaluates one output element: `in(k)` is input k's value at that element.
using Eval = std::function<double(const std::function<double(size_t)>& in)>;

double apply(const std::string& f, const std::vector<double>& a, const std::vector<double>& c) {
  const double x = a[0];
  if (f == "add") return x + a[1];
  if (f == "sub") return x - a[1];
  if (f == "mul") return x * a[1];
  if (f == "div") return x / a[1];
  if (f == "pow") return std::pow(x, a[1]);
  if (f == "neg") return -x;
  if (f == "exp") return std::exp(x);
  if (f == "log") return std::log(x);
  if (f == "sqrt") return std::sqrt(x);
  if (f == "rsqrt") return 1.0 / std::sqrt(x);
  if (f == "abs") return std::fabs(x);
  if (f == "sign") return x > 0 ? 1.0 : (x < 0 ? -1.0 : 0.0);
  if (f == "erf") return std::erf(x);
  if (f == "tanh") return std::tanh(x);
  if (f == "sigmoid") return 1.0 / (1.0 + std::exp(-x));
  if (f == "relu") return x > 0 ? x : 0.0;
  if (f == "gelu") return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
  if (f == "silu") return x / (1.0 + std::exp(-x));
  if (f == "softsign") return x / (1.0 + std::fabs(x));
  if (f == "leaky_relu") return x > 0 ? x : c[0] * x;
  if (f == "softplus") return x * c[0] > c[1] ? x : std::log1p(std::exp(c[0] * x)) / c[0];
  if (f == "clip") return std::min(std::max(x, c[0]), c[1]);
  throw std::runtime_error("naive fused_elementwise: no formula for " + f);
}

size_t constants_of(const std::string& f) {
  if (f == "leaky_relu") return 1;
  if (f == "softplus" || f == "clip") return 2;
  return 0;
}

struct TextParser {
  const std::string& s;
  size_t pos = 0;
  void space() {
    while (pos < s.size() && std::isspace(static_cast<unsigned char>(s[pos]))) ++pos;
  }
  std::string word() {
    space();
    size_t b = pos;
    while (pos < s.size() && (std::isalnum(static_cast<unsigned char>(s[pos])) || s[pos] == '_')) ++pos;
    return s.substr(b, pos - b);
  }
  void skip(char c) {
    space();
    if (pos >= s.size() || s[pos] != c) throw std::runtime_error("naive fused_elementwise: bad expression " + s);
    ++pos;
  }
  Eval expr() {
    const std::string w = word();
    if (w[0] == 'x') {
      const size_t k = std::stoul(w.substr(1));
      return [k](const std::function<double(size_t)>& in) { return in(k); };
    }
    skip('(');
    std::vector<Eval> args;
    std::vector<double> consts;
    const size_t n_tensors = (w == "add" || w == "sub" || w == "mul" || w == "div" || w == "pow") ? 2 : 1;
    for (size_t i = 0; i < n_tensors; ++i) {
      if (i) skip(',');
      args.push_back(expr());
    }
    for (size_t i = 0; i < constants_of(w); ++i) {
      skip(',');
      space();
      char* end = nullptr;
      consts.push_back(std::strtod(s.c_str() + pos, &end));
      pos = static_cast<size_t>(end - s.c_str());
    }
    skip(')');
    return [w, args, consts](const std::function<double(size_t)>& in) {
      std::vector<double> a;
      for (const Eval& e : args) a.push_back(e(in));
      return apply(w, a, consts);
    };
  }
};

Ints broadcast_shape(const std::vector<Ints>& shapes) {
  size_t rank = 0;
  for (const Ints& s : shapes) rank = std::max(rank, s.size());
  Ints out(rank, 1);
  for (const Ints& s : shapes)
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t& o = out[rank - s.size() + i];
      if (s[i] != 1) o = s[i];
    }
  return out;
}

}  // namespace

PD_NAIVE_REF(fused_elementwise) {
  const std::vector<pd::Tensor>& xs = in[0];
  std::vector<Ints> shapes;
  std::vector<Reals> data;
  for (const pd::Tensor& x : xs) shapes.push_back(x.shape()), data.push_back(vals(x));
  const Ints out_shape = broadcast_shape(shapes);
  const std::string text = get<std::string>(attrs, "expr", "");
  TextParser parser{text};
  const Eval eval = parser.expr();
  Reals out(static_cast<size_t>(numel_of(out_shape)));
  for (size_t o = 0; o < out.size(); ++o) {
    const Ints idx = unravel(static_cast<int64_t>(o), out_shape);
    out[o] = eval([&](size_t k) {
      const Ints& s = shapes[k];
      Ints sub(s.size());
      for (size_t d = 0; d < s.size(); ++d) sub[d] = s[d] == 1 ? 0 : idx[out_shape.size() - s.size() + d];
      return data[k][static_cast<size_t>(ravel(sub, s))];
    });
  }
  return {make(out, out_shape)};
}
