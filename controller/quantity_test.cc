#include "controller/quantity.h"

#include <gtest/gtest.h>

namespace flexcsi::controller {
namespace {

TEST(Quantity, ParsesBinaryDecimalAndExponentForms) {
  EXPECT_EQ(*ParseStorageQuantity("1Gi"), int64_t{1} << 30);
  EXPECT_EQ(*ParseStorageQuantity("64Mi"), int64_t{64} << 20);
  EXPECT_EQ(*ParseStorageQuantity("500M"), 500000000);
  EXPECT_EQ(*ParseStorageQuantity("1.5Gi"), int64_t{3} << 29);
  EXPECT_EQ(*ParseStorageQuantity("1e3"), 1000);
  EXPECT_EQ(*ParseStorageQuantity("1048576"), 1048576);
}

TEST(Quantity, FractionsRoundUpToWholeBytes) {
  EXPECT_EQ(*ParseStorageQuantity("1500m"), 2);
  EXPECT_EQ(*ParseStorageQuantity("0.1Ki"), 103);
}

TEST(Quantity, RejectsGarbageClearly) {
  for (const char* bad : {"", "Gi", "1Gb", "-1Gi", "1..2", "ten"}) {
    auto q = ParseStorageQuantity(bad);
    EXPECT_FALSE(q.ok()) << bad;
    EXPECT_NE(q.status().message().find("quantity"), std::string::npos) << bad;
  }
  EXPECT_EQ(ParseStorageQuantity("100Ei").status().code(), Code::kOutOfRange);
}

TEST(Quantity, FormatsLikeKubernetes) {
  EXPECT_EQ(FormatStorageQuantity(int64_t{1} << 30), "1Gi");
  EXPECT_EQ(FormatStorageQuantity(int64_t{3} << 29), "1536Mi");
  EXPECT_EQ(FormatStorageQuantity(1000), "1000");
  EXPECT_EQ(*ParseStorageQuantity(FormatStorageQuantity(123456789)), 123456789);
}

}  // namespace
}  // namespace flexcsi::controller
