// CsiClient's write fence against an in-process CSI controller: a closed fence keeps every call
// that changes storage from reaching the driver while reads go on, and CancelFencedCallsIf ends
// the calls in flight.
#include "bridge/csi_client.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>

namespace flexcsi {
namespace {

using std::chrono::milliseconds;

// CreateVolume blocks until its caller cancels when `block` is set; every call is counted.
class CountingController final : public csi::v1::Controller::Service {
 public:
  std::atomic<int> creates{0}, deletes{0}, cancelled{0};
  std::atomic<bool> block{false};
  std::atomic<bool> pending{false};  // CreateVolume answers as ceph-csi does during a clone

  grpc::Status CreateVolume(grpc::ServerContext* context, const csi::v1::CreateVolumeRequest* req,
                            csi::v1::CreateVolumeResponse* resp) override {
    ++creates;
    if (pending) return grpc::Status(grpc::StatusCode::ABORTED, "clone from snapshot is pending");
    while (block) {
      if (context->IsCancelled()) {
        ++cancelled;
        return grpc::Status(grpc::StatusCode::CANCELLED, "cancelled");
      }
      std::this_thread::sleep_for(milliseconds(10));
    }
    resp->mutable_volume()->set_volume_id(req->name());
    return grpc::Status::OK;
  }
  grpc::Status DeleteVolume(grpc::ServerContext*, const csi::v1::DeleteVolumeRequest*,
                            csi::v1::DeleteVolumeResponse*) override {
    ++deletes;
    return grpc::Status::OK;
  }
  grpc::Status ListVolumes(grpc::ServerContext*, const csi::v1::ListVolumesRequest*,
                           csi::v1::ListVolumesResponse*) override {
    return grpc::Status::OK;
  }
};

class CsiClientFenceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/csi_client_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    grpc::ServerBuilder builder;
    builder.AddListeningPort("unix://" + dir_ + "/csi.sock", grpc::InsecureServerCredentials());
    builder.RegisterService(&driver_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    client_ = std::make_unique<CsiClient>(dir_ + "/csi.sock", nullptr);
    client_->SetWriteFence([this]() -> Status {
      if (closed_) return FailedPrecondition("not the leader");
      return Status::Ok();
    });
  }
  void TearDown() override {
    driver_.block = false;
    server_->Shutdown();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  static csi::v1::CreateVolumeRequest Create(const std::string& name) {
    csi::v1::CreateVolumeRequest req;
    req.set_name(name);
    return req;
  }

  std::string dir_;
  CountingController driver_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<CsiClient> client_;
  std::atomic<bool> closed_{false};
};

TEST_F(CsiClientFenceTest, AClosedFenceKeepsStorageChangesFromTheDriverButNotReads) {
  ASSERT_TRUE(client_->CreateVolume(Create("pvc-a"), Deadline::In(milliseconds(5000))).ok());
  closed_ = true;
  auto refused = client_->CreateVolume(Create("pvc-b"), Deadline::In(milliseconds(5000)));
  EXPECT_EQ(refused.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find("CreateVolume"), std::string::npos);
  EXPECT_NE(refused.status().message().find("not the leader"), std::string::npos);
  csi::v1::DeleteVolumeRequest del;
  del.set_volume_id("pvc-a");
  EXPECT_EQ(client_->DeleteVolume(del, Deadline::In(milliseconds(5000))).code(),
            Code::kFailedPrecondition);
  EXPECT_EQ(driver_.creates, 1);
  EXPECT_EQ(driver_.deletes, 0);
  EXPECT_TRUE(client_->ListVolumes({}, Deadline::In(milliseconds(5000))).ok());
  closed_ = false;
  EXPECT_TRUE(client_->DeleteVolume(del, Deadline::In(milliseconds(5000))).ok());
  EXPECT_EQ(driver_.deletes, 1);
}

TEST_F(CsiClientFenceTest, CancelFencedCallsEndsTheCallsInFlight) {
  driver_.block = true;
  std::atomic<bool> returned{false};
  Status result;
  std::thread call([&] {
    result = client_->CreateVolume(Create("pvc-slow"), Deadline::In(milliseconds(30000))).status();
    returned = true;
  });
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (driver_.creates == 0 && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  ASSERT_EQ(driver_.creates, 1);
  EXPECT_FALSE(returned);
  // Asked while the lock is held again (taken since the caller looked): nothing is cancelled.
  client_->CancelFencedCallsIf([] { return false; });
  std::this_thread::sleep_for(milliseconds(200));
  EXPECT_FALSE(returned);
  closed_ = true;
  client_->CancelFencedCallsIf([] { return true; });
  call.join();
  EXPECT_EQ(result.code(), Code::kCancelled) << result.ToString();
  // Not retried after the cancel, and the fence keeps it from being made again.
  EXPECT_EQ(driver_.creates, 1);
}

// A driver still saying "pending" when the call's time is up: the caller learns that (ABORTED,
// the driver's words), not DEADLINE_EXCEEDED, and the call was retried meanwhile.
TEST_F(CsiClientFenceTest, ADriverStillPendingAtTheDeadlineIsReportedAsPending) {
  driver_.pending = true;
  auto created = client_->CreateVolume(Create("clone"), Deadline::In(milliseconds(700)));
  ASSERT_FALSE(created.ok());
  EXPECT_EQ(created.status().code(), Code::kAborted) << created.status().ToString();
  EXPECT_TRUE(IsPendingCsiError(created.status()));
  EXPECT_NE(created.status().message().find("clone from snapshot is pending"), std::string::npos);
  EXPECT_GE(driver_.creates.load(), 3);

  driver_.pending = false;  // the copy is done: the same name now answers
  auto done = client_->CreateVolume(Create("clone"), Deadline::In(milliseconds(2000)));
  EXPECT_TRUE(done.ok()) << done.status().ToString();
  EXPECT_FALSE(IsPendingCsiError(DeadlineExceeded("x")));
}

}  // namespace
}  // namespace flexcsi
