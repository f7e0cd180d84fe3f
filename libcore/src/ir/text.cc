// print(): the text form of a Program (see program.h for an example; parse() is in text_parse.cc). Attribute values are typed by the op
// schema when parsed, so the text needs no type tags; floats always print with a '.' or exponent and
// in the shortest form that reads back to the same double, so print -> parse -> print is exact.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cctype>
#include <cmath>
#include <sstream>

#include "pd/ir/program.h"
#include "pd/ops/op_schema.h"

namespace pd::ir {
namespace {

bool plain_name(const std::string& n) {
  if (n.empty()) return false;
  for (char c : n)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' && c != '-' && c != '/') return false;
  return true;
}

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') out += "\\n";
    else out += c;
  }
  return out + "\"";
}

std::string ref(const Program& p, ValueId v) {
  const std::string& n = p.value(v).name;
  return "%" + (plain_name(n) ? n : quoted(n));
}

std::string real(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  std::string s = fmt::format("{}", d);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string attr_text(const AttrValue& v) {
  if (const auto* d = std::get_if<double>(&v)) return real(*d);
  if (const auto* l = std::get_if<std::vector<double>>(&v)) {
    std::vector<std::string> parts;
    for (double d : *l) parts.push_back(real(d));
    return fmt::format("[{}]", fmt::join(parts, ", "));
  }
  if (const auto* s = std::get_if<std::string>(&v)) return quoted(*s);
  return attr_str(v);
}

}  // namespace

std::string print(const Program& p) {
  // A lowered program names its target: "program for cpu-avx2 {".
  std::string out = p.target().empty() ? "program {\n" : fmt::format("program for {} {{\n", p.target());
  for (ValueId v : p.inputs()) out += fmt::format("  input {}: {}\n", ref(p, v), p.value(v).type.str());
  for (ValueId v = 0; v < static_cast<ValueId>(p.values().size()); ++v)
    if (p.value(v).kind == ValueKind::Param) out += fmt::format("  param {}: {}\n", ref(p, v), p.value(v).type.str());
  for (const Operation& op : p.ops()) {
    std::vector<std::string> results, args, attrs;
    for (ValueId r : op.results) results.push_back(fmt::format("{}: {}", ref(p, r), p.value(r).type.str()));
    const OpSchema& s = op_schema(op.type);
    size_t slot = 0;
    for (const ArgSchema& a : s.args) {
      if (!a.is_tensor() || slot >= op.inputs.size()) continue;
      const auto& vs = op.inputs[slot++];
      std::vector<std::string> refs;
      for (ValueId v : vs) refs.push_back(ref(p, v));
      if (a.type == "Tensor[]") args.push_back(fmt::format("[{}]", fmt::join(refs, ", ")));
      else if (vs.empty()) args.push_back("none");
      else args.push_back(refs[0]);
    }
    for (const auto& [name, v] : op.attrs) attrs.push_back(fmt::format("{}: {}", name, attr_text(v)));
    out += fmt::format("  {} = {}({})", fmt::join(results, ", "), op.type, fmt::join(args, ", "));
    out += attrs.empty() ? "\n" : fmt::format(" {{{}}}\n", fmt::join(attrs, ", "));
  }
  for (size_t i = 0; i < p.outputs().size(); ++i)
    out += fmt::format("  output {} as {}\n", ref(p, p.outputs()[i]), quoted(p.output_names()[i]));
  return out + "}\n";
}

}  // namespace pd::ir
