#include "translator/go_strings.h"

#include <gtest/gtest.h>

namespace flexcsi {
namespace translator {
namespace {

TEST(GoStringsTest, SplitMatchesGo) {
  EXPECT_EQ(GoSplit("", "__"), (std::vector<std::string>{""}));
  EXPECT_EQ(GoSplit("a__", "__"), (std::vector<std::string>{"a", ""}));
  EXPECT_EQ(GoSplit("a,,b", ","), (std::vector<std::string>{"a", "", "b"}));
  EXPECT_EQ(GoSplit("a___b", "__"), (std::vector<std::string>{"a", "_b"}));
}

TEST(GoStringsTest, AtoiMatchesGo) {
  EXPECT_EQ(*GoAtoiInt32("+7"), 7);
  EXPECT_EQ(*GoAtoiInt32("-3"), -3);
  EXPECT_EQ(*GoAtoiInt32("4294967297"), 1);  // Go's int32() keeps the low 32 bits
  EXPECT_EQ(GoAtoiInt32("").status().message(), "strconv.Atoi: parsing \"\": invalid syntax");
  EXPECT_EQ(GoAtoiInt32(" 1").status().message(), "strconv.Atoi: parsing \" 1\": invalid syntax");
  EXPECT_EQ(GoAtoiInt32("99999999999999999999").status().message(),
            "strconv.Atoi: parsing \"99999999999999999999\": value out of range");
}

TEST(GoStringsTest, TrimAndSetFormat) {
  EXPECT_EQ(GoTrimSpace(" \t a b \n"), "a b");
  EXPECT_EQ(GoFormatStringSet({"b", "a"}), "map[a:{} b:{}]");
  EXPECT_EQ(GoFormatStringSet({}), "map[]");
}

}  // namespace
}  // namespace translator
}  // namespace flexcsi
