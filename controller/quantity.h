// Kubernetes resource quantities as the controller needs them: storage sizes in bytes.
// "1Gi", "500M", "1.5Gi", "1e9", "1048576". Fractions round up to a whole byte, as
// resource.Quantity.Value() does, so a claim never gets less than it asked for.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"

namespace flexcsi::controller {

// INVALID_ARGUMENT for anything that is not a non-negative quantity; OUT_OF_RANGE beyond int64.
StatusOr<int64_t> ParseStorageQuantity(const std::string& text);

// The canonical text Kubernetes would print: "1Gi" when a whole number of a binary unit,
// otherwise the plain number of bytes.
std::string FormatStorageQuantity(int64_t bytes);

}  // namespace flexcsi::controller
