// Automatic mixed precision (autocast), as PyTorch's torch.autocast and Paddle's paddle.amp.auto_cast:
// while an AutocastScope is alive on a thread, every op call casts its floating inputs first, by the
// op's list in amp_lists.cc:
//
//   low precision (matmul, linear, conv2d, attention): inputs cast to the policy's dtype (bf16 / f16);
//   f32 (losses, softmax, normalisations, reductions, exp / log): inputs cast to f32;
//   the rest: O1 runs them in the widest floating dtype among their inputs (f32 when any input is f32),
//   O2 in the policy's dtype.
//
// An op with no kernel for the low dtype on the inputs' place runs in f32 instead. Only f32, f16 and
// bf16 tensors are cast (f64 and integer tensors never). The casts are ops, recorded by autograd like
// any other: gradients flow back to the f32 parameters (the master weights) in f32.
//
//   { pd::amp::AutocastScope amp({pd::DType::bf16, pd::amp::Level::O1});
//     loss = net.loss(net.forward(...), label); }   // backward runs outside the scope
//   backward(loss);
#pragma once
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "pd/core/tensor.h"

namespace pd::amp {

enum class Level { O1, O2 };

struct Policy {
  DType dtype = DType::bf16;  // bf16 or f16
  Level level = Level::O1;
};

// Parses "bf16" / "f16" and "O1" / "O2"; a pd::Error naming what was expected otherwise.
Policy parse_policy(const std::string& dtype, const std::string& level);
std::string policy_str(const Policy& p);

// Autocast on for the calling thread while alive (scopes nest; the innermost policy holds).
class AutocastScope {
 public:
  explicit AutocastScope(Policy p);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  bool had_prev_;
  Policy prev_;
};

bool active();

// The dtype op `op` should run in, given its tensor inputs, or nothing when no input needs a cast
// (also when autocast is off). Called by every generated op before anything else. `op` must be a
// string literal (the generated op's kOp): its address keys a per-thread cache.
std::optional<DType> cast_target(const char* op, std::initializer_list<const Tensor*> tensors,
                                 std::initializer_list<const std::vector<Tensor>*> lists = {});
// t cast to `dtype` when it is an f32 / f16 / bf16 tensor of another dtype; otherwise t itself.
Tensor cast(const Tensor& t, DType dtype);
std::vector<Tensor> cast(const std::vector<Tensor>& ts, DType dtype);

// The op lists (amp_lists.cc).
enum class OpClass { low, f32, follow };
OpClass op_class(const std::string& op);

}  // namespace pd::amp
