// What `flexcsi translate` writes on stdout, produced piece by piece so that a list of any
// length is written as it is translated, in exactly the bytes the whole-document command wrote:
//
//  - one object: the object (JSON), or one YAML document;
//  - several objects: a List wrapping them (JSON), or a "---"-separated YAML stream;
//  - a translated list or array: its members in key order with "items" in its place.
//
// Output is held in memory until it (or the input held for error messages) passes a limit,
// so that an error found early leaves stdout empty, as it did when everything was parsed
// first; after that it is written in large blocks. Error lines about single items are held
// and released with it. A second output after a list was streamed as the only one changes the
// list's shape (indentation, "---"); that is repaired while held and an error after.
#pragma once

#include <iosfwd>
#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "translator/json_view.h"
#include "translator/spec_changes.h"

namespace flexcsi {
namespace translator {

enum class OutputFormat { kJson, kJsonCompact, kYaml };

class TranslateOutput {
 public:
  // Held output and input beyond this stop being held.
  static constexpr size_t kHoldLimit = 4 << 20;

  TranslateOutput(std::ostream& out, std::ostream& err, OutputFormat format);

  // One object of the output.
  Status AddObject(nlohmann::json object);

  // A list written as it is translated: BeginList, AddItem for each item, EndList. `head` has
  // the list's members that sort before "items", `tail` those after it.
  Status BeginList(const nlohmann::json& head);
  Status EndList(const nlohmann::json& tail);
  // A top-level array: BeginArray, AddItem..., EndArray.
  Status BeginArray();
  Status EndArray();
  void AddItem(nlohmann::json item);
  // An item that is `pv` with `changes` applied to its spec (SpecChanges::ApplyTo), written
  // from the view without making that object where the format allows.
  void AddTranslatedPVItem(JsonView pv, const SpecChanges& changes);

  // An error line about one item, for stderr.
  void ItemError(const std::string& line);

  // Called between items: stops holding once the output or `input_held` bytes pass the limit.
  void MaybeRelease(size_t input_held);
  bool holding() const { return holding_; }
  // Forgets everything held (a fatal error while holding: stdout stays empty).
  void DropHeld();
  // More inputs follow the one being read: a list streamed now is most likely one output of
  // several, and is written as one (if it turns out to be the only one, Finish repairs that
  // while the output is held, and fails after).
  void set_more_inputs(bool more) { more_inputs_ = more; }
  // Completes the output and writes what is left.
  Status Finish();

 private:
  enum class Open { kNone, kList, kArray };

  // Called before each output: the first is not marked (it may be the only one), the second
  // turns the output into several.
  Status StartOutput();
  void AppendLevel0(const nlohmann::json& value);  // a whole output at its level
  void Indent(int level);
  void Drain(bool all);
  // Places a JSON item in the open list or array; write(style, level) appends its text.
  template <typename Write>
  void AddJsonItem(Write&& write);

  std::ostream& out_;
  std::ostream& err_;
  const OutputFormat format_;
  std::string buf_, err_buf_;
  bool holding_ = true;

  size_t outputs_ = 0;      // outputs started so far
  nlohmann::json pending_;  // the first output, when it is an object not yet written
  bool has_pending_ = false;
  bool first_streamed_alone_ =
      false;              // the first output is a streamed list, written as the only one
  bool several_ = false;  // the output wraps several (JSON List / "---" before each)
  bool more_inputs_ = false;
  bool several_early_ = false;  // several_ was assumed when the first output began
  Open open_ = Open::kNone;
  size_t open_items_ = 0;
  int level_ = 0;  // the nesting level of the open list or array
};

}  // namespace translator
}  // namespace flexcsi
