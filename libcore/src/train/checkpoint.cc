#include "checkpoint.h"

#include <fmt/format.h>

#include <charconv>

#include "pd/io/tensor_file.h"

namespace pd::train {
namespace {

// Doubles are written in their shortest round-trip form, so a resumed loss sum is bit-exact.
template <typename T>
T field(const io::TensorArchive& a, const std::string& path, const char* key, T missing) {
  auto it = a.metadata.find(key);
  if (it == a.metadata.end()) return missing;
  T v{};
  const char* end = it->second.data() + it->second.size();
  auto [p, ec] = std::from_chars(it->second.data(), end, v);
  PD_CHECK(ec == std::errc() && p == end, ErrorCode::kParse, "{}: checkpoint field '{}' is not a number: '{}'", path, key,
           it->second);
  return v;
}

}  // namespace

void save_checkpoint(const std::string& path, model::Network& net, const std::map<std::string, Tensor>& optim_state,
                     const RunState& s, const RunFacts& f, uint64_t spec_hash,
                     const std::map<std::string, std::string>& extra) {
  io::write_file_atomic(path, encode_checkpoint(net, optim_state, s, f, spec_hash, extra));
}

std::string encode_checkpoint(model::Network& net, const std::map<std::string, Tensor>& optim_state, const RunState& s,
                              const RunFacts& f, uint64_t spec_hash, const std::map<std::string, std::string>& extra) {
  std::map<std::string, Tensor> t;
  for (const auto& [k, v] : net.state()) t["param/" + k] = v;
  for (const auto& [k, v] : optim_state) t["optim/" + k] = v;
  std::map<std::string, std::string> meta = extra;
  meta.merge(std::map<std::string, std::string>{{"kind", "paddle-cpp checkpoint"},
                    {"epoch", std::to_string(s.epoch)},
                    {"batch", std::to_string(s.batch)},
                    {"step", std::to_string(s.step)},
                    {"epoch_loss_sum", fmt::format("{}", s.epoch_loss_sum)},
                    {"epoch_samples", std::to_string(s.epoch_samples)},
                    {"epoch_seconds", fmt::format("{}", s.epoch_seconds)},
                    {"train_samples", std::to_string(f.train_samples)},
                    {"batches_per_epoch", std::to_string(f.batches_per_epoch)},
                    {"epochs", std::to_string(f.epochs)},
                    {"schedule_steps", std::to_string(f.schedule_steps)},
                    {"spec_hash", std::to_string(spec_hash)},
                    {"model_yaml", net.spec().yaml_text}});
  return io::encode_tensors("checkpoint", t, meta);
}

Checkpoint load_checkpoint(const std::string& path, model::Network& net, Optimizer* opt, uint64_t spec_hash) {
  return restore_checkpoint(io::read_file_bytes(path), path, net, opt, spec_hash);
}

Checkpoint restore_checkpoint(const std::string& bytes, const std::string& path, model::Network& net, Optimizer* opt,
                              uint64_t spec_hash) {
  io::TensorArchive a = io::parse_tensors(bytes, path);
  PD_CHECK(a.metadata["kind"] == "paddle-cpp checkpoint", ErrorCode::kParse, "{}: not a pd-train checkpoint", path);
  PD_CHECK(a.metadata["spec_hash"] == std::to_string(spec_hash), ErrorCode::kInvalidArgument,
           "{}: the checkpoint was written for a different model, optimizer or schedule than {}; resume with the YAML it was "
           "trained with (stored in the run directory as config.yaml), or start a new run with --init-from to fine-tune",
           path, net.spec().file);
  Checkpoint c;
  std::map<std::string, Tensor> params;
  for (auto& [k, v] : a.tensors) {
    if (k.rfind("param/", 0) == 0) params[k.substr(6)] = v;
    if (k.rfind("optim/", 0) == 0) c.optim_state[k.substr(6)] = v;
  }
  net.load_state(params);
  if (opt) opt->load_state(c.optim_state);
  c.state = {field<int64_t>(a, path, "epoch", -1),        field<int64_t>(a, path, "batch", -1),
             field<int64_t>(a, path, "step", -1),         field<double>(a, path, "epoch_loss_sum", 0),
             field<int64_t>(a, path, "epoch_samples", 0), field<double>(a, path, "epoch_seconds", 0)};
  PD_CHECK(c.state.epoch >= 0 && c.state.batch >= 0 && c.state.step >= 0, ErrorCode::kParse,
           "{}: the checkpoint lacks its epoch, batch or step", path);
  c.facts = {field<int64_t>(a, path, "train_samples", -1), field<int64_t>(a, path, "batches_per_epoch", -1),
             field<int64_t>(a, path, "epochs", -1), field<int64_t>(a, path, "schedule_steps", -1)};
  c.metadata = a.metadata;
  return c;
}

}  // namespace pd::train
