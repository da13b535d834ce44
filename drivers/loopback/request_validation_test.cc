#include "drivers/loopback/request_validation.h"

#include <gtest/gtest.h>

namespace flexcsi {
namespace loopback {
namespace {

using csi::v1::VolumeCapability;

VolumeCapability MountCapability(
    const std::string& fs_type = "",
    VolumeCapability::AccessMode::Mode mode = VolumeCapability::AccessMode::SINGLE_NODE_WRITER) {
  VolumeCapability c;
  c.mutable_mount()->set_fs_type(fs_type);
  c.mutable_access_mode()->set_mode(mode);
  return c;
}

VolumeCapability BlockCapability() {
  VolumeCapability c;
  c.mutable_block();
  c.mutable_access_mode()->set_mode(VolumeCapability::AccessMode::SINGLE_NODE_WRITER);
  return c;
}

csi::v1::CapacityRange Range(int64_t required, int64_t limit) {
  csi::v1::CapacityRange r;
  r.set_required_bytes(required);
  r.set_limit_bytes(limit);
  return r;
}

TEST(RequireFieldTest, EmptyIsInvalidArgumentNamingTheField) {
  Status s = RequireField("", "volume_id");
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("volume_id"), std::string::npos);
  EXPECT_TRUE(RequireField("x", "volume_id").ok());
}

TEST(ValidateCapabilityTest, AcceptsMountAndBlock) {
  EXPECT_TRUE(ValidateCapability(MountCapability(), "c").ok());
  EXPECT_TRUE(ValidateCapability(MountCapability("xfs"), "c").ok());
  EXPECT_TRUE(ValidateCapability(BlockCapability(), "c").ok());
}

TEST(ValidateCapabilityTest, MissingAccessTypeIsInvalid) {
  VolumeCapability c;
  c.mutable_access_mode()->set_mode(VolumeCapability::AccessMode::SINGLE_NODE_WRITER);
  EXPECT_EQ(ValidateCapability(c, "c").code(), Code::kInvalidArgument);
}

TEST(ValidateCapabilityTest, MissingOrUnknownAccessModeIsInvalid) {
  VolumeCapability c;
  c.mutable_mount();
  EXPECT_EQ(ValidateCapability(c, "c").code(), Code::kInvalidArgument);
  c.mutable_access_mode()->set_mode(VolumeCapability::AccessMode::UNKNOWN);
  EXPECT_EQ(ValidateCapability(c, "c").code(), Code::kInvalidArgument);
}

TEST(ValidateCapabilityTest, MultiNodeModesAreUnsupported) {
  EXPECT_EQ(ValidateCapability(
                MountCapability("", VolumeCapability::AccessMode::MULTI_NODE_MULTI_WRITER), "c")
                .code(),
            Code::kInvalidArgument);
  EXPECT_TRUE(ValidateCapability(
                  MountCapability("", VolumeCapability::AccessMode::SINGLE_NODE_MULTI_WRITER), "c")
                  .ok());
}

TEST(ValidateCapabilityTest, UnsupportedFsTypeIsInvalid) {
  EXPECT_EQ(ValidateCapability(MountCapability("btrfs"), "c").code(), Code::kInvalidArgument);
}

TEST(ValidateMountFlagsTest, BindLikeFlagsAreRefused) {
  VolumeCapability c = MountCapability();
  c.mutable_mount()->add_mount_flags("noatime");
  c.mutable_mount()->add_mount_flags("nodev,nosuid");
  EXPECT_TRUE(ValidateCapability(c, "c").ok());
  for (const char* bad : {"bind", "ro,rbind", "REMOUNT", "X-mount.mkdir", "make-shared"}) {
    VolumeCapability d = MountCapability();
    d.mutable_mount()->add_mount_flags(bad);
    EXPECT_EQ(ValidateCapability(d, "c").code(), Code::kInvalidArgument) << bad;
  }
}

TEST(ValidateCapabilitiesTest, EmptyListIsInvalid) {
  google::protobuf::RepeatedPtrField<VolumeCapability> none;
  EXPECT_EQ(ValidateCapabilities(none).code(), Code::kInvalidArgument);
  *none.Add() = MountCapability();
  EXPECT_TRUE(ValidateCapabilities(none).ok());
  none.Add();  // an empty capability among valid ones
  EXPECT_EQ(ValidateCapabilities(none).code(), Code::kInvalidArgument);
}

TEST(CapabilityKeyTest, MountFlagOrderDoesNotMatterButContentDoes) {
  VolumeCapability a = MountCapability("ext4");
  a.mutable_mount()->add_mount_flags("noatime");
  a.mutable_mount()->add_mount_flags("nodev");
  VolumeCapability b = MountCapability("ext4");
  b.mutable_mount()->add_mount_flags("nodev");
  b.mutable_mount()->add_mount_flags("noatime");
  EXPECT_EQ(CapabilityKey(a), CapabilityKey(b));
  EXPECT_NE(CapabilityKey(a), CapabilityKey(MountCapability("ext4")));
  EXPECT_NE(CapabilityKey(MountCapability()), CapabilityKey(BlockCapability()));
  EXPECT_NE(
      CapabilityKey(MountCapability()),
      CapabilityKey(MountCapability("", VolumeCapability::AccessMode::SINGLE_NODE_READER_ONLY)));
}

TEST(CheckAccessTypeMatchesTest, VolumesRefuseTheOtherKind) {
  VolumeRecord block;
  block.block = true;
  VolumeRecord fs;
  EXPECT_TRUE(CheckAccessTypeMatches(block, BlockCapability()).ok());
  EXPECT_EQ(CheckAccessTypeMatches(block, MountCapability()).code(), Code::kFailedPrecondition);
  EXPECT_TRUE(CheckAccessTypeMatches(fs, MountCapability()).ok());
  EXPECT_EQ(CheckAccessTypeMatches(fs, BlockCapability()).code(), Code::kFailedPrecondition);
}

TEST(ParseMountGroupTest, NumericGidsOnly) {
  EXPECT_EQ(*ParseMountGroup(""), -1);
  EXPECT_EQ(*ParseMountGroup("1234"), 1234);
  EXPECT_EQ(ParseMountGroup("wheel").status().code(), Code::kInvalidArgument);
  EXPECT_EQ(ParseMountGroup("-5").status().code(), Code::kInvalidArgument);
  EXPECT_EQ(ParseMountGroup("99999999999").status().code(), Code::kInvalidArgument);
}

TEST(FsTypeFromParametersTest, DefaultsToExt4AndAcceptsXfs) {
  EXPECT_EQ(*FsTypeFromParameters({}), "ext4");
  EXPECT_EQ(*FsTypeFromParameters({{"fsType", "xfs"}}), "xfs");
  EXPECT_EQ(*FsTypeFromParameters({{"csi.storage.k8s.io/pvc/name", "x"}}), "ext4");
}

TEST(FsTypeFromParametersTest, UnknownKeysAndFilesystemsAreInvalid) {
  EXPECT_EQ(FsTypeFromParameters({{"fsType", "ntfs"}}).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(FsTypeFromParameters({{"fsType", ""}}).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(FsTypeFromParameters({{"colour", "blue"}}).status().code(), Code::kInvalidArgument);
}

TEST(ChooseCapacityTest, NoRangeMeansDefaultSize) {
  EXPECT_EQ(*ChooseCapacity(nullptr, kMinVolumeBytes), kDefaultVolumeBytes);
}

TEST(ChooseCapacityTest, RoundsUpToWholeMiB) {
  csi::v1::CapacityRange r = Range(kMiB + 1, 0);
  EXPECT_EQ(*ChooseCapacity(&r, kMinVolumeBytes), 2 * kMiB);
  r = Range(5 * kMiB, 0);
  EXPECT_EQ(*ChooseCapacity(&r, kMinVolumeBytes), 5 * kMiB);
  r = Range(1, 0);
  EXPECT_EQ(*ChooseCapacity(&r, kMinVolumeBytes), kMiB);
}

TEST(ChooseCapacityTest, OvershootingLimitFallsBack) {
  csi::v1::CapacityRange r = Range(kMiB + 1, 2 * kMiB + 10);
  EXPECT_EQ(*ChooseCapacity(&r, kMinVolumeBytes), 2 * kMiB);
  r = Range(kMiB + 1, kMiB + 100);  // no whole MiB in [required, limit]
  EXPECT_EQ(ChooseCapacity(&r, kMinVolumeBytes).status().code(), Code::kOutOfRange);
}

TEST(ChooseCapacityTest, LimitOnlyShrinksTheDefault) {
  csi::v1::CapacityRange r = Range(0, 10 * kMiB);
  EXPECT_EQ(*ChooseCapacity(&r, kMinVolumeBytes), 10 * kMiB);
}

TEST(ChooseCapacityTest, MinimumRaisesSmallRequests) {
  csi::v1::CapacityRange r = Range(kMiB, 0);
  EXPECT_EQ(*ChooseCapacity(&r, kMinXfsBytes), kMinXfsBytes);
  r = Range(kMiB, 100 * kMiB);
  EXPECT_EQ(ChooseCapacity(&r, kMinXfsBytes).status().code(), Code::kOutOfRange);
}

TEST(ChooseCapacityTest, RequiredAboveLimitOrMaximumIsOutOfRange) {
  csi::v1::CapacityRange r = Range(10 * kMiB, 5 * kMiB);
  EXPECT_EQ(ChooseCapacity(&r, kMinVolumeBytes).status().code(), Code::kOutOfRange);
  r = Range(kMaxVolumeBytes + 1, 0);
  EXPECT_EQ(ChooseCapacity(&r, kMinVolumeBytes).status().code(), Code::kOutOfRange);
}

TEST(ChooseCapacityTest, NegativeNumbersAreInvalid) {
  csi::v1::CapacityRange r = Range(-1, 0);
  EXPECT_EQ(ChooseCapacity(&r, kMinVolumeBytes).status().code(), Code::kInvalidArgument);
}

TEST(CapacityFitsTest, ChecksBothEnds) {
  csi::v1::CapacityRange r = Range(10, 20);
  EXPECT_TRUE(CapacityFits(&r, 15));
  EXPECT_FALSE(CapacityFits(&r, 9));
  EXPECT_FALSE(CapacityFits(&r, 21));
  r = Range(10, 0);
  EXPECT_TRUE(CapacityFits(&r, 1 << 30));
  EXPECT_TRUE(CapacityFits(nullptr, 1));
}

TEST(ParseStartingTokenTest, DecimalTokensOnly) {
  EXPECT_EQ(*ParseStartingToken(""), 0u);
  EXPECT_EQ(*ParseStartingToken("17"), 17u);
  EXPECT_EQ(ParseStartingToken("invalid-token").status().code(), Code::kAborted);
  EXPECT_EQ(ParseStartingToken("-1").status().code(), Code::kAborted);
  EXPECT_EQ(ParseStartingToken("99999999999999999999999").status().code(), Code::kAborted);
}

TEST(ValidateMaxEntriesTest, NegativeIsInvalid) {
  EXPECT_TRUE(ValidateMaxEntries(0).ok());
  EXPECT_EQ(ValidateMaxEntries(-1).code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace loopback
}  // namespace flexcsi
