#include "op_test_harness.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <random>

#include "registry.h"

namespace pd::test {
namespace {

std::map<std::string, NaiveRef>& naive_table() {
  static std::map<std::string, NaiveRef> t;
  return t;
}

Tensor random_tensor(const Shape& shape, DType dtype, double lo, double hi, std::mt19937_64& rng) {
  Tensor t = Tensor::empty(shape, dtype);
  visit_dtype(dtype, [&]<typename T>() {
    T* p = t.data<T>();
    for (int64_t i = 0; i < t.numel(); ++i) {
      if constexpr (std::is_same_v<T, bool>) p[i] = (rng() & 1) != 0;
      else if constexpr (std::is_integral_v<T>) p[i] = static_cast<T>(lo + static_cast<double>(rng() % static_cast<uint64_t>(std::max(1.0, hi - lo))));
      else p[i] = convert<T>(lo + (hi - lo) * (static_cast<double>(rng() >> 11) / 9007199254740992.0));
    }
  });
  return t;
}

// A sample's name in its sections: its line and its place in the list. Samples written on one line
// (a flow list) share the line, and Catch2 runs a section name once per test case: named by line alone,
// only the first sample of such a list ever ran.
std::string sample_label(const Sample& s, size_t index) { return fmt::format("line {} #{}", s.yaml_line, index + 1); }

// Inputs for a sample: values drawn in f64, then cast to `dtype` for the inputs that follow the dtype under test.
BoxedInputs make_inputs(const Sample& s, DType dtype, uint64_t seed) {
  std::mt19937_64 rng(seed);
  BoxedInputs in;
  for (const auto& spec : s.inputs) {
    std::vector<Tensor> slot;
    if (spec.present) {
      for (const Shape& sh : spec.shapes) {
        DType dt = spec.dtype.empty() ? DType::f64 : dtype_from_name(spec.dtype);
        Tensor t = random_tensor(sh, dt, spec.lo, spec.hi, rng);
        slot.push_back(spec.dtype.empty() && dtype != DType::f64 ? ops::cast(t, dtype) : t);
      }
    } else if (!spec.is_list && spec.shapes.empty() && !s.error.empty()) {
      slot.push_back(Tensor());  // a bad sample passes an undefined tensor
    }
    in.push_back(slot);
  }
  return in;
}

AttrMap with_seed(const std::string& op, AttrMap attrs) {
  if (op_schema(op).random && !attrs.count("seed")) attrs["seed"] = AttrValue(static_cast<int64_t>(1234));
  return attrs;
}

std::vector<Tensor> call(const std::string& op, const BoxedInputs& in, const AttrMap& attrs) {
  return op_schema(op).call(in, attrs);
}

void check_close(const Tensor& got, const Tensor& want, double tol, const std::string& what) {
  INFO(what << ": got " << got.str() << ", want " << want.str());
  REQUIRE(got.shape() == want.shape());
  if (!is_floating(got.dtype()) || !is_floating(want.dtype())) {
    CHECK(got.to_vector<double>() == want.to_vector<double>());
    return;
  }
  std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
  int bad = 0;
  for (size_t i = 0; i < g.size() && bad < 5; ++i) {
    bool ok = (std::isnan(g[i]) && std::isnan(w[i])) || g[i] == w[i] || std::abs(g[i] - w[i]) <= tol + tol * std::abs(w[i]);
    if (!ok) {
      ++bad;
      FAIL_CHECK("element " << i << ": got " << g[i] << ", want " << w[i] << " (tol " << tol << ")");
    }
  }
}

// Elementwise reference: broadcast the inputs NumPy-style and apply the scalar expression.
Tensor scalar_reference(ScalarRef ref, const BoxedInputs& in, const AttrMap& attrs, const Shape& out_shape) {
  Tensor out = Tensor::empty(out_shape, DType::f64);
  std::vector<std::vector<double>> vals;
  std::vector<Shape> shapes;
  for (const auto& slot : in) {
    vals.push_back(slot[0].to_vector<double>());
    shapes.push_back(slot[0].shape());
  }
  const int64_t nd = static_cast<int64_t>(out_shape.size());
  std::vector<double> args(in.size());
  for (int64_t i = 0; i < out.numel(); ++i) {
    for (size_t k = 0; k < in.size(); ++k) {
      int64_t rem = i, idx = 0, stride = 1;
      const Shape& s = shapes[k];
      for (int64_t d = nd - 1; d >= 0; --d) {
        int64_t coord = rem % out_shape[d];
        rem /= out_shape[d];
        int64_t sd = d - (nd - static_cast<int64_t>(s.size()));
        if (sd < 0) continue;
        if (s[sd] != 1) idx += coord * stride;
        stride *= s[sd];
      }
      args[k] = vals[k][idx];
    }
    out.data<double>()[i] = ref(args.data(), attrs);
  }
  return out;
}

std::vector<Tensor*> diff_leaves(const OpTestSpec& spec, const Sample& s, BoxedInputs& in) {
  std::vector<Tensor*> leaves;
  for (size_t k = 0; k < s.inputs.size(); ++k)
    if (s.inputs[k].differentiable && s.inputs[k].present && s.inputs[k].dtype.empty())
      for (auto& t : in[k]) {
        t = t.detach().clone();
        t.set_requires_grad(true);
        leaves.push_back(&t);
      }
  return leaves;
}

// L = sum_i <out_i, cot_i> over the differentiable float outputs.
Tensor scalar_loss(const std::string& op, const std::vector<Tensor>& outs, const std::vector<Tensor>& cots) {
  Tensor loss;
  const auto& schema = op_schema(op);
  size_t k = 0;
  for (size_t i = 0; i < outs.size(); ++i) {
    bool diff = schema.outputs.size() == 1 ? schema.outputs[0].differentiable : schema.outputs[i].differentiable;
    if (!diff || !is_floating(outs[i].dtype())) continue;
    Tensor term = ops::sum(ops::mul(outs[i], cots[k++]));
    loss = loss.defined() ? ops::add(loss, term) : term;
  }
  return loss;
}

std::vector<Tensor> cotangents(const std::vector<Tensor>& outs, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Tensor> c;
  for (const auto& o : outs) c.push_back(random_tensor(o.shape(), DType::f64, -1, 1, rng));
  return c;
}

// Gradients of inputs up to this many elements are checked element by element; see gradcheck.
constexpr int64_t kExhaustiveGradcheck = 512;
constexpr int64_t kSampledGradcheck = 64;
constexpr int kGradcheckDirections = 2;

void gradcheck(const OpTestSpec& spec, const Sample& s, const AttrMap& attrs, bool second_order) {
  BoxedInputs in = make_inputs(s, DType::f64, 42);
  std::vector<Tensor*> leaves = diff_leaves(spec, s, in);
  if (leaves.empty()) return;
  std::vector<Tensor> outs = call(spec.op, in, attrs);
  std::vector<Tensor> cots = cotangents(outs, 7);
  Tensor loss = scalar_loss(spec.op, outs, cots);
  if (!loss.defined() || !loss.requires_grad()) return;
  std::vector<Tensor> inputs;
  for (Tensor* t : leaves) inputs.push_back(*t);

  // f(inputs) is the scalar whose gradient we check: L for first order, <dL/dx, v> for second order.
  std::vector<Tensor> vs;
  auto value = [&]() -> double {
    std::vector<Tensor> o = call(spec.op, in, attrs);
    Tensor l = scalar_loss(spec.op, o, cots);
    if (!second_order) return l.item<double>();
    std::vector<Tensor> g = pd::grad({l}, inputs, {}, false);
    double acc = 0;
    for (size_t i = 0; i < g.size(); ++i)
      if (g[i].defined()) acc += ops::sum(ops::mul(g[i], vs[i])).item<double>();
    return acc;
  };
  std::vector<Tensor> analytic;
  if (second_order) {
    std::vector<Tensor> g = pd::grad({loss}, inputs, {}, true);
    std::mt19937_64 rng(11);
    Tensor l2;
    for (size_t i = 0; i < g.size(); ++i) {
      vs.push_back(random_tensor(inputs[i].shape(), DType::f64, -1, 1, rng));
      if (!g[i].defined() || !g[i].requires_grad()) continue;
      Tensor term = ops::sum(ops::mul(g[i], vs[i]));
      l2 = l2.defined() ? ops::add(l2, term) : term;
    }
    if (!l2.defined()) return;
    analytic = pd::grad({l2}, inputs, {}, false);
  } else {
    analytic = pd::grad({loss}, inputs, {}, false);
  }
  const double eps = 1e-6;
  const std::string what = std::string(second_order ? "gradgradcheck" : "gradcheck") + " of input ";
  std::mt19937_64 rng(13);
  for (size_t i = 0; i < inputs.size(); ++i) {
    double* p = inputs[i].data<double>();
    const int64_t n = inputs[i].numel();
    Tensor a = analytic[i].defined() ? analytic[i] : ops::zeros(inputs[i].shape(), DType::f64);
    // The derivative at element k by central differences.
    auto partial = [&](int64_t k) {
      const double orig = p[k];
      p[k] = orig + eps;
      const double fp = value();
      p[k] = orig - eps;
      const double fm = value();
      p[k] = orig;
      return (fp - fm) / (2 * eps);
    };
    if (n <= kExhaustiveGradcheck) {
      Tensor numeric = Tensor::empty(inputs[i].shape(), DType::f64);
      for (int64_t k = 0; k < n; ++k) numeric.data<double>()[k] = partial(k);
      check_close(a, numeric, 1e-5, what + std::to_string(i));
      continue;
    }
    // A larger input costs two evaluations an element: check the first and last elements and a
    // random sample one by one, then the whole gradient along random directions u (the derivative
    // along u against <analytic, u>), which a wrong gradient at any element changes.
    std::vector<int64_t> picked{0, n - 1};
    std::uniform_int_distribution<int64_t> pick(1, n - 2);
    while (static_cast<int64_t>(picked.size()) < kSampledGradcheck) picked.push_back(pick(rng));
    std::vector<double> got, want;
    const std::vector<double> ad = a.to_vector<double>();  // a gradient may be a broadcast view
    for (int64_t k : picked) {
      got.push_back(ad[k]);
      want.push_back(partial(k));
    }
    check_close(Tensor::from_vector(got, {static_cast<int64_t>(got.size())}),
                Tensor::from_vector(want, {static_cast<int64_t>(want.size())}), 1e-5,
                what + std::to_string(i) + " at sampled elements");
    const std::vector<double> orig(p, p + n);
    for (int d = 0; d < kGradcheckDirections; ++d) {
      const std::vector<double> u = random_tensor(inputs[i].shape(), DType::f64, -1, 1, rng).to_vector<double>();
      auto at = [&](double step) {
        for (int64_t k = 0; k < n; ++k) p[k] = orig[k] + step * u[k];
        return value();
      };
      const double fp = at(eps), fm = at(-eps);
      std::copy(orig.begin(), orig.end(), p);
      double along = 0, spread = 0;
      for (int64_t k = 0; k < n; ++k) {
        along += ad[k] * u[k];
        spread += ad[k] * u[k] * ad[k] * u[k];
      }
      // The sum hides one element's error among n terms, so the bound is far tighter than the
      // elementwise 1e-5: the terms' norm scaled by 1e-7, plus the rounding of f64 differences of f.
      const double numeric = (fp - fm) / (2 * eps);
      const double tol = 1e-7 * (1 + std::sqrt(spread)) + 1e-8 * std::max(std::abs(fp), std::abs(fm));
      INFO(what << i << " along a random direction: analytic " << along << ", numeric " << numeric << " (tol " << tol
                << ")");
      CHECK(std::abs(along - numeric) <= tol);
    }
  }
}

void check_reference(const OpTestSpec& spec, const Sample& s, const AttrMap& attrs) {
  std::vector<Tensor> outs = call(spec.op, make_inputs(s, DType::f64, 42), attrs);
  // The references get fresh inputs (the same values): an op may have updated its own in place.
  const BoxedInputs in = make_inputs(s, DType::f64, 42);
  if (spec.ref) {
    check_close(outs[0], scalar_reference(spec.ref, in, attrs, outs[0].shape()), spec.f64_tol, "reference");
  } else if (const NaiveRef* ref = find_naive(spec.op)) {
    std::vector<Tensor> want = (*ref)(in, attrs);
    REQUIRE(want.size() <= outs.size());
    for (size_t i = 0; i < want.size(); ++i) check_close(outs[i], want[i], spec.f64_tol, "naive reference, output " + std::to_string(i));
  } else if (spec.checked_by.empty()) {
    FAIL("op '" << spec.op << "' has no reference: give it `ref:` in ops.yaml or a naive reference in tests/ops/naive/");
  }
}

void check_f32(const OpTestSpec& spec, const Sample& s, const AttrMap& attrs) {
  std::vector<Tensor> o64 = call(spec.op, make_inputs(s, DType::f64, 42), attrs);
  std::vector<Tensor> o32 = call(spec.op, make_inputs(s, DType::f32, 42), attrs);
  for (size_t i = 0; i < o64.size(); ++i) check_close(o32[i], o64[i], spec.f32_tol, "f32 against f64, output " + std::to_string(i));
}

void check_backends(const OpTestSpec& spec, const Sample& s, const AttrMap& attrs) {
  bool has_fast = false;
  for (const auto& k : registry::registered_kernels(spec.op)) has_fast |= k.backend == Backend::onednn;
  if (!has_fast) return;
  BoxedInputs in = make_inputs(s, DType::f32, 42);
  std::vector<Tensor> fast = call(spec.op, in, attrs);
  // Inputs updated in place (running stats) must start equal for both runs.
  BoxedInputs in2 = make_inputs(s, DType::f32, 42);
  ScopedKernelBackend ref(Backend::reference);
  std::vector<Tensor> slow = call(spec.op, in2, attrs);
  for (size_t i = 0; i < fast.size(); ++i) check_close(fast[i], slow[i], spec.f32_tol, "onednn against reference, output " + std::to_string(i));
}

void check_fused(const OpTestSpec& spec, const Sample& s, const AttrMap& attrs) {
  std::vector<std::vector<Tensor>> grads;
  for (bool fused : {true, false}) {
    set_use_fused_grad_kernels(fused);
    BoxedInputs in = make_inputs(s, DType::f64, 42);
    std::vector<Tensor*> leaves = diff_leaves(spec, s, in);
    std::vector<Tensor> outs = call(spec.op, in, attrs);
    Tensor loss = scalar_loss(spec.op, outs, cotangents(outs, 7));
    std::vector<Tensor> inputs;
    for (Tensor* t : leaves) inputs.push_back(*t);
    grads.push_back(pd::grad({loss}, inputs));
  }
  set_use_fused_grad_kernels(true);
  for (size_t i = 0; i < grads[0].size(); ++i) check_close(grads[0][i], grads[1][i], spec.f64_tol, "fused grad against formula");
}

// ---- CUDA against CPU ----

BoxedInputs to_place(const BoxedInputs& in, Place place) {
  BoxedInputs out;
  for (const auto& slot : in) {
    std::vector<Tensor> moved;
    for (const Tensor& t : slot) moved.push_back(t.defined() ? t.to(place) : t);
    out.push_back(moved);
  }
  return out;
}

std::vector<Tensor> to_cpu(const std::vector<Tensor>& ts) {
  std::vector<Tensor> out;
  for (const Tensor& t : ts) out.push_back(t.defined() ? t.to(Place::cpu()) : t);
  return out;
}

bool has_cuda_kernel(const std::string& op, DType dt) {
  for (const auto& k : registry::registered_kernels(op))
    if (k.backend == Backend::cuda && k.dtype == dt) return true;
  return false;
}

// Tolerance of CUDA against the CPU: the reductions and GEMMs sum in another order.
double cuda_tol(const OpTestSpec& spec, DType dt) {
  if (dt == DType::f64) return std::max(spec.f64_tol, 1e-9);
  if (dt == DType::f32) return std::max(spec.f32_tol, 1e-4);
  return dt == DType::bf16 ? 2e-2 : 4e-3;
}

void check_cuda_forward(const OpTestSpec& spec, const Sample& s, const AttrMap& attrs, DType dt) {
  const Place gpu = Place::cuda(0);
  // 16-bit types are compared against the CPU in f32 on the same (rounded) inputs.
  const bool half = dt == DType::f16 || dt == DType::bf16;
  // Separate inputs for each side: ops that update an input in place (the optimizer steps) must
  // start from the same values on both.
  const BoxedInputs gpu_in = to_place(make_inputs(s, dt, 42), gpu);
  BoxedInputs cpu_in = make_inputs(s, dt, 42);
  if (half)
    for (auto& slot : cpu_in)
      for (auto& t : slot)
        if (t.defined() && t.dtype() == dt) t = ops::cast(t, DType::f32);
  std::vector<Tensor> want = call(spec.op, cpu_in, attrs);
  std::vector<Tensor> on_gpu;
  {
    const DefaultPlaceGuard guard(gpu);  // ops with no tensor input (zeros, uniform) create there
    on_gpu = call(spec.op, gpu_in, attrs);
  }
  for (const Tensor& t : on_gpu)
    if (t.defined()) CHECK(t.place() == gpu);
  std::vector<Tensor> got = to_cpu(on_gpu);
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    Tensor g = half && got[i].dtype() == dt ? ops::cast(got[i], DType::f32) : got[i];
    check_close(g, want[i], cuda_tol(spec, dt), fmt::format("cuda {} against cpu, output {}", dtype_name(dt), i));
  }
}

void check_cuda_grads(const OpTestSpec& spec, const Sample& s, const AttrMap& attrs, DType dt) {
  std::vector<std::vector<Tensor>> grads;
  for (Place place : {Place::cpu(), Place::cuda(0)}) {
    BoxedInputs in = to_place(make_inputs(s, dt, 42), place);
    std::vector<Tensor*> leaves = diff_leaves(spec, s, in);
    std::vector<Tensor> outs = call(spec.op, in, attrs);
    std::vector<Tensor> cots = cotangents(outs, 7);
    for (auto& c : cots) c = ops::cast(c, dt).to(place);
    Tensor loss = scalar_loss(spec.op, outs, cots);
    if (!loss.defined()) return;
    std::vector<Tensor> inputs;
    for (Tensor* t : leaves) inputs.push_back(*t);
    grads.push_back(to_cpu(pd::grad({loss}, inputs)));
  }
  for (size_t i = 0; i < grads[0].size(); ++i)
    check_close(grads[1][i], grads[0][i], cuda_tol(spec, dt), fmt::format("cuda {} gradient against cpu, input {}", dtype_name(dt), i));
}

}  // namespace

void run_cuda_op_tests(const OpTestSpec& spec) {
  for (size_t i = 0; i < spec.samples.size(); ++i) {
    const Sample& s = spec.samples[i];
    const std::string at = sample_label(s, i);
    INFO("op " << spec.op << ", sample at ops.yaml:" << s.yaml_line << " (" << at << ")");
    AttrMap attrs = with_seed(spec.op, s.attrs);
    // A sample that fixes every input's dtype (the int8 ops) runs once, where one of its dtypes has a
    // CUDA kernel; one whose first input has its own dtype (max_pool2d on u8) runs where that dtype has one.
    bool all_typed = !s.inputs.empty(), typed_kernel = false;
    for (const InputSpec& in : s.inputs) {
      if (!in.present) continue;
      all_typed = all_typed && !in.dtype.empty();
      typed_kernel = typed_kernel || (!in.dtype.empty() && has_cuda_kernel(spec.op, dtype_from_name(in.dtype)));
    }
    if (all_typed) {
      if (typed_kernel)
        SECTION("cuda forward in the sample's dtypes, " + at) { check_cuda_forward(spec, s, attrs, DType::f32); }
      continue;
    }
    if (!s.inputs.empty() && !s.inputs.front().dtype.empty() && !has_cuda_kernel(spec.op, dtype_from_name(s.inputs.front().dtype)))
      continue;
    for (DType dt : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
      if (!has_cuda_kernel(spec.op, dt)) continue;
      SECTION(fmt::format("cuda {} forward, {}", dtype_name(dt), at)) { check_cuda_forward(spec, s, attrs, dt); }
      if (spec.gradcheck && s.gradcheck && (dt == DType::f32 || dt == DType::f64))
        SECTION(fmt::format("cuda {} gradients, {}", dtype_name(dt), at)) { check_cuda_grads(spec, s, attrs, dt); }
    }
  }
  for (size_t i = 0; i < spec.bad.size(); ++i) {
    const Sample& s = spec.bad[i];
    SECTION("cuda bad input, " + sample_label(s, i)) {
      INFO("op " << spec.op << ", bad sample at ops.yaml:" << s.yaml_line);
      try {
        const DefaultPlaceGuard on_gpu(Place::cuda(0));
        call(spec.op, to_place(make_inputs(s, DType::f32, 42), Place::cuda(0)), with_seed(spec.op, s.attrs));
        FAIL("expected pd::Error containing '" << s.error << "'");
      } catch (const Error& e) {
        std::string msg = e.what();
        INFO("message: " << msg);
        CHECK(msg.find(spec.op) != std::string::npos);
        CHECK(msg.find(s.error) != std::string::npos);
      }
    }
  }
}

double attr_number(const AttrMap& attrs, const char* name, double fallback) {
  auto it = attrs.find(name);
  if (it == attrs.end()) return fallback;
  if (auto d = std::get_if<double>(&it->second)) return *d;
  if (auto i = std::get_if<int64_t>(&it->second)) return static_cast<double>(*i);
  if (auto b = std::get_if<bool>(&it->second)) return *b ? 1.0 : 0.0;
  return fallback;
}

bool register_naive(const std::string& op, NaiveRef ref) {
  naive_table()[op] = std::move(ref);
  return true;
}

const NaiveRef* find_naive(const std::string& op) {
  auto it = naive_table().find(op);
  return it == naive_table().end() ? nullptr : &it->second;
}

void run_op_tests(const OpTestSpec& spec) {
  for (size_t i = 0; i < spec.samples.size(); ++i) {
    const Sample& s = spec.samples[i];
    const std::string at = sample_label(s, i);
    INFO("op " << spec.op << ", sample at ops.yaml:" << s.yaml_line << " (" << at << ")");
    AttrMap attrs = with_seed(spec.op, s.attrs);
    SECTION("reference, " + at) { check_reference(spec, s, attrs); }
    SECTION("f32 vs f64, " + at) { check_f32(spec, s, attrs); }
    SECTION("backends, " + at) { check_backends(spec, s, attrs); }
    if (spec.gradcheck && s.gradcheck)
      SECTION("gradcheck, " + at) { gradcheck(spec, s, attrs, false); }
    if (spec.twice_differentiable && s.gradcheck)
      SECTION("gradgradcheck, " + at) { gradcheck(spec, s, attrs, true); }
    if (spec.has_fused_grad)
      SECTION("fused grad, " + at) { check_fused(spec, s, attrs); }
  }
  for (size_t i = 0; i < spec.bad.size(); ++i) {
    const Sample& s = spec.bad[i];
    SECTION("bad input, " + sample_label(s, i)) {
      INFO("op " << spec.op << ", bad sample at ops.yaml:" << s.yaml_line);
      try {
        call(spec.op, make_inputs(s, DType::f32, 42), with_seed(spec.op, s.attrs));
        FAIL("expected pd::Error containing '" << s.error << "'");
      } catch (const Error& e) {
        std::string msg = e.what();
        INFO("message: " << msg);
        CHECK(msg.find(spec.op) != std::string::npos);
        CHECK(msg.find(s.error) != std::string::npos);
      }
    }
  }
}

}  // namespace pd::test
