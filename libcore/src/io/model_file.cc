// .pdmodel envelope (little-endian): "PDMODEL\0" u32 format_version u64 payload_size payload
// u64 fnv1a64(everything before). The payload is a serialized pd.io.proto.Model (model.proto). The
// envelope exists because a protobuf message cut at a field boundary still parses: the size and
// checksum make truncation and bit flips detectable before parsing.
#include "pd/io/model_file.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>
#include <fstream>
#include <set>
#include <sstream>

#include "model.pb.h"
#include "pd/core/target.h"
#include "pd/io/file_pair.h"
#include "pd/io/tensor_file.h"
#include "pd/ops/op_schema.h"

namespace pd::io {
namespace {

constexpr char kMagic[8] = {'P', 'D', 'M', 'O', 'D', 'E', 'L', '\0'};
constexpr size_t kHeader = sizeof(kMagic) + sizeof(uint32_t) + sizeof(uint64_t);

template <typename T>
T get_at(const std::string& data, size_t pos) {
  T v;
  std::memcpy(&v, data.data() + pos, sizeof(T));
  return v;
}

template <typename T>
void put(std::string& out, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  out.append(b, sizeof(T));
}

uint64_t file_checksum(const std::string& path) {
  const std::string bytes = read_file_bytes(path);
  return fnv1a64(bytes.data(), bytes.size());
}

void to_proto(const AttrValue& a, proto::AttrValue& p) {
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, int64_t>) p.set_i(v);
        else if constexpr (std::is_same_v<T, double>) p.set_f(v);
        else if constexpr (std::is_same_v<T, bool>) p.set_b(v);
        else if constexpr (std::is_same_v<T, std::vector<int64_t>>) p.mutable_ints()->mutable_values()->Add(v.begin(), v.end());
        else if constexpr (std::is_same_v<T, std::vector<double>>) p.mutable_floats()->mutable_values()->Add(v.begin(), v.end());
        else if constexpr (std::is_same_v<T, std::string>) p.set_s(v);
        else p.set_dtype(dtype_name(v));
      },
      a);
}

AttrValue from_proto(const proto::AttrValue& p) {
  switch (p.kind_case()) {
    case proto::AttrValue::kI: return p.i();
    case proto::AttrValue::kF: return p.f();
    case proto::AttrValue::kB: return p.b();
    case proto::AttrValue::kInts: return std::vector<int64_t>(p.ints().values().begin(), p.ints().values().end());
    case proto::AttrValue::kFloats: return std::vector<double>(p.floats().values().begin(), p.floats().values().end());
    case proto::AttrValue::kS: return p.s();
    case proto::AttrValue::kDtype: return dtype_from_name(p.dtype());
    default: raise(ErrorCode::kParse, "an attribute has no value");
  }
}

ir::ValueType type_of(const proto::Value& v) {
  Shape shape(v.shape().begin(), v.shape().end());
  check_shape_limits(shape, fmt::format("value '{}'", v.name()), /*allow_unknown=*/true);
  return {dtype_from_name(v.dtype()), std::move(shape)};
}

// Envelope checks, in the order that gives the most useful message for each kind of damage.
proto::Model read_model(const std::string& data, const std::string& path) {
  PD_CHECK(std::memcmp(data.data(), kMagic, std::min(data.size(), sizeof(kMagic))) == 0, ErrorCode::kParse,
           "{}: not a paddle-cpp model file (bad magic); pd-train writes model.pdmodel in its run directory", path);
  PD_CHECK(data.size() >= kHeader, ErrorCode::kParse, "{}: truncated model file ({} bytes, the header alone has {})", path,
           data.size(), kHeader);
  const uint32_t version = get_at<uint32_t>(data, sizeof(kMagic));
  PD_CHECK(version <= kModelFormatVersion, ErrorCode::kParse,
           "{}: written by a newer paddle-cpp (model format version {}, this build reads up to {})", path, version,
           kModelFormatVersion);
  PD_CHECK(version >= 1, ErrorCode::kParse, "{}: invalid model format version 0", path);
  const uint64_t size = get_at<uint64_t>(data, sizeof(kMagic) + sizeof(uint32_t));
  const uint64_t have = data.size() - kHeader;
  PD_CHECK(have >= sizeof(uint64_t) && size <= have - sizeof(uint64_t), ErrorCode::kParse,
           "{}: truncated model file: the header announces {} payload bytes, the file has {} after the header", path, size, have);
  PD_CHECK(size + sizeof(uint64_t) == have, ErrorCode::kParse, "{}: {} unexpected bytes after the end of the model", path,
           have - sizeof(uint64_t) - size);
  const size_t body = kHeader + size;
  PD_CHECK(fnv1a64(data.data(), body) == get_at<uint64_t>(data, body), ErrorCode::kParse,
           "{}: checksum mismatch: the model file is corrupted", path);
  proto::Model m;
  PD_CHECK(m.ParseFromArray(data.data() + kHeader, static_cast<int>(size)), ErrorCode::kParse,
           "{}: the model message does not parse", path);
  PD_CHECK(m.format_version() == version, ErrorCode::kParse, "{}: the model says format version {}, its envelope {}", path,
           m.format_version(), version);
  return m;
}

// Rebuilds the Program keeping value order: inputs first, then values in file order, each op added
// when its first result comes up (or when a later op needs it).
ir::Program build(const proto::Model& m, const std::map<std::string, Tensor>& params) {
  const int n = m.values_size();
  std::vector<ir::ValueId> id(static_cast<size_t>(n), ir::kNoValue);
  std::vector<int> producer(static_cast<size_t>(n), -1);
  auto check_index = [&](uint32_t v, const char* where) {
    PD_CHECK(v < static_cast<uint32_t>(n), ErrorCode::kParse, "{} refers to value {}, but there are {} values", where, v, n);
    return static_cast<size_t>(v);
  };
  for (int k = 0; k < m.ops_size(); ++k)
    for (uint32_t r : m.ops(k).results()) {
      const size_t i = check_index(r, "an op result");
      PD_CHECK(producer[i] == -1 && m.values(static_cast<int>(i)).kind() == proto::OP_RESULT, ErrorCode::kParse,
               "value {} ('{}') is not a result of exactly one op", r, m.values(static_cast<int>(i)).name());
      producer[i] = k;
    }
  ir::Program p;
  for (uint32_t in : m.inputs()) {
    const proto::Value& v = m.values(static_cast<int>(check_index(in, "the input list")));
    PD_CHECK(v.kind() == proto::INPUT, ErrorCode::kParse, "input list names '{}', which is not an input", v.name());
    id[in] = p.add_input(v.name(), type_of(v));
  }
  int next_op = 0;
  std::function<void(int)> add_ops_through;
  auto ensure = [&](size_t i) {
    if (id[i] != ir::kNoValue) return;
    const proto::Value& v = m.values(static_cast<int>(i));
    if (v.kind() == proto::PARAM) {
      auto it = params.find(v.name());
      PD_CHECK(it != params.end(), ErrorCode::kParse, "the params file has no tensor for param '{}'", v.name());
      const ir::ValueType want = type_of(v);
      PD_CHECK(it->second.dtype() == want.dtype && it->second.shape() == want.shape, ErrorCode::kParse,
               "param '{}' is {} in the model but {}{} in the params file", v.name(), want.str(), dtype_name(it->second.dtype()),
               shape_str(it->second.shape()));
      id[i] = p.add_param(v.name(), it->second);
    } else if (v.kind() == proto::OP_RESULT) {
      PD_CHECK(producer[i] >= 0, ErrorCode::kParse, "value '{}' is an op result that no op produces", v.name());
      add_ops_through(producer[i]);
    } else {
      raise(ErrorCode::kParse, "input '{}' is missing from the input list", v.name());
    }
  };
  add_ops_through = [&](int last) {
    for (; next_op <= last; ++next_op) {
      const proto::Op& op = m.ops(next_op);
      std::vector<std::vector<ir::ValueId>> inputs;
      for (const auto& slot : op.inputs()) {
        inputs.emplace_back();
        for (uint32_t v : slot.values()) {
          const size_t i = check_index(v, "an op input");
          PD_CHECK(producer[i] < next_op, ErrorCode::kParse, "op #{} '{}' reads '{}' before it is computed", next_op, op.type(),
                   m.values(static_cast<int>(i)).name());
          ensure(i);
          inputs.back().push_back(id[i]);
        }
      }
      AttrMap attrs;
      for (const auto& [k, a] : op.attrs()) attrs[k] = from_proto(a);
      std::vector<ir::ValueType> types;
      for (uint32_t r : op.results()) types.push_back(type_of(m.values(static_cast<int>(r))));
      const auto results = p.add_op_typed(op.type(), inputs, attrs, types);
      // Keep the saved names, so that a loaded program prints as the saved one did. Two steps, so that an
      // automatic name of one result (batch_norm's "6") never blocks the saved name of another.
      auto saved_name = [&](size_t r) -> const std::string& { return m.values(static_cast<int>(op.results(static_cast<int>(r)))).name(); };
      for (size_t r = 0; r < results.size(); ++r) {
        id[op.results(static_cast<int>(r))] = results[r];
        if (results.size() > 1 && !saved_name(r).empty()) p.rename(results[r], p.unique_name(fmt::format("\x01{}", r)));
      }
      for (size_t r = 0; r < results.size(); ++r)
        if (!saved_name(r).empty() && p.value(results[r]).name != saved_name(r)) p.rename(results[r], saved_name(r));
    }
  };
  for (int i = 0; i < n; ++i) ensure(static_cast<size_t>(i));
  add_ops_through(m.ops_size() - 1);
  for (const auto& o : m.outputs()) p.mark_output(id[check_index(o.value(), "an output")], o.name());
  return p;
}

std::string params_path_of(const std::string& model_path, const proto::Model& m) {
  return (std::filesystem::path(model_path).parent_path() / m.params_file()).string();
}

bool params_match(const std::string& model_path, const proto::Model& m) {
  const std::string params = params_path_of(model_path, m);
  return !m.params_file().empty() && std::filesystem::exists(params) && file_checksum(params) == m.params_checksum();
}

// A save cut between its two renames leaves the new params beside the old model and the new model in
// the pending file (pd/io/file_pair.h): that one is the pair's model when it matches the params in place.
std::optional<proto::Model> pending_model(const std::string& path, const proto::Model& m) {
  const std::string pending = pending_path(path);
  if (!std::filesystem::exists(pending)) return std::nullopt;
  try {
    proto::Model p = read_model(read_file_bytes(pending), pending);
    if (p.params_file() == m.params_file() && params_match(path, p)) return p;
  } catch (const Error&) {
    // a damaged pending file is no evidence; the pair is reported as it is
  }
  return std::nullopt;
}

// An op this build lacks, or whose meaning is newer than this build's, is refused.
void check_op_versions(const proto::Model& m, const std::string& path) {
  std::set<std::string> used;
  for (const auto& op : m.ops()) used.insert(op.type());
  for (const auto& type : used) {
    uint32_t mine = 0;
    try {
      mine = op_version(type);
    } catch (const Error&) {
      raise(ErrorCode::kParse, "{}: uses op '{}', which this build of paddle-cpp does not have", path, type);
    }
    auto it = m.op_versions().find(type);
    PD_CHECK(it != m.op_versions().end(), ErrorCode::kParse, "{}: op '{}' has no entry in the op version map", path, type);
    PD_CHECK(it->second <= mine, ErrorCode::kParse,
             "{}: op '{}' has version {} in the model, but this build implements version {}; use a newer paddle-cpp", path,
             type, it->second, mine);
  }
}

// The graph against its params, the target, ir::verify.
ir::Program program_of(const proto::Model& m, const std::map<std::string, Tensor>& params, const std::string& path,
                       std::map<std::string, std::string>* metadata) {
  ir::Program p;
  try {
    p = build(m, params);
    if (!m.target().empty()) Target::parse(m.target());  // a name this build knows, or an error naming it
    p.set_target(m.target());
    ir::verify(p);
  } catch (const Error& e) {
    raise(ErrorCode::kParse, "{}: invalid model: {}", path, e.what());
  }
  if (metadata) *metadata = {m.metadata().begin(), m.metadata().end()};
  return p;
}

}  // namespace

uint32_t op_version(const std::string& op) {
  op_schema(op);  // throws for an unknown op
  // Ops whose semantics changed since they were introduced, with their current version. Empty today.
  static const std::map<std::string, uint32_t> bumped = {};
  auto it = bumped.find(op);
  return it == bumped.end() ? 1 : it->second;
}

std::string params_path_for(const std::string& model_path) {
  std::filesystem::path p(model_path);
  return p.replace_extension(".pdiparams").string();
}

void save_program(const std::string& path, const ir::Program& program, const std::map<std::string, std::string>& metadata) {
  const std::string params_path = params_path_for(path);
  PD_CHECK(params_path != path, ErrorCode::kInvalidArgument,
           "{}: the model and its params would be the same file; name the model *.pdmodel", path);
  const std::string params = encode_tensors(params_path, program.params(), {{"kind", "paddle-cpp program params"}});
  proto::Model m;
  m.set_format_version(kModelFormatVersion);
  m.set_producer("paddle-cpp");
  m.set_params_file(std::filesystem::path(params_path).filename().string());
  m.set_params_checksum(fnv1a64(params.data(), params.size()));
  for (const auto& [k, v] : metadata) (*m.mutable_metadata())[k] = v;
  m.set_target(program.target());
  for (const ir::Value& v : program.values()) {
    proto::Value* pv = m.add_values();
    pv->set_name(v.name);
    pv->set_kind(v.kind == ir::ValueKind::Input ? proto::INPUT : v.kind == ir::ValueKind::Param ? proto::PARAM : proto::OP_RESULT);
    pv->set_dtype(dtype_name(v.type.dtype));
    pv->mutable_shape()->Add(v.type.shape.begin(), v.type.shape.end());
  }
  for (const ir::Operation& op : program.ops()) {
    proto::Op* po = m.add_ops();
    po->set_type(op.type);
    for (const auto& slot : op.inputs) {
      auto* s = po->add_inputs();
      for (ir::ValueId v : slot) s->add_values(static_cast<uint32_t>(v));
    }
    for (ir::ValueId v : op.results) po->add_results(static_cast<uint32_t>(v));
    for (const auto& [k, a] : op.attrs) to_proto(a, (*po->mutable_attrs())[k]);
    (*m.mutable_op_versions())[op.type] = op_version(op.type);
  }
  for (ir::ValueId v : program.inputs()) m.add_inputs(static_cast<uint32_t>(v));
  for (size_t i = 0; i < program.outputs().size(); ++i) {
    auto* o = m.add_outputs();
    o->set_value(static_cast<uint32_t>(program.outputs()[i]));
    o->set_name(program.output_names()[i]);
  }
  // Deterministic map order: the same program always gives the same bytes.
  std::string payload;
  {
    google::protobuf::io::StringOutputStream raw(&payload);
    google::protobuf::io::CodedOutputStream coded(&raw);
    coded.SetSerializationDeterministic(true);
    PD_CHECK(m.SerializeToCodedStream(&coded), ErrorCode::kInternal, "{}: cannot serialize the model", path);
  }
  std::string out(kMagic, sizeof(kMagic));
  put<uint32_t>(out, kModelFormatVersion);
  put<uint64_t>(out, payload.size());
  out += payload;
  put<uint64_t>(out, fnv1a64(out.data(), out.size()));
  // The params first and the model (which vouches for them) last, each atomically, as one pair.
  write_pair_atomic(params_path, params, path, out);
}

ir::Program load_program(const std::string& path, std::map<std::string, std::string>* metadata) {
  proto::Model m = read_model(read_file_bytes(path), path);
  bool matched = params_match(path, m);
  if (!matched)
    if (auto p = pending_model(path, m)) m = *std::move(p), matched = true;
  check_op_versions(m, path);
  const std::string params_path = params_path_of(path, m);
  PD_CHECK(!m.params_file().empty() && std::filesystem::exists(params_path), ErrorCode::kIO,
           "{}: its params file {} is missing", path, params_path);
  PD_CHECK(matched, ErrorCode::kParse,
           "{}: the params file {} does not belong to this model (its checksum differs from the one the model "
           "records): the two files come from different saves; copy or save them together", path, params_path);
  return program_of(m, load_tensors(params_path).tensors, path, metadata);
}

ir::Program parse_program(const std::string& bytes, const std::map<std::string, Tensor>& params,
                          const std::string& path, std::map<std::string, std::string>* metadata) {
  const proto::Model m = read_model(bytes, path);
  check_op_versions(m, path);
  return program_of(m, params, path, metadata);
}

}  // namespace pd::io
