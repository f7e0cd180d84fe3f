// A thread-local observer of op calls: the hook behind tracing a model into a Program and per-op
// profiling. Every generated op function opens an OpObserverScope; with no observer installed that
// costs one thread-local load.
//
//   struct Counter : pd::OpObserver { int n = 0; void begin(const char*) override { ++n; } };
//   Counter c;
//   { pd::ScopedOpObserver install(&c); run_model(); }
#pragma once
#include <vector>

#include "pd/core/tensor.h"
#include "pd/ops/attr.h"
#include "pd/ops/op_schema.h"

namespace pd {

class OpObserver {
 public:
  virtual ~OpObserver() = default;
  // Around every op call, nested ones included (an op may call others, e.g. cast for promotion).
  virtual void begin(const char* op) {}
  virtual void finish(const char* op) {}
  // After a successful call, when wants_values(): the op's inputs as passed, its attributes and outputs.
  virtual bool wants_values() const { return false; }
  virtual void record(const char* op, const BoxedInputs& inputs, const AttrMap& attrs, const std::vector<Tensor>& outputs) {}
};

OpObserver*& current_op_observer();

class ScopedOpObserver {
 public:
  explicit ScopedOpObserver(OpObserver* o) : prev_(current_op_observer()) { current_op_observer() = o; }
  ~ScopedOpObserver() { current_op_observer() = prev_; }
  ScopedOpObserver(const ScopedOpObserver&) = delete;
  ScopedOpObserver& operator=(const ScopedOpObserver&) = delete;

 private:
  OpObserver* prev_;
};

// Opened by every generated op function.
struct OpObserverScope {
  OpObserver* observer;
  const char* op;
  explicit OpObserverScope(const char* name) : observer(current_op_observer()), op(name) {
    if (observer) observer->begin(op);
  }
  ~OpObserverScope() {
    if (observer) observer->finish(op);
  }
  bool wants_values() const { return observer && observer->wants_values(); }
};

}  // namespace pd
