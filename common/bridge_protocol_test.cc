#include "common/bridge_protocol.h"

#include <gtest/gtest.h>

namespace flexcsi {
namespace {

std::string PayloadOf(const std::string& frame) {
  EXPECT_GE(frame.size(), 4u);
  auto length = DecodeFrameLength(reinterpret_cast<const unsigned char*>(frame.data()));
  EXPECT_TRUE(length.ok()) << length.status().ToString();
  EXPECT_EQ(frame.size() - 4, length.ok() ? *length : 0);
  return frame.substr(4);
}

// Found by bridge_request_fuzz: a message that cut a secret's name inside a two-byte character
// made the reply's JSON encoding throw in the serving thread, which ended the whole bridge.
TEST(BridgeProtocolTest, ReplyWithInvalidUtf8IsSentWithReplacementCharacters) {
  const std::string message = "option \"ab\xc3\xa9\xc3...\" is too long";
  std::string frame;
  ASSERT_NO_THROW(frame = EncodeBridgeReplyFrame(FlexFailure(message)));
  auto reply = FlexReplyFromBridgeReply(nlohmann::json::parse(PayloadOf(frame)));
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  EXPECT_EQ("Failure", reply->value("status", ""));
  EXPECT_EQ("option \"ab\xc3\xa9\xef\xbf\xbd...\" is too long", reply->value("message", ""));
}

TEST(BridgeProtocolTest, ReplyFrameCarriesTheFlexReplyUnchanged) {
  nlohmann::json flex = FlexSuccess();
  flex["device"] = "flexcsi-pc1:e30";
  auto reply =
      FlexReplyFromBridgeReply(nlohmann::json::parse(PayloadOf(EncodeBridgeReplyFrame(flex))));
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  EXPECT_EQ(flex, *reply);
}

TEST(BridgeProtocolTest, ParseBridgeRequestReadsWhatToJsonWrote) {
  BridgeRequest r;
  r.driver = "flexcsi/loopback";
  r.call = "detach";
  r.args = {"pv-1", "node-1"};
  r.timeout_ms = 115000;
  auto back = ParseBridgeRequest(r.ToJson().dump());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(r.driver, back->driver);
  EXPECT_EQ(r.call, back->call);
  EXPECT_EQ(r.args, back->args);
  EXPECT_EQ(r.timeout_ms, back->timeout_ms);
}

TEST(BridgeProtocolTest, ParseBridgeRequestRefusesWhatIsNotARequest) {
  EXPECT_EQ(Code::kInvalidArgument, ParseBridgeRequest("{\"version\":1,").status().code());
  EXPECT_EQ(Code::kInvalidArgument, ParseBridgeRequest("[]").status().code());
  EXPECT_EQ(Code::kInvalidArgument,
            ParseBridgeRequest("{\"version\":1,\"call\":\"mount\",\"args\":[1]}").status().code());
}

}  // namespace
}  // namespace flexcsi
