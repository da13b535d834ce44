#include "drivers/loopback/volume_locks.h"

#include <gtest/gtest.h>
#include <atomic>
#include <thread>
#include <vector>

namespace flexcsi {
namespace loopback {
namespace {

TEST(VolumeLocksTest, SameKeyIsMutuallyExclusive) {
  VolumeLocks locks;
  std::atomic<int> inside{0};
  std::atomic<int> max_inside{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&] {
      for (int j = 0; j < 200; ++j) {
        auto guard = locks.Lock("vol:a");
        int now = ++inside;
        int seen = max_inside.load();
        while (now > seen && !max_inside.compare_exchange_weak(seen, now)) {
        }
        std::this_thread::yield();
        --inside;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(max_inside.load(), 1);
}

TEST(VolumeLocksTest, DifferentKeysDoNotBlockEachOther) {
  VolumeLocks locks;
  auto a = locks.Lock("vol:a");
  // Would deadlock if "vol:b" waited for "vol:a".
  std::thread other([&] { auto b = locks.Lock("vol:b"); });
  other.join();
  SUCCEED();
}

TEST(VolumeLocksTest, KeyIsReusableAfterRelease) {
  VolumeLocks locks;
  { auto a = locks.Lock("vol:a"); }
  std::thread other([&] { auto a = locks.Lock("vol:a"); });
  other.join();
  SUCCEED();
}

}  // namespace
}  // namespace loopback
}  // namespace flexcsi
