// Cuts a watch response body into its JSON values. The API server writes one JSON object per
// watch event, each followed by a newline, in chunks that split objects anywhere; this decoder
// does not rely on the newlines (it tracks braces and strings), so any framing of concatenated
// JSON values works.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include "common/status.h"

namespace flexcsi::kube {

class WatchDecoder {
 public:
  // One event object larger than this is refused: the stream is broken or hostile.
  static constexpr size_t kMaxEventBytes = 64 << 20;

  // Called with the text of each complete top-level JSON value; returning false stops.
  using ValueHandler = std::function<bool(const std::string& json_text)>;

  // Feeds received bytes. Returns OK, kCancelled when the handler stopped, or kDataLoss when
  // the stream is not a sequence of JSON objects.
  Status Feed(const char* data, size_t size, const ValueHandler& on_value);

  // True when bytes of an unfinished value are buffered (a stream that ends now was cut).
  bool HasPartialValue() const { return !current_.empty(); }

 private:
  std::string current_;
  int depth_ = 0;
  bool in_string_ = false;
  bool escaped_ = false;
};

}  // namespace flexcsi::kube
