#include "pd/core/error.h"

namespace pd {

const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return "invalid argument";
    case ErrorCode::kShape: return "shape error";
    case ErrorCode::kDType: return "dtype error";
    case ErrorCode::kOutOfRange: return "out of range";
    case ErrorCode::kNotImplemented: return "not implemented";
    case ErrorCode::kParse: return "parse error";
    case ErrorCode::kIO: return "I/O error";
    case ErrorCode::kInternal: return "internal error";
  }
  return "error";
}

}  // namespace pd
