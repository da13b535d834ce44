#include "translator/input_buffer.h"

#include <algorithm>
#include <cstring>

namespace flexcsi {
namespace translator {
namespace {

// Small reads keep the window small and in cache; a list item rarely spans two.
constexpr size_t kBlockSize = 1 << 20;

// Newlines in [p, p + n), eight bytes at a time.
uint64_t CountNewlines(const char* p, size_t n) {
  constexpr uint64_t kOnes = 0x0101010101010101ULL;
  constexpr uint64_t kLow7 = 0x7F7F7F7F7F7F7F7FULL;
  uint64_t count = 0;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t word;
    std::memcpy(&word, p + i, 8);
    const uint64_t x = word ^ (kOnes * '\n');  // zero bytes where the newlines are
    const uint64_t nonzero = ((x & kLow7) + kLow7) | x;
    count += static_cast<uint64_t>(__builtin_popcountll(~nonzero & ~kLow7));
  }
  for (; i < n; ++i) count += p[i] == '\n';
  return count;
}

}  // namespace

InputBuffer::InputBuffer(std::istream& in) : in_(in) {}

void InputBuffer::Release(uint64_t offset) { released_ = std::max(released_, offset); }

void InputBuffer::Compact() {
  if (retain_ || released_ <= dropped_) return;
  const size_t drop = static_cast<size_t>(std::min<uint64_t>(released_ - dropped_, size_));
  const char* begin = data_.get();
  const void* last = memrchr(begin, '\n', drop);
  if (last != nullptr) {
    dropped_lines_ += CountNewlines(begin, drop);
    dropped_line_bytes_ = static_cast<uint64_t>(begin + drop - static_cast<const char*>(last) - 1);
  } else {
    dropped_line_bytes_ += drop;
  }
  std::memmove(data_.get(), begin + drop, size_ - drop);
  size_ -= drop;
  dropped_ += drop;
}

bool InputBuffer::Fill(uint64_t want) {
  bool got = false;
  while (!eof_ && end() < want) {
    if (capacity_ - size_ < kBlockSize) {
      Compact();  // usually leaves only a part of one item
      if (capacity_ - size_ < kBlockSize) {
        size_t capacity = std::max(2 * capacity_, size_ + 2 * kBlockSize);
        std::unique_ptr<char[]> bigger(new char[capacity + kPadding]);
        if (size_ > 0) std::memcpy(bigger.get(), data_.get(), size_);
        data_ = std::move(bigger);
        capacity_ = capacity;
      }
    }
    std::streamsize n =
        in_.rdbuf() == nullptr
            ? 0
            : in_.rdbuf()->sgetn(data_.get() + size_, static_cast<std::streamsize>(kBlockSize));
    if (n <= 0) {
      eof_ = true;
      break;
    }
    size_ += static_cast<size_t>(n);
    got = true;
  }
  if (data_ == nullptr) {
    data_.reset(new char[kPadding]);
    capacity_ = 0;
  }
  std::memset(data_.get() + size_, 0, kPadding);
  return got;
}

void InputBuffer::Position(uint64_t offset, uint64_t* line, uint64_t* column) const {
  uint64_t lines = dropped_lines_, line_bytes = dropped_line_bytes_;
  const char* p = data_.get();
  const uint64_t stop = std::min<uint64_t>(offset, end()) - dropped_;
  for (uint64_t i = 0; i < stop; ++i) {
    if (p[i] == '\n') {
      ++lines;
      line_bytes = 0;
    } else {
      ++line_bytes;
    }
  }
  *line = lines + 1;
  *column = line_bytes;
}

}  // namespace translator
}  // namespace flexcsi
