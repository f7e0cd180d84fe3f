// Place: where a tensor's storage lives.
#pragma once
#include <string>

namespace pd {

enum class DeviceType : uint8_t { cpu, cuda };

struct Place {
  DeviceType type = DeviceType::cpu;
  int index = 0;
  static Place cpu() { return {DeviceType::cpu, 0}; }
  static Place cuda(int i) { return {DeviceType::cuda, i}; }
  bool is_cpu() const { return type == DeviceType::cpu; }
  bool operator==(const Place&) const = default;
  std::string str() const { return is_cpu() ? "cpu" : "cuda:" + std::to_string(index); }
};

}  // namespace pd
