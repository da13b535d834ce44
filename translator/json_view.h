// A read-only view of a JSON value held by nlohmann::json or by a simdjson DOM document, so that
// the translator reads a PV the same way whichever parser produced it (translator.h).
//
// The view answers as nlohmann::json would for the same text: object members in key order, a
// later duplicate key replacing an earlier one, non-negative integers unsigned. That keeps a
// translation from either source byte-for-byte the same. One exception that changes nothing a
// caller sees: simdjson reads `-0` as the integer 0, which this view calls unsigned where
// nlohmann keeps it signed; the value, its text and every translation are the same. It exists for
// speed: a PV parsed by simdjson is one compact tape instead of ~75 separately allocated nodes, and
// translating it needs no copy of the untouched parts.
//
// A view does not own its value: the nlohmann::json or simdjson document must outlive it. A
// default-constructed view is "absent" (no value at all); is_null() is a present JSON null.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include <nlohmann/json.hpp>

namespace simdjson::dom {
class element;
}  // namespace simdjson::dom

namespace flexcsi {
namespace translator {

class JsonView {
 public:
  enum class Type : uint8_t {
    kAbsent,
    kNull,
    kObject,
    kArray,
    kString,
    kBoolean,
    kInteger,   // negative integers (nlohmann's number_integer)
    kUnsigned,  // non-negative integers (nlohmann's number_unsigned)
    kFloat,
    kOther,  // nlohmann's binary or discarded values: never produced by a JSON parser
  };

  JsonView() = default;
  // Implicit: every translator helper taking a view also takes a held nlohmann::json.
  JsonView(const nlohmann::json& value);  // NOLINT(google-explicit-constructor)
  // REQUIRES: the element's document outlives the view and everything read from it.
  static JsonView Of(const simdjson::dom::element& element);

  Type type() const { return type_; }
  bool present() const { return type_ != Type::kAbsent; }
  // Present and not null: what the translator's FindField calls "set".
  explicit operator bool() const { return present() && !is_null(); }
  bool is_null() const { return type() == Type::kNull; }
  bool is_object() const { return type() == Type::kObject; }
  bool is_array() const { return type() == Type::kArray; }
  bool is_string() const { return type() == Type::kString; }
  bool is_boolean() const { return type() == Type::kBoolean; }
  bool is_number_unsigned() const { return type() == Type::kUnsigned; }
  bool is_number_integer() const {
    Type t = type();
    return t == Type::kInteger || t == Type::kUnsigned;
  }

  // REQUIRES: the matching type.
  std::string_view string_value() const;
  bool bool_value() const;
  int64_t int_value() const;
  uint64_t unsigned_value() const;
  double double_value() const;

  // The member `key` of an object (the last one if the text repeats it); absent when this is
  // not an object or has no such member.
  JsonView Find(std::string_view key) const;
  // Elements of an array or distinct members of an object; 0 for anything else.
  size_t size() const;
  bool empty() const { return size() == 0; }

  // Calls fn(JsonView) for each element of an array, in order; nothing for other types.
  template <typename Fn>
  void ForEachElement(Fn&& fn) const {
    using F = std::remove_reference_t<Fn>;
    ForEachElementImpl([](void* f, JsonView v) { (*static_cast<F*>(f))(v); },
                       const_cast<void*>(static_cast<const void*>(&fn)));
  }
  // Calls fn(std::string_view key, JsonView value) for each distinct member of an object, in
  // key order (std::map's, as nlohmann holds them); nothing for other types.
  template <typename Fn>
  void ForEachMember(Fn&& fn) const {
    using F = std::remove_reference_t<Fn>;
    ForEachMemberImpl([](void* f, std::string_view k, JsonView v) { (*static_cast<F*>(f))(k, v); },
                      const_cast<void*>(static_cast<const void*>(&fn)));
  }

  // Calls fn(key, value) for each member of an object as the text has them: in its order, with
  // repeated keys repeated (the last is the one that counts). Cheaper than ForEachMember.
  template <typename Fn>
  void ForEachMemberAsWritten(Fn&& fn) const {
    using F = std::remove_reference_t<Fn>;
    ForEachMemberAsWrittenImpl(
        [](void* f, std::string_view k, JsonView v) { (*static_cast<F*>(f))(k, v); },
        const_cast<void*>(static_cast<const void*>(&fn)));
  }

  // A deep copy, exactly what nlohmann::json::parse gives for the same text. Absent -> null.
  nlohmann::json ToJson() const;

 private:
  enum class Backend : uint8_t { kNone, kNlohmann, kSimdjson };

  void ForEachElementImpl(void (*call)(void*, JsonView), void* fn) const;
  void ForEachMemberImpl(void (*call)(void*, std::string_view, JsonView), void* fn) const;
  void ForEachMemberAsWrittenImpl(void (*call)(void*, std::string_view, JsonView), void* fn) const;

  static Type TypeOf(const nlohmann::json& value);

  Backend backend_ = Backend::kNone;
  Type type_ = Type::kAbsent;  // read once: the translator asks often
  const nlohmann::json* json_ = nullptr;
  // A simdjson::dom::element (a document pointer and a tape index), kept opaque so that this
  // header does not pull in simdjson; json_view.cc checks the size.
  alignas(8) unsigned char element_[16] = {};
};

}  // namespace translator
}  // namespace flexcsi
