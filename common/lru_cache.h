// Keys remembered up to a capacity, the least recently used forgotten first: what a long-lived
// controller may keep about objects that come and go (issue #37: the event recorder kept an
// entry for every claim it ever saw, 1.3 KiB per claim for as long as the process ran).
// client-go's event correlator keeps an LRU cache of 4096 entries the same way.
// Not thread-safe: the owner locks.
#pragma once

#include <cstddef>
#include <list>
#include <string>
#include <unordered_map>
#include <utility>

namespace flexcsi {

template <typename Value>
class LruCache {
 public:
  explicit LruCache(size_t capacity) : capacity_(capacity) {}

  // The value for `key`, now the most recently used; null when not remembered.
  Value* Find(const std::string& key) {
    auto it = index_.find(key);
    if (it == index_.end()) return nullptr;
    entries_.splice(entries_.begin(), entries_, it->second);
    return &it->second->second;
  }
  // Remembers `key` (replacing its value), forgetting the least recently used beyond capacity.
  // Returns false when it was remembered already.
  bool Put(const std::string& key, Value value) {
    if (Value* old = Find(key)) {
      *old = std::move(value);
      return false;
    }
    entries_.emplace_front(key, std::move(value));
    index_[key] = entries_.begin();
    while (entries_.size() > capacity_) {
      index_.erase(entries_.back().first);
      entries_.pop_back();
    }
    return true;
  }
  void Erase(const std::string& key) {
    auto it = index_.find(key);
    if (it == index_.end()) return;
    entries_.erase(it->second);
    index_.erase(it);
  }
  size_t size() const { return entries_.size(); }

 private:
  using Entries = std::list<std::pair<std::string, Value>>;
  size_t capacity_;
  Entries entries_;  // most recently used first
  std::unordered_map<std::string, typename Entries::iterator> index_;
};

}  // namespace flexcsi
