#include "common/volume_locks.h"

#include <atomic>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace flexcsi {
namespace {

TEST(VolumeLocksTest, SerialisesHoldersOfTheSameKey) {
  VolumeLocks locks;
  std::atomic<int> inside{0};
  std::atomic<int> max_inside{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&] {
      for (int j = 0; j < 200; ++j) {
        auto guard = locks.Lock("driver\nvol-1");
        int now = ++inside;
        int seen = max_inside.load();
        while (now > seen && !max_inside.compare_exchange_weak(seen, now)) {
        }
        --inside;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(max_inside.load(), 1);
  EXPECT_EQ(locks.HeldCount(), 0u);
}

TEST(VolumeLocksTest, DifferentKeysDoNotWaitForEachOther) {
  VolumeLocks locks;
  auto a = locks.Lock(VolumeLockKey("d", "vol-a"));
  std::atomic<bool> got_b{false};
  std::thread t([&] {
    auto b = locks.Lock(VolumeLockKey("d", "vol-b"));
    got_b = true;
  });
  t.join();  // would hang forever if vol-b waited for vol-a
  EXPECT_TRUE(got_b);
  EXPECT_EQ(locks.HeldCount(), 1u);
}

TEST(VolumeLocksTest, KeyIsReusableAfterRelease) {
  VolumeLocks locks;
  { auto a = locks.Lock("vol:a"); }
  std::thread other([&] { auto a = locks.Lock("vol:a"); });
  other.join();  // hangs if the released key stayed held
  EXPECT_EQ(locks.HeldCount(), 0u);
}

}  // namespace
}  // namespace flexcsi
