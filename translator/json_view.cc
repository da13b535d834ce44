#include "translator/json_view.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include <simdjson.h>

namespace flexcsi {
namespace translator {
namespace {

using Json = nlohmann::json;
using simdjson::dom::element;
using simdjson::dom::element_type;

static_assert(sizeof(element) <= 16 && alignof(element) <= 8, "JsonView::element_ is too small");
static_assert(std::is_trivially_copyable_v<element>, "JsonView copies elements as bytes");

struct Member {
  std::string_view key;
  element value;
};

// The members of a simdjson object as nlohmann holds them: sorted by key, the last of repeated
// keys kept. Calls fn(members, count). Objects of up to kInline members need no allocation.
template <typename Fn>
void WithSortedMembers(simdjson::dom::object object, Fn&& fn) {
  constexpr size_t kInline = 32;
  Member inline_members[kInline];
  std::vector<Member> heap;
  const size_t count = object.size();
  Member* members = inline_members;
  if (count > kInline) {
    heap.resize(count);
    members = heap.data();
  }
  size_t n = 0;
  bool sorted = true;  // strictly increasing: no sort and no duplicates to drop
  for (simdjson::dom::key_value_pair kv : object) {
    if (n > 0 && !(members[n - 1].key < kv.key)) sorted = false;
    members[n++] = Member{kv.key, kv.value};
  }
  if (!sorted) {
    std::stable_sort(members, members + n,
                     [](const Member& a, const Member& b) { return a.key < b.key; });
    size_t kept = 0;
    for (size_t i = 0; i < n; ++i) {
      // Of a run of equal keys, the last one (the text's last) wins.
      if (i + 1 < n && members[i + 1].key == members[i].key) continue;
      members[kept++] = members[i];
    }
    n = kept;
  }
  fn(static_cast<const Member*>(members), n);
}

element ElementOf(const unsigned char* bytes) {
  element e;
  std::memcpy(static_cast<void*>(&e), bytes, sizeof(e));
  return e;
}

Json ElementToJson(element e) {
  switch (e.type()) {
    case element_type::OBJECT: {
      Json object(Json::value_t::object);
      auto& members = object.get_ref<Json::object_t&>();
      for (simdjson::dom::key_value_pair kv : simdjson::dom::object(e)) {
        // Like nlohmann's parser, a later duplicate key replaces an earlier one.
        members.insert_or_assign(std::string(kv.key), ElementToJson(kv.value));
      }
      return object;
    }
    case element_type::ARRAY: {
      Json array(Json::value_t::array);
      auto& elements = array.get_ref<Json::array_t&>();
      for (element x : simdjson::dom::array(e)) elements.push_back(ElementToJson(x));
      return array;
    }
    case element_type::STRING:
      return Json(std::string(std::string_view(e)));
    case element_type::INT64: {
      // nlohmann keeps every non-negative integer as unsigned.
      int64_t i = int64_t(e);
      if (i >= 0) return Json(static_cast<uint64_t>(i));
      return Json(i);
    }
    case element_type::UINT64:
      return Json(uint64_t(e));
    case element_type::DOUBLE:
      return Json(double(e));
    case element_type::BOOL:
      return Json(bool(e));
    case element_type::NULL_VALUE:
      return Json(nullptr);
  }
  return Json();
}

}  // namespace

JsonView::JsonView(const Json& value)
    : backend_(Backend::kNlohmann), type_(TypeOf(value)), json_(&value) {}

JsonView JsonView::Of(const element& e) {
  JsonView view;
  view.backend_ = Backend::kSimdjson;
  std::memcpy(view.element_, static_cast<const void*>(&e), sizeof(e));
  switch (e.type()) {
    case element_type::OBJECT:
      view.type_ = Type::kObject;
      break;
    case element_type::ARRAY:
      view.type_ = Type::kArray;
      break;
    case element_type::STRING:
      view.type_ = Type::kString;
      break;
    case element_type::INT64:
      view.type_ = int64_t(e) >= 0 ? Type::kUnsigned : Type::kInteger;
      break;
    case element_type::UINT64:
      view.type_ = Type::kUnsigned;
      break;
    case element_type::DOUBLE:
      view.type_ = Type::kFloat;
      break;
    case element_type::BOOL:
      view.type_ = Type::kBoolean;
      break;
    case element_type::NULL_VALUE:
      view.type_ = Type::kNull;
      break;
  }
  return view;
}

JsonView::Type JsonView::TypeOf(const Json& value) {
  switch (value.type()) {
    case Json::value_t::null:
      return Type::kNull;
    case Json::value_t::object:
      return Type::kObject;
    case Json::value_t::array:
      return Type::kArray;
    case Json::value_t::string:
      return Type::kString;
    case Json::value_t::boolean:
      return Type::kBoolean;
    case Json::value_t::number_integer:
      return Type::kInteger;
    case Json::value_t::number_unsigned:
      return Type::kUnsigned;
    case Json::value_t::number_float:
      return Type::kFloat;
    default:
      return Type::kOther;
  }
}

std::string_view JsonView::string_value() const {
  if (backend_ == Backend::kNlohmann) return json_->get_ref<const std::string&>();
  return std::string_view(ElementOf(element_));
}

bool JsonView::bool_value() const {
  if (backend_ == Backend::kNlohmann) return json_->get<bool>();
  return bool(ElementOf(element_));
}

int64_t JsonView::int_value() const {
  if (backend_ == Backend::kNlohmann) return json_->get<int64_t>();
  const element e = ElementOf(element_);
  return e.is_int64() ? int64_t(e) : static_cast<int64_t>(uint64_t(e));
}

uint64_t JsonView::unsigned_value() const {
  if (backend_ == Backend::kNlohmann) return json_->get<uint64_t>();
  const element e = ElementOf(element_);
  return e.is_uint64() ? uint64_t(e) : static_cast<uint64_t>(int64_t(e));
}

double JsonView::double_value() const {
  if (backend_ == Backend::kNlohmann) return json_->get<double>();
  return double(ElementOf(element_));
}

JsonView JsonView::Find(std::string_view key) const {
  if (backend_ == Backend::kNlohmann) {
    if (!json_->is_object()) return JsonView();
    const auto& members = json_->get_ref<const Json::object_t&>();
    auto it = members.find(key);  // transparent comparator: no std::string is built
    return it == members.end() ? JsonView() : JsonView(it->second);
  }
  if (backend_ == Backend::kNone) return JsonView();
  const element e = ElementOf(element_);
  if (!e.is_object()) return JsonView();
  JsonView found;
  simdjson::dom::object object(e);
  for (auto it = object.begin(); it != object.end(); ++it) {
    // Lengths first (no string access), then the first byte: most keys differ there, and
    // memcmp is a call.
    if (it.key_length() != key.size()) continue;
    const char* name = it.key_c_str();
    if (!key.empty() && (name[0] != key[0] || std::memcmp(name, key.data(), key.size()) != 0)) {
      continue;
    }
    found = Of(it.value());  // keep looking: the last duplicate wins
  }
  return found;
}

size_t JsonView::size() const {
  if (backend_ == Backend::kNlohmann) {
    return json_->is_object() || json_->is_array() ? json_->size() : 0;
  }
  if (backend_ == Backend::kNone) return 0;
  const element e = ElementOf(element_);
  if (e.is_array()) return simdjson::dom::array(e).size();
  if (!e.is_object()) return 0;
  size_t distinct = 0;
  WithSortedMembers(simdjson::dom::object(e), [&](const Member*, size_t n) { distinct = n; });
  return distinct;
}

void JsonView::ForEachElementImpl(void (*call)(void*, JsonView), void* fn) const {
  if (backend_ == Backend::kNlohmann) {
    if (!json_->is_array()) return;
    for (const Json& x : json_->get_ref<const Json::array_t&>()) call(fn, JsonView(x));
    return;
  }
  if (backend_ == Backend::kNone) return;
  const element e = ElementOf(element_);
  if (!e.is_array()) return;
  for (element x : simdjson::dom::array(e)) call(fn, Of(x));
}

void JsonView::ForEachMemberImpl(void (*call)(void*, std::string_view, JsonView), void* fn) const {
  if (backend_ == Backend::kNlohmann) {
    if (!json_->is_object()) return;
    for (const auto& [key, value] : json_->get_ref<const Json::object_t&>()) {
      call(fn, key, JsonView(value));
    }
    return;
  }
  if (backend_ == Backend::kNone) return;
  const element e = ElementOf(element_);
  if (!e.is_object()) return;
  const simdjson::dom::object object(e);
  // Objects written by kubectl or by nlohmann have their keys in order already: a look at the
  // keys alone saves collecting the members.
  std::string_view previous;
  bool first = true, in_order = true;
  for (auto it = object.begin(); it != object.end(); ++it) {
    const std::string_view key(it.key_c_str(), it.key_length());
    if (!first && !(previous < key)) {
      in_order = false;
      break;
    }
    previous = key;
    first = false;
  }
  if (in_order) {
    for (simdjson::dom::key_value_pair kv : object) call(fn, kv.key, Of(kv.value));
    return;
  }
  WithSortedMembers(object, [&](const Member* members, size_t n) {
    for (size_t i = 0; i < n; ++i) call(fn, members[i].key, Of(members[i].value));
  });
}

void JsonView::ForEachMemberAsWrittenImpl(void (*call)(void*, std::string_view, JsonView),
                                          void* fn) const {
  if (backend_ != Backend::kSimdjson) {
    ForEachMemberImpl(call, fn);  // nlohmann holds each key once, in order
    return;
  }
  const element e = ElementOf(element_);
  if (!e.is_object()) return;
  for (simdjson::dom::key_value_pair kv : simdjson::dom::object(e)) call(fn, kv.key, Of(kv.value));
}

Json JsonView::ToJson() const {
  if (backend_ == Backend::kNlohmann) return *json_;
  if (backend_ == Backend::kNone) return Json();
  return ElementToJson(ElementOf(element_));
}

}  // namespace translator
}  // namespace flexcsi
