#include "pd/bench/problem.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "op_api.h"
#include "pd/autograd/autograd.h"

namespace pd::bench {
namespace {

int64_t parse_int(const std::string& what, const std::string& s) {
  size_t pos = 0;
  int64_t v = 0;
  try {
    v = std::stoll(s, &pos);
  } catch (...) {
    pos = 0;
  }
  PD_CHECK(pos == s.size() && !s.empty(), ErrorCode::kParse, "{}: expected an integer, got '{}'", what, s);
  return v;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i)
    if (i == s.size() || s[i] == sep) {
      out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  return out;
}

Shape parse_dims(const std::string& what, const std::string& s) {
  Shape shape;
  if (s.empty()) return shape;  // 0-D
  for (const auto& d : split(s, 'x')) {
    int64_t v = parse_int(what, d);
    PD_CHECK(v >= 0, ErrorCode::kParse, "{}: negative extent {}", what, v);
    shape.push_back(v);
  }
  return shape;
}

// "mb32ic64ih56" -> {mb: 32, ic: 64, ih: 56}; "s64x256" -> {s: "64x256"}.
std::map<std::string, std::string> tokenize(const std::string& op, const std::string& text,
                                            const std::set<std::string>& keys) {
  std::map<std::string, std::string> out;
  size_t i = 0;
  while (i < text.size()) {
    size_t k = i;
    while (i < text.size() && std::islower(static_cast<unsigned char>(text[i]))) ++i;
    std::string key = text.substr(k, i - k);
    size_t v = i;
    while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || (key == "s" && text[i] == 'x'))) ++i;
    std::string val = text.substr(v, i - v);
    PD_CHECK(!key.empty(), ErrorCode::kParse, "{}: problem '{}': expected a key at '{}'", op, text, text.substr(k));
    PD_CHECK(keys.count(key), ErrorCode::kParse, "{}: problem '{}': unknown key '{}' (keys for {}: {})", op, text, key,
             op, fmt::join(keys, " "));
    PD_CHECK(!val.empty(), ErrorCode::kParse, "{}: problem '{}': key '{}' needs a number", op, text, key);
    PD_CHECK(!out.count(key), ErrorCode::kParse, "{}: problem '{}': key '{}' given twice", op, text, key);
    out[key] = val;
  }
  PD_CHECK(!out.empty(), ErrorCode::kParse, "{}: empty problem string", op);
  return out;
}

struct Keys {
  const std::string& op;
  const std::string& text;
  std::map<std::string, std::string> kv;
  int64_t get(const std::string& k, int64_t fallback) const {
    auto it = kv.find(k);
    return it == kv.end() ? fallback : parse_int(op + ": " + k, it->second);
  }
  int64_t need(const std::string& k) const {
    PD_CHECK(kv.count(k), ErrorCode::kParse, "{}: problem '{}' lacks '{}'", op, text, k);
    return get(k, 0);
  }
};

// Starts from the op's first ops.yaml problem so that dtypes and value ranges (labels, indices) carry over.
BenchProblem blank(const OpSchema& op) {
  size_t n = 0;
  for (const auto& a : op.args) n += a.is_tensor();
  BenchProblem p;
  p.shapes.assign(n, {});
  p.dtypes.assign(n, "");
  p.ranges.assign(n, {-1.0, 1.0});
  if (!op.bench.empty() && op.bench[0].dtypes.size() == n) {
    p.dtypes = op.bench[0].dtypes;
    p.ranges = op.bench[0].ranges;
  }
  return p;
}

int tensor_index(const OpSchema& op, const std::string& name) {
  int i = 0;
  for (const auto& a : op.args) {
    if (a.name == name) return a.is_tensor() ? i : -1;
    i += a.is_tensor();
  }
  return -2;
}

std::vector<int64_t> ints(int64_t a, int64_t b) { return {a, b}; }

}  // namespace

BenchProblem parse_problem_string(const OpSchema& op, const std::string& text) {
  BenchProblem p = blank(op);
  const std::string& n = op.name;
  if (n == "conv2d") {
    Keys k{n, text, tokenize(n, text, {"mb", "ic", "ih", "iw", "oc", "kh", "kw", "sh", "sw", "ph", "pw", "dh", "dw", "g"})};
    int64_t ih = k.need("ih"), kh = k.need("kh"), g = k.get("g", 1), ic = k.need("ic"), oc = k.need("oc");
    PD_CHECK(g > 0 && ic % g == 0 && oc % g == 0, ErrorCode::kParse, "conv2d: problem '{}': ic {} and oc {} must be multiples of g {}", text, ic, oc, g);
    p.shapes[0] = {{k.get("mb", 2), ic, ih, k.get("iw", ih)}};
    p.shapes[1] = {{oc, ic / g, kh, k.get("kw", kh)}};
    int64_t sh = k.get("sh", 1), ph = k.get("ph", 0), dh = k.get("dh", 1);
    p.attrs = {{"stride", ints(sh, k.get("sw", sh))}, {"padding", ints(ph, k.get("pw", ph))},
               {"dilation", ints(dh, k.get("dw", dh))}, {"groups", g}};
  } else if (n == "matmul" || n == "linear") {
    Keys k{n, text, tokenize(n, text, {"m", "n", "k", "b"})};
    int64_t m = k.need("m"), nn = k.need("n"), kk = k.need("k");
    Shape x = {m, kk};
    if (k.kv.count("b")) x.insert(x.begin(), k.get("b", 1));
    p.shapes[0] = {x};
    if (n == "linear") {
      p.shapes[1] = {{nn, kk}};
      p.shapes[2] = {{nn}};
    } else {
      Shape y = {kk, nn};
      if (k.kv.count("b")) y.insert(y.begin(), k.get("b", 1));
      p.shapes[1] = {y};
    }
  } else if (n == "max_pool2d" || n == "avg_pool2d") {
    Keys k{n, text, tokenize(n, text, {"mb", "ic", "ih", "iw", "kh", "kw", "sh", "sw", "ph", "pw"})};
    int64_t ih = k.need("ih"), kh = k.need("kh"), sh = k.get("sh", 1), ph = k.get("ph", 0);
    p.shapes[0] = {{k.get("mb", 2), k.need("ic"), ih, k.get("iw", ih)}};
    p.attrs = {{"kernel_size", ints(kh, k.get("kw", kh))}, {"stride", ints(sh, k.get("sw", sh))},
               {"padding", ints(ph, k.get("pw", ph))}};
  } else {
    Keys k{n, text, tokenize(n, text, {"s"})};
    Shape s = parse_dims(n + ": problem '" + text + "'", k.kv.at("s"));
    int i = 0;
    for (const auto& a : op.args) {
      if (!a.is_tensor()) continue;
      if (a.type == "Tensor") p.shapes[i] = {s};
      ++i;
    }
    PD_CHECK(i > 0, ErrorCode::kParse, "{}: takes no tensor inputs; give its attributes with --attr", n);
  }
  return p;
}

AttrValue parse_attr(const OpSchema& op, const std::string& name, const std::string& text) {
  auto it = std::find_if(op.args.begin(), op.args.end(), [&](const ArgSchema& a) { return a.name == name; });
  PD_CHECK(it != op.args.end() && !it->is_tensor(), ErrorCode::kInvalidArgument, "{}: no attribute '{}'", op.name, name);
  std::string what = op.name + ": --attr " + name;
  const std::string& t = it->type;
  if (t == "int") return parse_int(what, text);
  if (t == "float" || t == "float[]") {
    std::vector<double> v;
    for (const auto& s : split(text, ',')) {
      size_t pos = 0;
      double d = 0;
      try { d = std::stod(s, &pos); } catch (...) { pos = 0; }
      PD_CHECK(pos == s.size() && !s.empty(), ErrorCode::kParse, "{}: expected a number, got '{}'", what, s);
      v.push_back(d);
    }
    if (t == "float") {
      PD_CHECK(v.size() == 1, ErrorCode::kParse, "{}: expected one number, got '{}'", what, text);
      return v[0];
    }
    return v;
  }
  if (t == "bool") {
    PD_CHECK(text == "true" || text == "false" || text == "1" || text == "0", ErrorCode::kParse,
             "{}: expected true or false, got '{}'", what, text);
    return text == "true" || text == "1";
  }
  if (t == "int[]") {
    std::vector<int64_t> v;
    if (!text.empty())
      for (const auto& s : split(text, ',')) v.push_back(parse_int(what, s));
    return v;
  }
  if (t == "dtype") return dtype_from_name(text);
  return text;  // str
}

BenchProblem problem_from_flags(const OpSchema& op, const std::vector<std::string>& inputs,
                                const std::vector<std::string>& attrs) {
  BenchProblem p = blank(op);
  std::vector<bool> given(p.shapes.size(), false);
  for (const auto& in : inputs) {
    size_t eq = in.find('=');
    PD_CHECK(eq != std::string::npos, ErrorCode::kParse, "{}: --input '{}': expected NAME=DIMS, e.g. x=64x3x32x32", op.name, in);
    std::string name = in.substr(0, eq);
    int i = tensor_index(op, name);
    PD_CHECK(i >= 0, ErrorCode::kInvalidArgument, "{}: --input '{}': no tensor input '{}'", op.name, in, name);
    p.shapes[i].clear();
    for (const auto& s : split(in.substr(eq + 1), ',')) p.shapes[i].push_back(parse_dims(op.name + ": --input " + name, s));
    given[i] = true;
  }
  int i = 0;
  for (const auto& a : op.args) {
    if (!a.is_tensor()) continue;
    PD_CHECK(given[i] || a.type == "Tensor?", ErrorCode::kInvalidArgument, "{}: missing --input {}=DIMS", op.name, a.name);
    ++i;
  }
  for (const auto& kv : attrs) {
    size_t eq = kv.find('=');
    PD_CHECK(eq != std::string::npos, ErrorCode::kParse, "{}: --attr '{}': expected NAME=VALUE, e.g. padding=1,1", op.name, kv);
    p.attrs[kv.substr(0, eq)] = parse_attr(op, kv.substr(0, eq), kv.substr(eq + 1));
  }
  return p;
}

static std::string attr_text(const AttrValue& v) {
  std::string s = attr_str(v);  // "[1, 2]" -> "1,2", the flags' form
  s.erase(std::remove_if(s.begin(), s.end(), [](char c) { return c == '[' || c == ']' || c == ' '; }), s.end());
  return s;
}

static std::vector<std::string> parts(const OpSchema& op, const BenchProblem& p, const char* in, const char* at) {
  std::vector<std::string> out;
  int i = 0;
  for (const auto& a : op.args) {
    if (!a.is_tensor()) continue;
    if (i < int(p.shapes.size()) && !p.shapes[i].empty()) {
      std::vector<std::string> dims;
      for (const auto& s : p.shapes[i]) dims.push_back(fmt::format("{}", fmt::join(s, "x")));
      out.push_back(fmt::format("{}{}={}", in, a.name, fmt::join(dims, ",")));
    }
    ++i;
  }
  for (const auto& [k, v] : p.attrs) out.push_back(fmt::format("{}{}={}", at, k, attr_text(v)));
  return out;
}

std::string problem_label(const OpSchema& op, const BenchProblem& p) { return fmt::format("{}", fmt::join(parts(op, p, "", ""), " ")); }
std::string problem_flags(const OpSchema& op, const BenchProblem& p) {
  return fmt::format("{}", fmt::join(parts(op, p, "--input ", "--attr "), " "));
}

BoxedInputs make_inputs(const OpSchema& op, const BenchProblem& p, DType dtype, uint64_t seed) {
  NoGradGuard no_grad;
  BoxedInputs in(p.shapes.size());
  for (size_t i = 0; i < p.shapes.size(); ++i) {
    DType dt = i < p.dtypes.size() && !p.dtypes[i].empty() ? dtype_from_name(p.dtypes[i]) : dtype;
    auto [lo, hi] = i < p.ranges.size() ? p.ranges[i] : std::pair<double, double>{-1.0, 1.0};
    for (const auto& s : p.shapes[i]) {
      int64_t sd = static_cast<int64_t>(seed * 1000 + i * 10 + in[i].size());
      if (dt == DType::f32 || dt == DType::f64) {
        in[i].push_back(ops::uniform(s, lo, hi, sd, dt));
      } else if (is_floating(dt)) {
        in[i].push_back(ops::cast(ops::uniform(s, lo, hi, sd, DType::f32), dt));
      } else {  // whole numbers: truncate toward zero, then narrow
        in[i].push_back(ops::cast(ops::cast(ops::uniform(s, lo, hi, sd, DType::f64), DType::i64), dt));
      }
    }
  }
  (void)op;
  return in;
}

std::vector<std::string> close_op_names(const std::string& name) {
  auto dist = [](const std::string& a, const std::string& b) {
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
      size_t prev = row[0];
      row[0] = i;
      for (size_t j = 1; j <= b.size(); ++j) {
        size_t cur = row[j];
        row[j] = std::min({row[j] + 1, row[j - 1] + 1, prev + (a[i - 1] != b[j - 1])});
        prev = cur;
      }
    }
    return row[b.size()];
  };
  std::vector<std::pair<size_t, std::string>> scored;
  for (const auto& s : all_op_schemas()) {
    size_t d = dist(name, s.name);
    if (d <= std::max<size_t>(2, name.size() / 3) || s.name.find(name) != std::string::npos) scored.push_back({d, s.name});
  }
  std::sort(scored.begin(), scored.end());
  std::vector<std::string> out;
  for (size_t i = 0; i < scored.size() && i < 5; ++i) out.push_back(scored[i].second);
  return out;
}

}  // namespace pd::bench
