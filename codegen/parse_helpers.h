// Shared by the files of the ops.yaml parser (parse_ops.cc, parse_args.cc, parse_tests.cc): errors that
// point at a node of the file being parsed, and the readers of single values.
#pragma once

#include <yaml-cpp/yaml.h>

#include <set>
#include <string>
#include <vector>

#include "op_model.h"

namespace pd::codegen {

// The file name errors carry; parse_ops sets it for the duration of one parse.
const std::string& parse_file();
void set_parse_file(const std::string& file);

[[noreturn]] void fail(const YAML::Mark& m, const std::string& msg);
[[noreturn]] void fail(const YAML::Node& n, const std::string& msg);
Pos pos_of(const YAML::Node& n);
// The node's text; a list or a map is an error naming `what`.
std::string scalar(const YAML::Node& n, const std::string& what);
std::string trim(std::string s);

// The dtype names ops.yaml accepts.
extern const std::set<std::string> kDTypes;
// A kernel's dtype list with the groups float / int / all expanded.
std::vector<std::string> expand_dtypes(const YAML::Node& list);

// args: NAME: TYPE [= DEFAULT]; outputs: NAME: {shape, dtype, type, ...}; tests: {ref, samples, bad, ...}.
ArgDef parse_arg(const std::string& name, const YAML::Node& node);
OutputDef parse_output(const std::string& name, const YAML::Node& node);
// The YAML text of a default or sample attribute value as a C++ expression of the attribute's type.
std::string default_to_cpp(ArgKind kind, const std::string& text, const YAML::Node& where);
void parse_tests(OpDef& op, const YAML::Node& node);
// One test sample (or bench problem): inputs by name to shapes, optional dtypes, ranges and attrs.
Sample parse_sample(const OpDef& op, const YAML::Node& node, bool bad);

}  // namespace pd::codegen
