// flexexec_bench: what going through flexexec and flexcsi-bridge costs, next to the baseline.
//   1. `flexexec init` wall time per exec vs. /bin/true, both exec'd the same way (fork+exec,
//      output captured), in the same run.
//   2. A pod volume mount+unmount round trip: flexexec mount/unmount (exec -> bridge socket ->
//      NodePublish/NodeUnpublish on csi-loopback) vs. the same NodePublish/NodeUnpublish sent
//      straight to csi-loopback over one gRPC channel. Both publish from an already staged
//      volume, so the difference is flexexec + bridge overhead.
// Runs the real binaries through tests/kubelet's TestEnvironment, so it must run in a private
// mount namespace: unshare -m --propagation private flexexec_bench [--iterations N].
// A benchmark program, not a test: it prints figures and asserts nothing about time.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "csi.grpc.pb.h"
#include "tests/kubelet/test_environment.h"

namespace flexcsi {
namespace kubelet {
namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

struct Stats {
  double mean_ms, median_ms, p95_ms, min_ms;
};

Stats Summarise(std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  Stats s{};
  if (ms.empty()) return s;
  s.mean_ms = std::accumulate(ms.begin(), ms.end(), 0.0) / ms.size();
  s.median_ms = ms[ms.size() / 2];
  s.p95_ms = ms[std::min(ms.size() - 1, ms.size() * 95 / 100)];
  s.min_ms = ms.front();
  return s;
}

void Print(const char* what, const std::vector<double>& samples) {
  Stats s = Summarise(samples);
  std::printf("  %-44s n=%-4zu mean %8.3f ms  median %8.3f ms  p95 %8.3f ms  min %8.3f ms\n", what,
              samples.size(), s.mean_ms, s.median_ms, s.p95_ms, s.min_ms);
}

double TimeMs(const std::function<void()>& f) {
  auto start = Clock::now();
  f();
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// fork+exec with stdout/stderr to a pipe that is drained, like kubelet's CombinedOutput.
void ExecCaptured(const std::vector<std::string>& argv) {
  int p[2];
  if (::pipe(p) != 0) return;
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(p[1], 1);
    ::dup2(p[1], 2);
    ::close(p[0]);
    ::close(p[1]);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  ::close(p[1]);
  char buf[4096];
  while (::read(p[0], buf, sizeof(buf)) > 0) {
  }
  ::close(p[0]);
  int status;
  ::waitpid(pid, &status, 0);
}

csi::v1::VolumeCapability MountCapability() {
  csi::v1::VolumeCapability cap;
  cap.mutable_mount()->set_fs_type("ext4");
  cap.mutable_access_mode()->set_mode(csi::v1::VolumeCapability::AccessMode::SINGLE_NODE_WRITER);
  return cap;
}

bool Check(const grpc::Status& s, const char* what) {
  if (s.ok()) return true;
  std::fprintf(stderr, "%s: %d %s\n", what, s.error_code(), s.error_message().c_str());
  return false;
}

int Run(int iterations) {
  TestEnvironment env;
  if (auto started = env.Start(); !started) {
    std::fprintf(stderr, "environment: %s\n", started.message());
    return 1;
  }
  KubeletCaller& caller = env.caller();

  std::printf("flexexec init vs /bin/true (fork+exec+wait, output captured), %d runs each:\n",
              iterations * 5);
  std::vector<double> init_ms, true_ms;
  for (int i = 0; i < 20; ++i) ExecCaptured({caller.ExecutablePath(), "init"});  // warm cache
  for (int i = 0; i < iterations * 5; ++i) {
    // Interleaved, so that machine load affects both sides alike.
    true_ms.push_back(TimeMs([] { ExecCaptured({"/bin/true"}); }));
    init_ms.push_back(TimeMs([&] { ExecCaptured({caller.ExecutablePath(), "init"}); }));
  }
  Print("/bin/true", true_ms);
  Print("flexexec init", init_ms);

  // Through flexexec: stage once (attach, waitforattach, mountdevice), then mount/unmount.
  std::string id_a = env.CreateVolume("bench-a", 64 << 20, "ext4");
  std::string id_b = env.CreateVolume("bench-b", 64 << 20, "ext4");
  if (id_a.empty() || id_b.empty()) return 1;
  FlexVolumeSource va = env.VolumeSource("pv-bench-a", id_a);
  DriverResult r = caller.Attach(va);
  std::string device = r.reply.is_object() ? r.reply.value("device", "") : "";
  if (r.success()) r = caller.WaitForAttach(device, va);
  if (r.success()) r = caller.MountDevice(va, device);
  if (!r.success()) {
    std::fprintf(stderr, "staging through flexexec failed: %s\n", r.Describe().c_str());
    return 1;
  }
  PodInfo pod = env.Pod("bench-pod");
  const std::string target = caller.PodVolumeDirFor(pod, va);
  const std::string options = MountOptionsJson(va, pod);
  std::vector<double> flex_ms;
  for (int i = 0; i < iterations; ++i) {
    fs::create_directories(target);
    DriverResult m, u;
    flex_ms.push_back(TimeMs([&] {
      m = caller.Exec({"mount", target, options});
      u = caller.Exec({"unmount", target});
    }));
    if (!m.success() || !u.success()) {
      std::fprintf(stderr, "flexexec round trip failed: %s / %s\n", m.Describe().c_str(),
                   u.Describe().c_str());
      return 1;
    }
  }
  caller.UnmountDevice(va);
  caller.Detach(va);

  // Directly: ControllerPublish + NodeStage once, then NodePublish/NodeUnpublish.
  auto channel = grpc::CreateChannel("unix://" + env.root() + "/run/csi.sock",
                                     grpc::InsecureChannelCredentials());
  auto controller = csi::v1::Controller::NewStub(channel);
  auto node = csi::v1::Node::NewStub(channel);
  google::protobuf::Map<std::string, std::string> publish_context;
  {
    csi::v1::ControllerPublishVolumeRequest req;
    req.set_volume_id(id_b);
    req.set_node_id(kTestNode);
    *req.mutable_volume_capability() = MountCapability();
    csi::v1::ControllerPublishVolumeResponse resp;
    grpc::ClientContext ctx;
    if (!Check(controller->ControllerPublishVolume(&ctx, req, &resp), "ControllerPublish"))
      return 1;
    publish_context = resp.publish_context();
  }
  const std::string staging = env.kubelet_root() + "/bench/staging";
  const std::string direct_target = env.kubelet_root() + "/bench/target";
  fs::create_directories(staging);
  {
    csi::v1::NodeStageVolumeRequest req;
    req.set_volume_id(id_b);
    req.set_staging_target_path(staging);
    *req.mutable_volume_capability() = MountCapability();
    *req.mutable_publish_context() = publish_context;
    csi::v1::NodeStageVolumeResponse resp;
    grpc::ClientContext ctx;
    if (!Check(node->NodeStageVolume(&ctx, req, &resp), "NodeStage")) return 1;
  }
  std::vector<double> direct_ms;
  for (int i = 0; i < iterations; ++i) {
    fs::create_directories(direct_target);
    grpc::Status ps, us;
    direct_ms.push_back(TimeMs([&] {
      csi::v1::NodePublishVolumeRequest req;
      req.set_volume_id(id_b);
      req.set_staging_target_path(staging);
      req.set_target_path(direct_target);
      *req.mutable_volume_capability() = MountCapability();
      *req.mutable_publish_context() = publish_context;
      csi::v1::NodePublishVolumeResponse resp;
      grpc::ClientContext pctx;
      ps = node->NodePublishVolume(&pctx, req, &resp);
      csi::v1::NodeUnpublishVolumeRequest ureq;
      ureq.set_volume_id(id_b);
      ureq.set_target_path(direct_target);
      csi::v1::NodeUnpublishVolumeResponse uresp;
      grpc::ClientContext uctx;
      us = node->NodeUnpublishVolume(&uctx, ureq, &uresp);
    }));
    if (!Check(ps, "NodePublish") || !Check(us, "NodeUnpublish")) return 1;
  }
  {
    csi::v1::NodeUnstageVolumeRequest req;
    req.set_volume_id(id_b);
    req.set_staging_target_path(staging);
    csi::v1::NodeUnstageVolumeResponse resp;
    grpc::ClientContext ctx;
    Check(node->NodeUnstageVolume(&ctx, req, &resp), "NodeUnstage");
    csi::v1::ControllerUnpublishVolumeRequest ureq;
    ureq.set_volume_id(id_b);
    ureq.set_node_id(kTestNode);
    csi::v1::ControllerUnpublishVolumeResponse uresp;
    grpc::ClientContext uctx;
    Check(controller->ControllerUnpublishVolume(&uctx, ureq, &uresp), "ControllerUnpublish");
  }

  std::printf("pod volume mount+unmount round trip (volume already staged), %d runs each:\n",
              iterations);
  Print("flexexec mount + unmount (via flexcsi-bridge)", flex_ms);
  Print("NodePublish + NodeUnpublish (direct gRPC)", direct_ms);
  Stats f = Summarise(flex_ms), d = Summarise(direct_ms);
  std::printf("  overhead of flexexec + bridge per round trip: median %.3f ms (%.2fx)\n",
              f.median_ms - d.median_ms, d.median_ms > 0 ? f.median_ms / d.median_ms : 0.0);
  return 0;
}

}  // namespace
}  // namespace kubelet
}  // namespace flexcsi

int main(int argc, char** argv) {
  int iterations = 50;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--iterations") == 0) iterations = std::max(1, std::atoi(argv[i + 1]));
  }
  return flexcsi::kubelet::Run(iterations);
}
