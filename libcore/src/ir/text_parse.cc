// parse(): reads the text form print() writes (text.cc, program.h). Attribute values are typed by
// the op schema, so the text needs no type tags; errors name the line.
#include <fmt/format.h>

#include <cctype>

#include "pd/ir/program.h"
#include "pd/ops/op_schema.h"

namespace pd::ir {
namespace {

// A hand-written scanner over the whole text; errors name the line.
class Parser {
 public:
  explicit Parser(const std::string& text) : s_(text) {}

  [[noreturn]] void fail(const std::string& msg) const {
    int line = 1;
    for (size_t i = 0; i < pos_ && i < s_.size(); ++i) line += s_[i] == '\n';
    throw Error(ErrorCode::kParse, fmt::format("program text, line {}: {}", line, msg));
  }
  void skip() {
    while (pos_ < s_.size()) {
      if (s_[pos_] == '#') {
        while (pos_ < s_.size() && s_[pos_] != '\n') ++pos_;
      } else if (std::isspace(static_cast<unsigned char>(s_[pos_]))) {
        ++pos_;
      } else {
        break;
      }
    }
  }
  bool peek(char c) {
    skip();
    return pos_ < s_.size() && s_[pos_] == c;
  }
  bool accept(char c) {
    if (!peek(c)) return false;
    ++pos_;
    return true;
  }
  void expect(char c) {
    if (!accept(c)) fail(fmt::format("expected '{}' but found {}", c, found()));
  }
  std::string found() {
    skip();
    if (pos_ >= s_.size()) return "the end of the text";
    return fmt::format("'{}'", s_.substr(pos_, std::min<size_t>(12, s_.find('\n', pos_) - pos_)));
  }
  bool at_end() {
    skip();
    return pos_ >= s_.size();
  }
  // A bare word: letters, digits and _ . - / + (numbers and identifiers alike).
  std::string word() {
    skip();
    size_t b = pos_;
    while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || std::string("_.-/+").find(s_[pos_]) != std::string::npos))
      ++pos_;
    if (b == pos_) fail(fmt::format("expected a name or number but found {}", found()));
    return s_.substr(b, pos_ - b);
  }
  std::string string_lit() {
    expect('"');
    std::string out;
    while (pos_ < s_.size() && s_[pos_] != '"') {
      if (s_[pos_] == '\\' && pos_ + 1 < s_.size()) {
        ++pos_;
        out += s_[pos_] == 'n' ? '\n' : s_[pos_];
      } else {
        out += s_[pos_];
      }
      ++pos_;
    }
    if (pos_ >= s_.size()) fail("unterminated string");
    ++pos_;
    return out;
  }
  std::string value_name() {
    expect('%');
    return peek('"') ? string_lit() : word();
  }
  int64_t integer() {
    std::string w = word();
    try {
      size_t n = 0;
      int64_t v = std::stoll(w, &n);
      if (n == w.size()) return v;
    } catch (...) {
    }
    fail(fmt::format("expected an integer but found '{}'", w));
  }
  double number() {
    std::string w = word();
    try {
      size_t n = 0;
      double v = std::stod(w, &n);
      if (n == w.size()) return v;
    } catch (...) {
    }
    fail(fmt::format("expected a number but found '{}'", w));
  }
  ValueType type() {
    ValueType t;
    std::string d = word();
    try {
      t.dtype = dtype_from_name(d);
    } catch (const Error& e) {
      fail(e.what());
    }
    expect('[');
    while (!accept(']')) {
      if (!t.shape.empty()) expect(',');
      t.shape.push_back(integer());
    }
    return t;
  }
  template <typename F>
  void list(F&& item) {
    expect('[');
    bool first = true;
    while (!accept(']')) {
      if (!first) expect(',');
      first = false;
      item();
    }
  }
  AttrValue attr(const std::string& type) {
    if (type == "int") return integer();
    if (type == "float") return number();
    if (type == "str") return string_lit();
    if (type == "bool") {
      std::string w = word();
      if (w != "true" && w != "false") fail(fmt::format("expected true or false but found '{}'", w));
      return w == "true";
    }
    if (type == "dtype") {
      std::string w = word();
      try {
        return dtype_from_name(w);
      } catch (const Error& e) {
        fail(e.what());
      }
    }
    if (type == "int[]") {
      std::vector<int64_t> v;
      list([&] { v.push_back(integer()); });
      return v;
    }
    if (type == "float[]") {
      std::vector<double> v;
      list([&] { v.push_back(number()); });
      return v;
    }
    fail(fmt::format("attribute type '{}' has no text form", type));
  }

 private:
  const std::string& s_;
  size_t pos_ = 0;
};

ValueId lookup(Parser& ps, const Program& p, const std::string& name) {
  ValueId v = p.find(name);
  if (v == kNoValue) ps.fail(fmt::format("%{} is not defined above this line", name));
  return v;
}

void parse_op(Parser& ps, Program& p) {
  std::vector<std::pair<std::string, ValueType>> results;
  do {
    std::string n = ps.value_name();
    ps.expect(':');
    results.emplace_back(n, ps.type());
  } while (ps.accept(','));
  ps.expect('=');
  std::string type = ps.word();
  const OpSchema* s = nullptr;
  try {
    s = &op_schema(type);
  } catch (const Error& e) {
    ps.fail(e.what());
  }
  std::vector<std::vector<ValueId>> inputs;
  ps.expect('(');
  while (!ps.accept(')')) {
    if (!inputs.empty()) ps.expect(',');
    inputs.emplace_back();
    if (ps.peek('[')) ps.list([&] { inputs.back().push_back(lookup(ps, p, ps.value_name())); });
    else if (ps.peek('%')) inputs.back().push_back(lookup(ps, p, ps.value_name()));
    else if (std::string w = ps.word(); w != "none") ps.fail(fmt::format("expected %value, [list] or none but found '{}'", w));
  }
  AttrMap attrs;
  if (ps.accept('{')) {
    while (!ps.accept('}')) {
      if (!attrs.empty()) ps.expect(',');
      std::string name = ps.word();
      ps.expect(':');
      const ArgSchema* arg = nullptr;
      for (const ArgSchema& a : s->args)
        if (a.name == name && !a.is_tensor()) arg = &a;
      if (!arg) ps.fail(fmt::format("{} has no attribute '{}'", type, name));
      attrs[name] = ps.attr(arg->type);
    }
  }
  std::vector<ValueType> types;
  for (const auto& r : results) types.push_back(r.second);
  std::vector<ValueId> ids = p.add_op_typed(type, inputs, attrs, types);
  // Two steps, so that an automatic name of one result never blocks the text's name of another.
  for (size_t i = 0; i < ids.size(); ++i) p.rename(ids[i], p.unique_name(fmt::format("\x01{}", i)));
  for (size_t i = 0; i < ids.size(); ++i) {
    if (p.find(results[i].first) != kNoValue) ps.fail(fmt::format("%{} is defined twice", results[i].first));
    p.rename(ids[i], results[i].first);
  }
}

}  // namespace

Program parse(const std::string& text, const std::map<std::string, Tensor>& params) {
  Parser ps(text);
  Program p;
  if (ps.word() != "program") ps.fail("expected 'program {'");
  if (!ps.peek('{')) {
    if (ps.word() != "for") ps.fail("expected 'program {' or 'program for TARGET {'");
    p.set_target(ps.word());
  }
  ps.expect('{');
  while (!ps.accept('}')) {
    if (ps.peek('%')) {
      parse_op(ps, p);
      continue;
    }
    std::string kw = ps.word();
    if (kw == "input" || kw == "param") {
      std::string name = ps.value_name();
      ps.expect(':');
      ValueType t = ps.type();
      if (p.find(name) != kNoValue) ps.fail(fmt::format("%{} is defined twice", name));
      if (kw == "input") {
        p.add_input(name, t);
      } else {
        ValueId v = p.declare_param(name, t);
        if (auto it = params.find(name); it != params.end()) {
          if (ValueType{it->second.dtype(), it->second.shape()} != t)
            ps.fail(fmt::format("param %{} is declared {} but its tensor is {}", name, t.str(),
                                ValueType{it->second.dtype(), it->second.shape()}.str()));
          p.set_param(v, it->second);
        }
      }
    } else if (kw == "output") {
      ValueId v = lookup(ps, p, ps.value_name());
      if (ps.word() != "as") ps.fail("expected 'as \"NAME\"' after the output value");
      std::string name = ps.string_lit();
      try {
        p.mark_output(v, name);
      } catch (const Error& e) {
        ps.fail(e.what());
      }
    } else {
      ps.fail(fmt::format("expected input, param, output or %result but found '{}'", kw));
    }
  }
  if (!ps.at_end()) ps.fail(fmt::format("unexpected text after the closing brace: {}", ps.found()));
  return p;
}

}  // namespace pd::ir
