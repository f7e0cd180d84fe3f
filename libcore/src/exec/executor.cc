// Executor: interprets a Program op by op through the boxed op API. Inference mode drops each
// intermediate right after its last reader, so its storage returns to the caching allocator and the
// next op's output can reuse it; live bytes are counted per storage (views share one).
#include "pd/exec/executor.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <optional>

#include "pd/autograd/autograd.h"
#include "pd/ops/op_schema.h"

namespace pd::exec {
namespace {

bool fits(const ir::ValueType& want, const Tensor& t) {
  if (t.dtype() != want.dtype || t.dim() != static_cast<int64_t>(want.shape.size())) return false;
  for (size_t d = 0; d < want.shape.size(); ++d)
    if (want.shape[d] != -1 && want.shape[d] != t.shape()[d]) return false;
  return true;
}

// Counts the bytes of live intermediate storages; a storage shared by several values (views) is
// counted once, and storages of inputs and params are never counted. Flat vectors, kept by the
// executor between runs: a run allocates nothing here (LeNet runs in 10 us at batch 1).
class LiveBytes {
 public:
  // `external`: the storages of inputs and params, which are not the run's to count (sorted here);
  // `refs`: the buffer of live storages. Both outlive this object.
  LiveBytes(std::vector<const Storage*>& external, std::vector<std::pair<const Storage*, int>>& refs)
      : external_(external), refs_(refs) {
    std::sort(external.begin(), external.end());
    refs_.clear();
  }
  void add(const Tensor& t) {
    const Storage* s = t.storage().get();
    if (!s || std::binary_search(external_.begin(), external_.end(), s)) return;
    for (auto& [storage, refs] : refs_)
      if (storage == s) return void(++refs);
    refs_.emplace_back(s, 1);
    live_ += static_cast<int64_t>(s->bytes);
    total_ += static_cast<int64_t>(s->bytes);
    peak_ = std::max(peak_, live_);
  }
  void remove(const Tensor& t) {
    const Storage* s = t.storage().get();
    for (size_t i = 0; i < refs_.size(); ++i) {
      if (refs_[i].first != s) continue;
      if (--refs_[i].second == 0) {
        live_ -= static_cast<int64_t>(s->bytes);
        refs_[i] = refs_.back();
        refs_.pop_back();
      }
      return;
    }
  }
  int64_t peak() const { return peak_; }
  int64_t total() const { return total_; }

 private:
  const std::vector<const Storage*>& external_;  // sorted
  std::vector<std::pair<const Storage*, int>>& refs_;  // the live storages (a few at a time), values each
  int64_t live_ = 0, peak_ = 0, total_ = 0;
};

}  // namespace

std::string describe_inputs(const ir::Program& program) {
  std::string out;
  for (ir::ValueId id : program.inputs()) {
    const ir::Value& v = program.value(id);
    out += fmt::format("{}{}: {}", out.empty() ? "" : ", ", v.name, v.type.str());
  }
  return out.empty() ? "no inputs" : out;
}

void check_inputs(const ir::Program& program, const std::map<std::string, Tensor>& inputs) {
  // Built only for a message (a run with good inputs formats nothing).
  const auto expects = [&] { return "; the model expects " + describe_inputs(program) + " (-1: any extent)"; };
  for (const auto& [name, t] : inputs) {
    const ir::ValueId id = program.find(name);
    PD_CHECK(id != ir::kNoValue && program.value(id).kind == ir::ValueKind::Input, ErrorCode::kInvalidArgument,
             "unknown input '{}'{}", name, expects());
    PD_CHECK(t.defined(), ErrorCode::kInvalidArgument, "input '{}' is an undefined tensor{}", name, expects());
    const ir::ValueType& want = program.value(id).type;
    PD_CHECK(t.dtype() == want.dtype, ErrorCode::kDType, "input '{}' has dtype {}, but it must be {}{}", name,
             dtype_name(t.dtype()), want.str(), expects());
    PD_CHECK(fits(want, t), ErrorCode::kShape, "input '{}' has shape {}, but it must be {}{}", name,
             shape_str(t.shape()), want.str(), expects());
  }
  for (ir::ValueId id : program.inputs())
    PD_CHECK(inputs.count(program.value(id).name), ErrorCode::kInvalidArgument, "missing input '{}'{}",
             program.value(id).name, expects());
}

Executor::Executor(const ir::Program& program, ExecOptions options) : Executor(program, nullptr, options) {}

Executor::Executor(ExecPlan& plan, ExecOptions options) : Executor(plan.program(), &plan.packed_weights(), options) {
  kernels_ = &plan.kernels();
}

Executor::Executor(const ir::Program& program, PackedWeights* packed, ExecOptions options)
    : program_(program), options_(options), packed_(packed ? packed : &own_packed_) {
  last_use_.assign(program.values().size(), -1);
  const auto& ops = program.ops();
  for (size_t k = 0; k < ops.size(); ++k) {
    schemas_.push_back(&op_schema(ops[k].type));
    BoxedInputs& boxed = boxed_.emplace_back(ops[k].inputs.size());
    for (size_t s = 0; s < boxed.size(); ++s) boxed[s].resize(ops[k].inputs[s].size());
    for (const auto& slot : ops[k].inputs)
      for (ir::ValueId v : slot) last_use_[static_cast<size_t>(v)] = static_cast<int32_t>(k);
  }
  for (ir::ValueId v : program.outputs()) last_use_[static_cast<size_t>(v)] = -1;  // outputs live to the end
  for (size_t id = 0; id < program.values().size(); ++id)
    if (program.values()[id].kind == ir::ValueKind::Param) param_ids_.push_back(static_cast<ir::ValueId>(id));
  declared_.assign(param_ids_.size(), nullptr);
  prepared_.resize(ops.size());
  memos_.resize(ops.size());
}

std::vector<Tensor> Executor::run(const std::map<std::string, Tensor>& inputs) {
  check_inputs(program_, inputs);
  std::optional<NoGradGuard> no_grad;
  std::optional<PackedWeightsScope> packing;
  const auto& values = program_.values();
  std::vector<Tensor>& slot = slot_;  // between runs, only the params' slots hold tensors
  slot.resize(values.size());
  // Emptied however the run ends, so that no storage of an input or intermediate stays held.
  struct ClearSlots {
    std::vector<Tensor>& s;
    const std::vector<ir::Value>& values;
    ~ClearSlots() {
      for (size_t id = 0; id < s.size(); ++id)
        if (values[id].kind != ir::ValueKind::Param) s[id] = Tensor();
    }
  } clear_slots{slot, values};
  // The params' tensors, found by name once (the program's structure is fixed while an executor
  // lives; set_param replaces a tensor in place, and the pointers see it).
  if (param_tensors_.empty())
    for (ir::ValueId id : param_ids_) param_tensors_.push_back(&program_.param(id));
  std::vector<const Storage*>& external = external_;
  external.clear();
  for (size_t i = 0; i < param_ids_.size(); ++i) {
    Tensor& held = slot[static_cast<size_t>(param_ids_[i])];
    if (!held.same(*param_tensors_[i])) held = *param_tensors_[i];  // no reference counting when it is the same
    external.push_back(held.storage().get());
  }
  if (options_.inference) {
    no_grad.emplace();
    // Declared again only when a param was replaced (a pointer comparison per param, not set lookups).
    bool changed = false;
    for (size_t i = 0; i < param_ids_.size(); ++i) {
      changed |= external[i] != declared_[i];
      declared_[i] = external[i];
    }
    if (changed) {
      for (OpMemo& memo : memos_) memo.clear();  // derived from params that are gone
      std::vector<Tensor> params;
      for (ir::ValueId id : param_ids_) params.push_back(slot[static_cast<size_t>(id)]);
      packed_->declare_constants(params);
    }
    packing.emplace(packed_);
  }
  for (ir::ValueId id : program_.inputs()) {
    slot[static_cast<size_t>(id)] = inputs.at(values[static_cast<size_t>(id)].name);
    external.push_back(slot[static_cast<size_t>(id)].storage().get());
  }
  LiveBytes live(external, live_refs_);
  auto drop = [&](ir::ValueId v) {
    if (!options_.reuse_memory || values[static_cast<size_t>(v)].kind != ir::ValueKind::OpResult) return;
    live.remove(slot[static_cast<size_t>(v)]);
    slot[static_cast<size_t>(v)] = Tensor();  // the storage goes back to the allocator for reuse
  };

  stats_ = {};
  const auto& ops = program_.ops();
  if (options_.time_ops) stats_.op_ns.assign(ops.size(), 0);
  for (size_t k = 0; k < ops.size(); ++k) {
    const ir::Operation& op = ops[k];
    const auto started = options_.time_ops ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    BoxedInputs& boxed = boxed_[k];
    for (size_t s = 0; s < op.inputs.size(); ++s)
      for (size_t j = 0; j < op.inputs[s].size(); ++j) boxed[s][j] = slot[static_cast<size_t>(op.inputs[s][j])];
    // Emptied however the call ends, so that the slots hold no storage the allocator could reuse.
    struct Release {
      BoxedInputs& b;
      ~Release() {
        for (auto& s : b)
          for (Tensor& t : s) t = Tensor();
      }
    } release{boxed};
    std::vector<Tensor> outs;
    try {
      const OpSchema& schema = *schemas_[k];
      // Parsed on the first run, inside this try, so that a bad attribute is reported as before.
      if (!prepared_[k]) prepared_[k] = schema.prepare(op.attrs);
      const BoundCall call{kernels_ ? (*kernels_)[k] : nullptr, options_.inference ? &memos_[k] : nullptr};
      outs = schema.call_prepared(call, boxed, prepared_[k].get());
    } catch (const Error& e) {
      raise(e.code(), "op #{} '{}' (computing %{}): {}", k, op.type,
            op.results.empty() ? "?" : values[static_cast<size_t>(op.results[0])].name, e.what());
    }
    if (options_.time_ops)
      stats_.op_ns[k] = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - started).count();
    PD_CHECK(outs.size() == op.results.size(), ErrorCode::kInternal, "op #{} '{}' returned {} outputs, the program declares {}",
             k, op.type, outs.size(), op.results.size());
    for (size_t r = 0; r < outs.size(); ++r) {
      const ir::Value& rv = values[static_cast<size_t>(op.results[r])];
      // A program whose declared types are wrong would give wrong shapes downstream; say so here.
      PD_CHECK(outs[r].defined() && fits(rv.type, outs[r]), ErrorCode::kInternal,
               "op #{} '{}' produced {} for %{}, but the program declares {}", k, op.type,
               outs[r].defined() ? fmt::format("{}{}", dtype_name(outs[r].dtype()), shape_str(outs[r].shape())) : "nothing",
               rv.name, rv.type.str());
      slot[static_cast<size_t>(op.results[r])] = outs[r];
      live.add(outs[r]);
    }
    outs.clear();
    ++stats_.ops_run;
    // Free after last use: inputs read for the last time here, and results nobody reads.
    for (const auto& s : op.inputs)
      for (ir::ValueId v : s)
        if (last_use_[static_cast<size_t>(v)] == static_cast<int32_t>(k) && slot[static_cast<size_t>(v)].defined()) drop(v);
    for (ir::ValueId v : op.results)
      if (last_use_[static_cast<size_t>(v)] == -1 && !program_.is_output(v)) drop(v);
  }
  stats_.peak_bytes = live.peak();
  stats_.total_intermediate_bytes = live.total();

  values_.clear();
  if (!options_.reuse_memory)
    for (size_t id = 0; id < values.size(); ++id) values_[values[id].name] = slot[id];
  std::vector<Tensor> result;
  for (ir::ValueId v : program_.outputs()) result.push_back(slot[static_cast<size_t>(v)]);
  return result;
}

}  // namespace pd::exec
