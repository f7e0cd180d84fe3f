// Parser of the fused_elementwise expression language (recursive descent over one line of text).
#include "pd/kernels/elementwise_expr.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cstdlib>

#include "pd/core/error.h"

namespace pd::ewise {
namespace {

const std::vector<FnInfo>& table() {
  static const std::vector<FnInfo> fns = [] {
    std::vector<FnInfo> out;
    for (const EwiseFnInfo& f : kEwiseFns) out.push_back({f.name, f.tensors, {f.consts, f.consts + f.num_consts}});
    return out;
  }();
  return fns;
}

class Parser {
 public:
  Parser(const char* op, const std::string& text, int num_inputs) : op_(op), text_(text), used_(num_inputs, false) {
    program_.num_inputs = num_inputs;
  }

  Program run() {
    skip_space();
    PD_CHECK(peek_identifier() != 'x' || !is_input_ref(), ErrorCode::kInvalidArgument,
             "{}: argument 'expr' must apply at least one op, but received '{}'", op_, text_);
    operand();
    skip_space();
    if (pos_ != text_.size()) fail("the end of the expression");
    for (size_t i = 0; i < used_.size(); ++i)
      PD_CHECK(used_[i], ErrorCode::kInvalidArgument, "{}: argument 'expr' does not use input x{} (of {}): '{}'", op_, i,
               used_.size(), text_);
    return std::move(program_);
  }

 private:
  [[noreturn]] void fail(const std::string& expected) const {
    raise(ErrorCode::kInvalidArgument, "{}: argument 'expr' at column {}: expected {}, but found '{}' in '{}'", op_, pos_ + 1,
          expected, pos_ < text_.size() ? text_.substr(pos_, 12) : std::string("end of text"), text_);
  }
  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  char peek_identifier() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  bool is_input_ref() const {
    size_t p = pos_ + 1;
    if (p >= text_.size() || !std::isdigit(static_cast<unsigned char>(text_[p]))) return false;
    while (p < text_.size() && std::isdigit(static_cast<unsigned char>(text_[p]))) ++p;
    return p >= text_.size() || !(std::isalnum(static_cast<unsigned char>(text_[p])) || text_[p] == '_');
  }
  void expect(char c) {
    skip_space();
    if (pos_ >= text_.size() || text_[pos_] != c) fail(fmt::format("'{}'", c));
    ++pos_;
  }

  // An input xN or a call; returns its register.
  int operand() {
    skip_space();
    const size_t start = pos_;
    while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) ++pos_;
    const std::string name = text_.substr(start, pos_ - start);
    if (name.empty()) fail("an input (x0, x1, ...) or an op call");
    if (name[0] == 'x' && name.size() > 1 && name.find_first_not_of("0123456789", 1) == std::string::npos) {
      const int index = std::atoi(name.c_str() + 1);
      if (index >= program_.num_inputs) {
        pos_ = start;
        fail(fmt::format("an input below x{} (the op has {} inputs)", program_.num_inputs, program_.num_inputs));
      }
      used_[static_cast<size_t>(index)] = true;
      return index;
    }
    Fn fn;
    if (!find_fn(name, &fn)) {
      pos_ = start;
      fail("an elementwise op (add sub mul div pow neg exp log sqrt rsqrt abs sign erf tanh sigmoid relu gelu silu "
           "softsign leaky_relu softplus clip) or an input x0, x1, ...");
    }
    const FnInfo& f = info(fn);
    Step step{fn, {}, {}};
    expect('(');
    for (int i = 0; i < f.tensors; ++i) {
      if (i) expect(',');
      step.args.push_back(operand());
    }
    for (const char* c : f.consts) {
      (void)c;
      expect(',');
      step.consts.push_back(number());
    }
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == ',')
      fail(fmt::format("')' ({} takes {} operand(s){})", f.name, f.tensors, f.consts.empty() ? "" : " and constants"));
    expect(')');
    program_.steps.push_back(std::move(step));
    return program_.num_registers() - 1;
  }

  double number() {
    skip_space();
    const char* first = text_.data() + pos_;
    char* end = nullptr;
    const double v = std::strtod(first, &end);
    if (end == first) fail("a number");
    pos_ += static_cast<size_t>(end - first);
    return v;
  }

  const char* op_;
  const std::string& text_;
  size_t pos_ = 0;
  std::vector<bool> used_;
  Program program_;
};

}  // namespace

const FnInfo& info(Fn fn) { return table()[static_cast<size_t>(fn)]; }

bool find_fn(const std::string& name, Fn* fn) {
  const auto& fns = table();
  for (size_t i = 0; i < fns.size(); ++i)
    if (name == fns[i].name) {
      *fn = static_cast<Fn>(i);
      return true;
    }
  return false;
}

Program parse(const char* op, const std::string& text, int num_inputs) {
  PD_CHECK(num_inputs >= 1, ErrorCode::kInvalidArgument, "{}: argument 'xs' must hold at least one tensor", op);
  Program prog = Parser(op, text, num_inputs).run();
  for (const Step& s : prog.steps)
    PD_CHECK(s.fn != Fn::clip || s.consts[0] <= s.consts[1], ErrorCode::kInvalidArgument,
             "{}: clip's min must be <= max, but received min {} and max {}", op, s.consts[0], s.consts[1]);
  return prog;
}

std::string call(Fn fn, const std::vector<std::string>& operands, const std::vector<double>& consts) {
  std::string s = std::string(info(fn).name) + "(";
  for (size_t i = 0; i < operands.size(); ++i) s += (i ? ", " : "") + operands[i];
  // fmt's shortest form reads back as the same double.
  for (double c : consts) s += fmt::format(", {}", c);
  return s + ")";
}

std::string input(int index) { return fmt::format("x{}", index); }

}  // namespace pd::ewise
