// Two files that are valid only together (a .pdmodel and the .pdiparams it names by checksum), written so
// that a failed or killed save never leaves a mixed pair where a good one was:
//
//   pd::io::write_pair_atomic("m.pdiparams", params_bytes, "m.pdmodel", model_bytes);
//
// Both are written and synced beside their targets first. `second` (the file that vouches for `first`)
// waits at pending_path(second) while `first` is renamed into place, then is renamed itself. A save cut
// between the two renames leaves the new `first`, the old `second` and the new pending file: a reader
// that finds `second` not matching `first` takes the pending file when it matches (load_program does).
// A failing rename puts the old `first` back, so an error leaves the old pair as it was.
#pragma once
#include <string>

namespace pd::io {

void write_pair_atomic(const std::string& first_path, const std::string& first_bytes, const std::string& second_path,
                       const std::string& second_bytes);

// "m.pdmodel" -> "m.pdmodel.pending".
std::string pending_path(const std::string& second_path);

// Tests kill the process at the named step of write_pair_atomic when PD_CRASH_AT names it (a failpoint):
// "staged" (both written beside their targets), "first-renamed" (between the two renames), "done".
void crash_point(const char* name);

}  // namespace pd::io
