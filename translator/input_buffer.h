// A window over an input stream, read in blocks, for parsers that walk a document without
// holding all of it.
//
// Offsets are absolute: the number of input bytes before a position. The window holds the
// input from begin() to end(); Fill() reads more, and may first drop what Release() allowed
// (moving the window: call window() again after Fill). Retaining keeps everything from the
// first byte, so that an error path can re-read the whole input. kPadding zero bytes always
// follow the window's data (simdjson reads up to 64 bytes past the end of what it parses).
#pragma once

#include <cstddef>
#include <cstdint>
#include <istream>
#include <memory>

namespace flexcsi {
namespace translator {

class InputBuffer {
 public:
  static constexpr size_t kPadding = 64;

  // Reads `in`, which must outlive the buffer.
  explicit InputBuffer(std::istream& in);

  const char* window() const { return data_.get(); }
  uint64_t begin() const { return dropped_; }
  uint64_t end() const { return dropped_ + size_; }
  size_t size() const { return size_; }
  bool eof() const { return eof_; }  // the stream has ended (all of it is in the window)

  // Reads until end() >= want or the input ends. Returns false if nothing more came.
  bool Fill(uint64_t want);
  // Bytes before `offset` are no longer needed; the next Fill may drop them (unless retaining).
  void Release(uint64_t offset);
  // While retaining nothing is dropped: begin() stays 0.
  void SetRetain(bool retain) { retain_ = retain; }

  // 1-based line, and bytes before `offset` on its line (nlohmann's column count).
  void Position(uint64_t offset, uint64_t* line, uint64_t* column) const;

  // The rest of the input stream, after the window (for error paths).
  std::istream& stream() { return in_; }

 private:
  void Compact();

  std::istream& in_;
  std::unique_ptr<char[]> data_;
  size_t size_ = 0, capacity_ = 0;
  bool eof_ = false, retain_ = false;
  uint64_t dropped_ = 0;             // input bytes before the window
  uint64_t released_ = 0;            // Release()d offset
  uint64_t dropped_lines_ = 0;       // newlines in the dropped bytes
  uint64_t dropped_line_bytes_ = 0;  // dropped bytes after the last dropped newline
};

}  // namespace translator
}  // namespace flexcsi
