#include "kube/watch_decoder.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace flexcsi::kube {
namespace {

TEST(WatchDecoder, EventsSplitAcrossChunksAndBraceInStrings) {
  const std::string stream =
      "{\"type\":\"ADDED\",\"object\":{\"data\":{\"k\":\"}{ \\\" ]\"}}}\n"
      "{\"type\":\"DELETED\",\"object\":{\"a\":[1,{\"b\":2}]}}\n";
  // Every split point must give the same two events.
  for (size_t cut = 0; cut <= stream.size(); ++cut) {
    WatchDecoder decoder;
    std::vector<std::string> values;
    auto collect = [&](const std::string& v) {
      values.push_back(v);
      return true;
    };
    ASSERT_TRUE(decoder.Feed(stream.data(), cut, collect).ok());
    ASSERT_TRUE(decoder.Feed(stream.data() + cut, stream.size() - cut, collect).ok());
    ASSERT_EQ(values.size(), 2u) << "cut at " << cut;
    EXPECT_EQ(values[0], stream.substr(0, stream.find('\n')));
    EXPECT_FALSE(decoder.HasPartialValue());
  }
}

TEST(WatchDecoder, HandlerStopAndGarbage) {
  WatchDecoder decoder;
  std::string two = "{\"a\":1}{\"b\":2}";
  int seen = 0;
  Status s = decoder.Feed(two.data(), two.size(), [&](const std::string&) {
    ++seen;
    return false;
  });
  EXPECT_EQ(s.code(), Code::kCancelled);
  EXPECT_EQ(seen, 1);

  WatchDecoder broken;
  std::string html = "<html>proxy error</html>";
  EXPECT_EQ(broken.Feed(html.data(), html.size(), [](const std::string&) { return true; }).code(),
            Code::kDataLoss);

  WatchDecoder cut;
  std::string half = "{\"type\":\"ADDED\",\"obj";
  EXPECT_TRUE(cut.Feed(half.data(), half.size(), [](const std::string&) { return true; }).ok());
  EXPECT_TRUE(cut.HasPartialValue());
}

}  // namespace
}  // namespace flexcsi::kube
