#include "pd/bench/runner.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <optional>
#include <vector>

#include <unistd.h>

#include "op_api.h"
#include "pd/autograd/autograd.h"
#include "pd/bench/problem.h"
#include "pd/core/allocator.h"
#include "pd/core/kernel_context.h"
#include "pd/core/packed_weights.h"
#include "registry.h"

namespace pd::bench {
namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

double bytes_of(const std::vector<Tensor>& ts) {
  double b = 0;
  for (const auto& t : ts)
    if (t.defined()) b += double(t.numel()) * dtype_size(t.dtype());
  return b;
}
std::vector<Tensor> flat(const BoxedInputs& in) {
  std::vector<Tensor> out;
  for (const auto& l : in) out.insert(out.end(), l.begin(), l.end());
  return out;
}

// Every defined tensor of the inputs after the first (the data an op runs on).
std::vector<Tensor> params_of(const BoxedInputs& in) {
  std::vector<Tensor> out;
  for (size_t i = 1; i < in.size(); ++i)
    for (const auto& t : in[i])
      if (t.defined()) out.push_back(t);
  return out;
}

// Fresh leaves that require grad for every floating input the op differentiates; the rest (integer
// inputs, and nondiff ones such as batch_norm's running statistics, which it updates in place) are
// shared as they are.
BoxedInputs grad_leaves(const OpSchema& op, const BoxedInputs& in, std::vector<Tensor>& leaves) {
  BoxedInputs out = in;
  size_t slot = 0;
  for (const auto& a : op.args) {
    if (!a.is_tensor()) continue;
    if (slot >= out.size()) break;
    for (auto& t : out[slot++])
      if (!a.nondiff && t.defined() && is_floating(t.dtype())) {
        t = t.detach();
        t.set_requires_grad(true);
        leaves.push_back(t);
      }
  }
  return out;
}
std::vector<Tensor> needing_grad(const std::vector<Tensor>& outs) {
  std::vector<Tensor> r;
  for (const auto& t : outs)
    if (t.defined() && t.requires_grad()) r.push_back(t);
  return r;
}
std::vector<Tensor> cotangents(const std::vector<Tensor>& outs) {
  NoGradGuard ng;
  std::vector<Tensor> c;
  for (size_t i = 0; i < outs.size(); ++i) c.push_back(ops::uniform(outs[i].shape(), -1, 1, 77 + int64_t(i), outs[i].dtype()));
  return c;
}

// Multiples of 1/8 (as benchdnn fills its problems): products and long sums of them are exact in
// f32, so a GEMM or convolution must match the reference however it orders its accumulation.
Tensor exact_values(const Tensor& t) {
  if (!t.defined() || !is_floating(t.dtype())) return t;
  Tensor eight = Tensor::full_scalar(8, t.dtype());
  return ops::div(ops::cast(ops::cast(ops::mul(t, eight), DType::i64), t.dtype()), eight);
}

std::optional<ScopedKernelBackend> force_for(const std::string& choice) {
  std::optional<ScopedKernelBackend> f;
  if (choice == "reference") f.emplace(Backend::reference);
  return f;
}

// Writes a buffer twice the size of the last-level cache (64 MiB where the system does not say), which
// evicts whatever the op touched.
void flush_caches() {
  static std::vector<char> buffer = [] {
    const long llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
    return std::vector<char>(2 * static_cast<size_t>(llc > 0 ? llc : 32L << 20));
  }();
  static char value = 0;
  std::memset(buffer.data(), ++value, buffer.size());
}

}  // namespace

Timing measure(const std::function<void()>& setup, const std::function<void()>& timed_body, const RunOptions& o) {
  // A device's kernels run asynchronously: a rep ends when its stream is idle.
  const Allocator* device = o.backend == "cuda" ? &allocator_for(Place::cuda(0)) : nullptr;
  auto timed = [&] {
    timed_body();
    if (device) device->synchronize();
  };
  if (device) device->synchronize();
  for (int i = 0; i < o.warmup; ++i) {  // fills the caching allocator and oneDNN's primitive cache
    if (setup) setup();
    timed();
  }
  std::vector<double> ts;
  auto start = Clock::now();
  while (int(ts.size()) < o.min_reps || (ms_since(start) < o.budget_ms && ts.size() < 1000000)) {
    if (setup) setup();
    if (o.cold_cache) flush_caches();
    auto t0 = Clock::now();
    timed();
    ts.push_back(ms_since(t0));
  }
  std::sort(ts.begin(), ts.end());
  size_t n = ts.size();
  return {ts[0], n % 2 ? ts[n / 2] : 0.5 * (ts[n / 2 - 1] + ts[n / 2]), int(n)};
}

Backend resolve_backend(const std::string& op, DType dtype, const std::string& choice) {
  bool ref = false, dnnl = false;
  for (const auto& k : registry::registered_kernels(op)) {
    if (k.dtype != dtype) continue;
    ref |= k.backend == Backend::reference;
    dnnl |= k.backend == Backend::onednn;
  }
  if (choice == "cuda") {
    bool cuda = false;
    for (const auto& k : registry::registered_kernels(op)) cuda |= k.dtype == dtype && k.backend == Backend::cuda;
    PD_CHECK(cuda, ErrorCode::kNotImplemented, "{}: no cuda kernel for {}", op, dtype_name(dtype));
    return Backend::cuda;
  }
  if (choice == "onednn") {
    PD_CHECK(dnnl, ErrorCode::kNotImplemented, "{}: no onednn kernel for {}", op, dtype_name(dtype));
    return Backend::onednn;
  }
  if (choice == "cpu" && dnnl) return Backend::onednn;
  PD_CHECK(ref || registry::registered_kernels(op).empty(), ErrorCode::kNotImplemented, "{}: no kernel for {}", op,
           dtype_name(dtype));
  return Backend::reference;
}

std::vector<Result> bench_op(const OpSchema& op, const BenchProblem& p, const std::string& label, const RunOptions& o,
                             const Peak& peak) {
  const char* be = registry::registered_kernels(op.name).empty() ? "view"
                                                                 : backend_name(resolve_backend(op.name, o.dtype, o.backend));
  auto force = force_for(o.backend);
  BoxedInputs in = make_inputs(op, p, o.dtype, 1);
  if (o.backend == "cuda")
    for (auto& slot : in)
      for (auto& t : slot)
        if (t.defined()) t = t.to(Place::cuda(0));
  std::vector<Result> rows;
  auto row = [&](const char* dir, const Timing& t, double flops, double bytes) {
    Result r{op.name, label, be, dtype_name(o.dtype), dir, t.min_ms, t.median_ms, t.reps, flops > 0};
    r.rate = (flops > 0 ? flops : bytes) / (t.min_ms * 1e-3) / 1e9;
    double pk = flops > 0 ? peak.gemm_gflops : peak.mem_gbps;
    r.pct_peak = pk > 0 ? 100.0 * r.rate / pk : 0;
    // The memory peak is DRAM bandwidth; a problem that fits in the cache runs several times faster.
    if (flops <= 0 && bytes > 0 && bytes <= peak.cache_bytes) r.in_cache = true, r.pct_peak = 0;
    rows.push_back(r);
  };
  double fwd_flops = 0;
  {
    NoGradGuard ng;
    // The call as pd-infer's executor makes it in a model: the inputs after the first are the weights an
    // inference model holds as params, declared constant, so a kernel packs them once (as benchdnn
    // reorders weights before its timed loop); the attributes are parsed once; and the op has its memo
    // slot, where kernels keep what they prepared (oneDNN's call, a gather's plan) from one call to the
    // next.
    PackedWeights constants;
    constants.declare_constants(params_of(in));
    PackedWeightsScope packing(&constants);
    OpMemo memo;
    const BoundCall bound{nullptr, &memo};
    const PreparedAttrs attrs = op.prepare(p.attrs);
    std::vector<Tensor> outs;
    Timing t = measure([&] { outs.clear(); }, [&] { outs = op.call_prepared(bound, in, attrs.get()); }, o);
    ShapeEnv env;
    int i = 0;
    for (const auto& a : op.args)
      if (a.is_tensor()) {
        if (!in[i].empty()) env.shapes.push_back({a.name, in[i][0].shape()});
        ++i;
      }
    for (size_t j = 0; j < outs.size() && j < op.outputs.size(); ++j) env.shapes.push_back({op.outputs[j].name, outs[j].shape()});
    fwd_flops = op.flops ? op.flops(env) : 0;
    if (o.fwd) row("fwd", t, fwd_flops, bytes_of(flat(in)) + bytes_of(outs));
  }
  if (!o.bwd || !op.differentiable || !is_floating(o.dtype)) return rows;
  std::vector<Tensor> leaves;
  BoxedInputs gin = grad_leaves(op, in, leaves);
  std::vector<Tensor> outs = needing_grad(op.call(gin, p.attrs));
  if (outs.empty() || leaves.empty()) return rows;
  std::vector<Tensor> cots = cotangents(outs), grads;
  if (o.backend == "cuda")
    for (auto& c : cots) c = c.to(Place::cuda(0));
  // The forward that builds the graph runs before each rep, outside the timed region.
  Timing t = measure([&] { grads.clear(); outs = needing_grad(op.call(gin, p.attrs)); },
                     [&] { grads = pd::grad(outs, leaves, cots); }, o);
  int heavy = 0;  // inputs of rank >= 2 each cost about one forward's FLOPs (data and weight gradients)
  for (const auto& l : leaves) heavy += l.dim() >= 2;
  // Memory-bound backward: cotangent reads plus gradient writes; a gradient that is the cotangent
  // itself (add, reshape) moved nothing, so such rows report 0 GB/s rather than a fictional rate.
  double written = 0;
  for (const auto& g : grads) {
    bool alias = false;
    for (const auto& c : cots) alias |= g.defined() && g.storage() == c.storage();
    if (g.defined() && !alias) written += bytes_of({g});
  }
  row("bwd", t, fwd_flops * std::max(1, heavy), written > 0 ? bytes_of(cots) + written : 0);
  return rows;
}

static void compare(const std::vector<Tensor>& ref, const std::vector<Tensor>& got, double tol, CheckResult& c) {
  NoGradGuard ng;
  c.passed = ref.size() == got.size();
  if (!c.passed) c.detail = fmt::format("{} outputs, reference has {}", got.size(), ref.size());
  for (size_t j = 0; c.passed && j < ref.size(); ++j) {
    if (!ref[j].defined() || !got[j].defined()) continue;
    if (ref[j].shape() != got[j].shape()) {
      c.passed = false;
      c.detail = fmt::format("output {} shape {} vs reference {}", j, shape_str(got[j].shape()), shape_str(ref[j].shape()));
      break;
    }
    auto a = ops::cast(ref[j], DType::f64).contiguous().to_vector<double>();
    auto b = ops::cast(got[j], DType::f64).contiguous().to_vector<double>();
    for (size_t i = 0; i < a.size(); ++i) {
      double err = std::abs(a[i] - b[i]);
      bool nan_ok = std::isnan(a[i]) && std::isnan(b[i]);
      if (!nan_ok) c.max_abs_err = std::max(c.max_abs_err, std::isnan(err) ? INFINITY : err);
      if (!nan_ok && !(err <= tol * (1 + std::abs(a[i]))) && c.detail.empty())
        c.detail = fmt::format("output {} element {}: {} vs reference {}", j, i, b[i], a[i]);
    }
    if (!c.detail.empty()) c.passed = false;
  }
}

std::vector<CheckResult> check_op(const OpSchema& op, const BenchProblem& p, const RunOptions& o) {
  std::vector<CheckResult> out;
  double tol = o.dtype == DType::f64 ? 1e-10 : 1e-4;
  BoxedInputs in = make_inputs(op, p, o.dtype, 1);
  bool exact = op.flops != nullptr;  // the ops with long reductions
  if (exact) {
    NoGradGuard ng;
    for (auto& l : in)
      for (auto& t : l) t = exact_values(t);
  }
  auto run = [&](Backend b, bool bwd) {
    ScopedKernelBackend force(b);
    if (!bwd) {
      NoGradGuard ng;
      return op.call(in, p.attrs);
    }
    std::vector<Tensor> leaves;
    BoxedInputs gin = grad_leaves(op, in, leaves);
    std::vector<Tensor> outs = needing_grad(op.call(gin, p.attrs));
    if (outs.empty()) return std::vector<Tensor>{};
    std::vector<Tensor> cots = cotangents(outs);
    if (exact) {
      NoGradGuard ng;
      for (auto& c : cots) c = exact_values(c);
    }
    return pd::grad(outs, leaves, cots);
  };
  for (const auto& k : registry::registered_kernels(op.name)) {
    if (k.dtype != o.dtype || k.backend == Backend::reference || k.backend == Backend::cuda) continue;
    for (int bwd = 0; bwd < 2; ++bwd) {
      if (bwd ? !(o.bwd && op.differentiable && is_floating(o.dtype)) : !o.fwd) continue;
      CheckResult c;
      c.backend = backend_name(k.backend);
      c.direction = bwd ? "bwd" : "fwd";
      compare(run(Backend::reference, bwd), run(k.backend, bwd), tol, c);
      out.push_back(c);
    }
  }
  return out;
}

}  // namespace pd::bench
