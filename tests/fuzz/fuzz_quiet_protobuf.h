// libprotobuf logs every invalid UTF-8 string it parses; the reader's pd::Error already says what was
// wrong, so the targets that parse protobuf turn that log off (it would flood CI's output).
#pragma once
#include <google/protobuf/stubs/logging.h>

namespace pd_fuzz {

inline const bool kQuietProtobuf = (google::protobuf::SetLogHandler(nullptr), true);

}  // namespace pd_fuzz
