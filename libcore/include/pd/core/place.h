// Place: where a tensor's storage lives.
#pragma once
#include <cstdint>
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

// Where ops with no tensor input (zeros, full, arange, uniform, ...) create their output: the CPU
// unless a guard on this thread says otherwise (paddle.set_device / `with torch.device(...)`).
Place default_place();

// Sets this thread's default place for its lifetime and restores the previous one after.
class DefaultPlaceGuard {
 public:
  explicit DefaultPlaceGuard(Place place);
  ~DefaultPlaceGuard();
  DefaultPlaceGuard(const DefaultPlaceGuard&) = delete;
  DefaultPlaceGuard& operator=(const DefaultPlaceGuard&) = delete;

 private:
  Place previous_;
};

}  // namespace pd
