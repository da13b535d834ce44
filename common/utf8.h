// UTF-8 validity, as the JSON and YAML writers need it: text that is not UTF-8 is written with
// U+FFFD in place of its bad bytes, and only valid text may be written as it is.
#pragma once

#include <string_view>

namespace flexcsi {

// Well-formed UTF-8 as nlohmann's decoder (and libyaml's reader) accepts it: shortest forms, no
// surrogates, at most U+10FFFF.
bool IsValidUtf8(std::string_view s);

}  // namespace flexcsi
