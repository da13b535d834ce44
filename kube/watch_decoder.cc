#include "kube/watch_decoder.h"

namespace flexcsi::kube {

Status WatchDecoder::Feed(const char* data, size_t size, const ValueHandler& on_value) {
  for (size_t i = 0; i < size; ++i) {
    char c = data[i];
    if (depth_ == 0) {
      // Between values only whitespace may appear.
      if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
      if (c != '{') {
        return Status(Code::kDataLoss,
                      std::string("watch stream: expected '{' between events, got '") + c + "'");
      }
    }
    current_ += c;
    if (current_.size() > kMaxEventBytes) {
      return Status(Code::kDataLoss,
                    "watch stream: one event exceeds " + std::to_string(kMaxEventBytes) + " bytes");
    }
    if (in_string_) {
      if (escaped_) {
        escaped_ = false;
      } else if (c == '\\') {
        escaped_ = true;
      } else if (c == '"') {
        in_string_ = false;
      }
      continue;
    }
    if (c == '"') {
      in_string_ = true;
    } else if (c == '{' || c == '[') {
      ++depth_;
    } else if (c == '}' || c == ']') {
      if (--depth_ == 0) {
        std::string value;
        value.swap(current_);
        if (!on_value(value)) return Status(Code::kCancelled, "watch stopped by its handler");
      }
    }
  }
  return Status::Ok();
}

}  // namespace flexcsi::kube
