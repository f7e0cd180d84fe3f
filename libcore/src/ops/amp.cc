// Autocast: the per-thread policy and the cast decision every generated op asks for (pd/ops/amp.h).
#include "pd/ops/amp.h"

#include <map>
#include <tuple>

#include "op_api.h"
#include "pd/ops/dispatch.h"
#include "registry.h"

namespace pd::amp {
namespace {

thread_local bool t_active = false;
thread_local Policy t_policy;

bool castable(DType d) { return d == DType::f32 || d == DType::f16 || d == DType::bf16; }

// Whether `op` has a kernel for `dtype` that may run on `place`; cached per thread by the op name's
// address (a string literal in the generated op).
bool has_kernel(const char* op, DType dtype, Place place) {
  thread_local std::map<std::tuple<const char*, DType, DeviceType>, bool> cache;
  const auto key = std::make_tuple(op, dtype, place.type);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  bool found = false;
  for (const KernelKey& k : registry::registered_kernels(op))
    if (k.dtype == dtype && backend_allowed(k.backend, place)) found = true;
  cache.emplace(key, found);
  return found;
}

}  // namespace

Policy parse_policy(const std::string& dtype, const std::string& level) {
  Policy p;
  if (dtype == "bf16") p.dtype = DType::bf16;
  else if (dtype == "f16") p.dtype = DType::f16;
  else raise(ErrorCode::kInvalidArgument, "amp: dtype must be bf16 or f16, but received '{}'", dtype);
  if (level == "O1") p.level = Level::O1;
  else if (level == "O2") p.level = Level::O2;
  else raise(ErrorCode::kInvalidArgument, "amp: level must be O1 or O2, but received '{}'", level);
  return p;
}

std::string policy_str(const Policy& p) {
  return fmt::format("{} {}", dtype_name(p.dtype), p.level == Level::O1 ? "O1" : "O2");
}

AutocastScope::AutocastScope(Policy p) : had_prev_(t_active), prev_(t_policy) {
  t_active = true;
  t_policy = p;
}

AutocastScope::~AutocastScope() {
  t_active = had_prev_;
  t_policy = prev_;
}

bool active() { return t_active; }

std::optional<DType> cast_target(const char* op, std::initializer_list<const Tensor*> tensors,
                                 std::initializer_list<const std::vector<Tensor>*> lists) {
  if (!t_active) return std::nullopt;
  bool any = false, mixed = false, has_f32 = false;
  DType first = DType::f32;
  Place place = Place::cpu();
  const auto see = [&](const Tensor& t) {
    if (!t.defined() || !castable(t.dtype())) return;
    if (!any) {
      any = true;
      first = t.dtype();
      place = t.place();
    } else if (t.dtype() != first) {
      mixed = true;
    }
    has_f32 = has_f32 || t.dtype() == DType::f32;
  };
  for (const Tensor* t : tensors) see(*t);
  for (const std::vector<Tensor>* l : lists)
    for (const Tensor& t : *l) see(t);
  if (!any) return std::nullopt;
  // The op's list, looked up once per thread and op (the name's address, as in has_kernel).
  thread_local std::map<const char*, OpClass> classes;
  auto cls = classes.find(op);
  if (cls == classes.end()) cls = classes.emplace(op, op_class(op)).first;
  DType target;
  switch (cls->second) {
    case OpClass::low: target = t_policy.dtype; break;
    case OpClass::f32: target = DType::f32; break;
    default: target = t_policy.level == Level::O2 ? t_policy.dtype : (has_f32 ? DType::f32 : first); break;
  }
  if (target != DType::f32 && !has_kernel(op, target, place)) target = DType::f32;
  if (!mixed && first == target) return std::nullopt;
  return target;
}

Tensor cast(const Tensor& t, DType dtype) {
  if (!t.defined() || !castable(t.dtype()) || t.dtype() == dtype) return t;
  return ops::cast(t, dtype);
}

std::vector<Tensor> cast(const std::vector<Tensor>& ts, DType dtype) {
  std::vector<Tensor> out;
  out.reserve(ts.size());
  for (const Tensor& t : ts) out.push_back(cast(t, dtype));
  return out;
}

}  // namespace pd::amp
