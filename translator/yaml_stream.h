// Reads a YAML stream from an InputBuffer a document at a time, and the items of a List
// document one at a time, with common/yaml_json.h's reader (the project's one YAML reader) on
// each piece, so memory holds one document or one item, not the stream.
//
// Pieces are cut at lines: documents at "---" / "..." markers in the first column (which YAML
// forbids inside any scalar), items at the entries of a block sequence under a top-level
// "items:" key (kubectl's layout, "- " at one indentation). Anything a piece cannot be read
// alone for (an alias to an anchor in another item, a flow sequence) is a FailedPrecondition,
// and the caller reads the whole input instead. Error positions are those of the whole input.
#pragma once

#include "common/status.h"
#include "translator/input_buffer.h"
#include "translator/json_stream.h"

namespace flexcsi {
namespace translator {

// Hands every document (OnDocument) or streamed list (OnListBegin, OnItem..., OnListEnd) of
// the YAML stream in `input` to `handler`. Empty documents are skipped.
Status StreamYamlDocuments(InputBuffer& input, JsonStreamHandler& handler);

}  // namespace translator
}  // namespace flexcsi
