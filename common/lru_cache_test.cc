#include "common/lru_cache.h"

#include <gtest/gtest.h>

namespace flexcsi {
namespace {

TEST(LruCacheTest, KeysOfObjectsThatComeAndGoStayWithinCapacity) {
  LruCache<int> cache(4096);
  for (int claim = 0; claim < 20000; ++claim) {
    cache.Put("uid-" + std::to_string(claim) + "/Normal/Provisioning", claim);
  }
  EXPECT_EQ(cache.size(), 4096u);
  EXPECT_EQ(cache.Find("uid-0/Normal/Provisioning"), nullptr);
  ASSERT_NE(cache.Find("uid-19999/Normal/Provisioning"), nullptr);
  EXPECT_EQ(*cache.Find("uid-19999/Normal/Provisioning"), 19999);
}

TEST(LruCacheTest, LeastRecentlyUsedIsForgottenFirst) {
  LruCache<int> cache(2);
  EXPECT_TRUE(cache.Put("a", 1));
  EXPECT_TRUE(cache.Put("b", 2));
  ASSERT_NE(cache.Find("a"), nullptr);  // a is now the most recent
  EXPECT_TRUE(cache.Put("c", 3));
  EXPECT_EQ(cache.Find("b"), nullptr);
  EXPECT_NE(cache.Find("a"), nullptr);
  EXPECT_NE(cache.Find("c"), nullptr);
}

TEST(LruCacheTest, PutOfARememberedKeyReplacesItsValue) {
  LruCache<int> cache(2);
  EXPECT_TRUE(cache.Put("a", 1));
  EXPECT_FALSE(cache.Put("a", 5));
  EXPECT_EQ(*cache.Find("a"), 5);
  EXPECT_EQ(cache.size(), 1u);
  cache.Erase("a");
  EXPECT_EQ(cache.Find("a"), nullptr);
  cache.Erase("a");
  EXPECT_EQ(cache.size(), 0u);
}

}  // namespace
}  // namespace flexcsi
