// Reads one JSON document from an InputBuffer without holding all of it: the elements of a
// top-level array, and of the "items" array of a top-level object (a List), are parsed and
// handed over one at a time, so memory holds one element plus the read buffer.
//
// Values are parsed by simdjson and converted to nlohmann::json (or, for streamed elements, read
// through a view) with the values nlohmann's own parser gives (non-negative integers unsigned,
// later duplicate keys win); the rare text simdjson refuses but nlohmann takes (integers beyond 64
// bits) is parsed by nlohmann. Syntax errors read as nlohmann's ("invalid JSON: parse error at line
// 1, column 13: ..."), and the depth limit is common/yaml_json.h's kMaxNestingDepth, counted from
// the top of the document.
#pragma once

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "translator/input_buffer.h"
#include "translator/json_view.h"

namespace flexcsi {
namespace translator {

class JsonStreamHandler {
 public:
  virtual ~JsonStreamHandler() = default;
  // A document that is not streamed: a top-level object without a streamed items array.
  virtual Status OnDocument(nlohmann::json doc) = 0;
  // A top-level array: OnArrayBegin, OnItem for each element, OnArrayEnd.
  virtual Status OnArrayBegin() = 0;
  virtual Status OnArrayEnd() = 0;
  // Whether to stream the "items" array of a top-level object whose keys before "items" are
  // `head`. If not, the array is parsed like any value and the object arrives in OnDocument.
  virtual bool ShouldStreamItems(const nlohmann::json& head) = 0;
  // A streamed list: OnListBegin(keys before "items"), OnItem..., OnListEnd(keys after it; a
  // repeated "items" key among them).
  virtual Status OnListBegin(nlohmann::json head) = 0;
  virtual Status OnListEnd(nlohmann::json tail) = 0;
  virtual Status OnItem(nlohmann::json item) = 0;
  // A streamed element that simdjson parsed, as a view valid only during the call: a handler
  // that reads views (json_view.h) needs no nlohmann tree of it. By default it is OnItem of
  // the value nlohmann would have parsed. Elements simdjson refuses come through OnItem.
  // REQUIRES: the handler calls no ParseJsonValue meanwhile (it reuses the parser's document).
  virtual Status OnItemView(JsonView item) { return OnItem(item.ToJson()); }
};

// Parses one JSON document (surrounding whitespace allowed, nothing after it) from `input`.
// A handler's error stops the parse and is returned as it is.
Status StreamJsonDocument(InputBuffer& input, JsonStreamHandler& handler);

// Parses one complete JSON value held in memory, exactly as nlohmann::json::parse would.
// REQUIRES: SIMDJSON_PADDING readable bytes after text + size.
StatusOr<nlohmann::json> ParseJsonValue(const char* text, size_t size);

}  // namespace translator
}  // namespace flexcsi
