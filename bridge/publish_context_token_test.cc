#include "bridge/publish_context_token.h"

#include <gtest/gtest.h>

namespace flexcsi {
namespace {

TEST(PublishContextTokenTest, RoundTripsThroughDeviceString) {
  PublishContext context = {{"devicePath", "/dev/loop7"}, {"backing", "/a b/c=d&e"}};
  const std::string device = EncodePublishContextToken(context);
  EXPECT_EQ(device.rfind("flexcsi-pc1:", 0), 0u);
  // One path-friendly word: no separators or padding after the prefix.
  EXPECT_EQ(device.substr(12).find_first_of(" /&=+"), std::string::npos) << device;
  auto decoded = DecodePublishContextToken(device);
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(*decoded, context);
}

TEST(PublishContextTokenTest, EmptyDeviceMeansNoContext) {
  auto decoded = DecodePublishContextToken("");
  ASSERT_TRUE(decoded.ok());
  EXPECT_TRUE(decoded->empty());
}

TEST(PublishContextTokenTest, RefusesDevicesThatAreNotOurs) {
  EXPECT_EQ(DecodePublishContextToken("/dev/vdb").status().code(), Code::kInvalidArgument);
  EXPECT_EQ(DecodePublishContextToken("flexcsi-pc1:!!!").status().code(),
            Code::kInvalidArgument);
  EXPECT_EQ(DecodePublishContextToken("flexcsi-pc1:WzFd").status().code(),  // "[1]"
            Code::kInvalidArgument);
}

}  // namespace
}  // namespace flexcsi
