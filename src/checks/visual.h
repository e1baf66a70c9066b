// The visual check: a PNG (fetched from a URL, or written by a screenshot
// command at {out}) compared with the approved baseline
// .phoenix/baselines/<id>.png, recorded on first sight (see
// missing_recording in check.h). A red result carries expected.png,
// actual.png and diff.png as artifacts.
#pragma once

#include <string>

#include "checks/check.h"

namespace phoenix::checks {

std::string baseline_path(const CheckSpec& spec);  // ".phoenix/baselines/<id>.png"

SenseResult sense_visual(const CheckSpec& spec, const std::string& root);

}  // namespace phoenix::checks
