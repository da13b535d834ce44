// csi-loopback-demo: drives one volume through its whole life against a running CSI driver and
// prints every RPC with its result. Used by scripts/driver-demo.sh; not a general CSI client.
// Mounts happen in the driver, so run both inside a private mount namespace.
#include <sys/stat.h>
#include <sys/statvfs.h>

#include <grpcpp/grpcpp.h>
#include <CLI/CLI.hpp>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>
#include <string>

#include "csi.grpc.pb.h"

namespace {

constexpr int64_t kMiB = 1024 * 1024;

struct Demo {
  std::unique_ptr<csi::v1::Identity::Stub> identity;
  std::unique_ptr<csi::v1::Controller::Stub> controller;
  std::unique_ptr<csi::v1::Node::Stub> node;
  bool failed = false;

  // Runs one RPC, printing its name, what it was about and how it ended. Returns success.
  bool Step(const std::string& rpc, const std::string& what,
            const std::function<grpc::Status(grpc::ClientContext*)>& call,
            const std::function<std::string()>& describe_result = nullptr) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(120));
    std::cout << "==> " << rpc << " " << what << std::endl;
    grpc::Status status = call(&context);
    if (status.ok()) {
      std::cout << "    OK" << (describe_result ? "  " + describe_result() : "") << std::endl;
    } else {
      std::cout << "    FAILED code=" << status.error_code() << " " << status.error_message()
                << std::endl;
    }
    return status.ok();
  }
};

int64_t FilesystemBytes(const std::string& path) {
  struct statvfs fs;
  if (::statvfs(path.c_str(), &fs) != 0) return -1;
  return static_cast<int64_t>(fs.f_blocks) * static_cast<int64_t>(fs.f_frsize);
}

std::string Mib(int64_t bytes) { return std::to_string(bytes / kMiB) + " MiB"; }

// Whether `path` is a mount point: its device differs from its parent's. Enough for a demo.
bool IsMountPoint(const std::string& path) {
  struct stat self, parent;
  return ::stat(path.c_str(), &self) == 0 && ::stat((path + "/..").c_str(), &parent) == 0 &&
         self.st_dev != parent.st_dev;
}

}  // namespace

int main(int argc, char** argv) {
  std::string endpoint;
  std::string work_dir;
  std::string node_id = "demo-node";
  std::string fs_type = "ext4";
  CLI::App app{"csi-loopback-demo: one volume's life, RPC by RPC"};
  app.add_option("--endpoint", endpoint, "unix:///path/csi.sock")->required();
  app.add_option("--work-dir", work_dir, "directory for staging and target paths")->required();
  app.add_option("--node-id", node_id, "node id the driver runs as")->default_val("demo-node");
  app.add_option("--fs-type", fs_type, "ext4 or xfs")->default_val("ext4");
  CLI11_PARSE(app, argc, argv);

  auto channel = grpc::CreateChannel(endpoint, grpc::InsecureChannelCredentials());
  Demo demo{csi::v1::Identity::NewStub(channel), csi::v1::Controller::NewStub(channel),
            csi::v1::Node::NewStub(channel)};

  csi::v1::GetPluginInfoResponse info;
  if (!demo.Step(
          "GetPluginInfo", "",
          [&](grpc::ClientContext* c) {
            return demo.identity->GetPluginInfo(c, csi::v1::GetPluginInfoRequest(), &info);
          },
          [&] { return info.name() + " " + info.vendor_version(); })) {
    return 1;
  }
  csi::v1::ProbeResponse probe;
  demo.Step(
      "Probe", "",
      [&](grpc::ClientContext* c) {
        return demo.identity->Probe(c, csi::v1::ProbeRequest(), &probe);
      },
      [&] { return std::string("ready=") + (probe.ready().value() ? "true" : "false"); });

  // The driver's shape (its switches) decides which calls a CO makes, as kubelet does.
  csi::v1::NodeGetCapabilitiesResponse node_caps;
  csi::v1::ControllerGetCapabilitiesResponse controller_caps;
  {
    grpc::ClientContext c1, c2;
    demo.node->NodeGetCapabilities(&c1, csi::v1::NodeGetCapabilitiesRequest(), &node_caps);
    demo.controller->ControllerGetCapabilities(&c2, csi::v1::ControllerGetCapabilitiesRequest(),
                                               &controller_caps);
  }
  bool stages = false, attaches = false;
  for (const auto& cap : node_caps.capabilities()) {
    stages |= cap.rpc().type() == csi::v1::NodeServiceCapability::RPC::STAGE_UNSTAGE_VOLUME;
  }
  for (const auto& cap : controller_caps.capabilities()) {
    attaches |=
        cap.rpc().type() == csi::v1::ControllerServiceCapability::RPC::PUBLISH_UNPUBLISH_VOLUME;
  }
  std::cout << "==> driver shape: " << (stages ? "stages" : "does not stage") << ", "
            << (attaches ? "attaches" : "does not attach") << std::endl;

  csi::v1::VolumeCapability capability;
  capability.mutable_mount()->set_fs_type(fs_type);
  capability.mutable_access_mode()->set_mode(
      csi::v1::VolumeCapability::AccessMode::SINGLE_NODE_WRITER);
  const int64_t initial = fs_type == "xfs" ? 300 * kMiB : 64 * kMiB;
  const int64_t grown = initial + 128 * kMiB;

  csi::v1::CreateVolumeRequest create;
  create.set_name("demo-volume");
  create.mutable_capacity_range()->set_required_bytes(initial);
  *create.add_volume_capabilities() = capability;
  (*create.mutable_parameters())["fsType"] = fs_type;
  csi::v1::CreateVolumeResponse created;
  if (!demo.Step(
          "CreateVolume", "name=demo-volume " + Mib(initial) + " " + fs_type,
          [&](grpc::ClientContext* c) {
            return demo.controller->CreateVolume(c, create, &created);
          },
          [&] { return "volume_id=" + created.volume().volume_id(); })) {
    return 1;
  }
  const std::string id = created.volume().volume_id();
  const std::string staging = stages ? work_dir + "/staging" : "";
  const std::string target = work_dir + "/target";
  const std::string ro_target = work_dir + "/target-ro";
  if (stages) std::filesystem::create_directories(staging);

  csi::v1::ControllerPublishVolumeRequest cp;
  cp.set_volume_id(id);
  cp.set_node_id(node_id);
  *cp.mutable_volume_capability() = capability;
  csi::v1::ControllerPublishVolumeResponse cp_out;
  bool ok = !attaches || demo.Step(
                             "ControllerPublishVolume", id + " -> " + node_id,
                             [&](grpc::ClientContext* c) {
                               return demo.controller->ControllerPublishVolume(c, cp, &cp_out);
                             },
                             [&] {
                               std::string s = "publish_context={";
                               for (const auto& [k, v] : cp_out.publish_context())
                                 s += k + "=" + v + " ";
                               return s + "}";
                             });

  csi::v1::NodeStageVolumeRequest stage;
  stage.set_volume_id(id);
  stage.set_staging_target_path(staging);
  *stage.mutable_volume_capability() = capability;
  *stage.mutable_publish_context() = cp_out.publish_context();
  csi::v1::NodeStageVolumeResponse stage_out;
  ok = ok && (!stages || demo.Step(
                             "NodeStageVolume", id + " at " + staging,
                             [&](grpc::ClientContext* c) {
                               return demo.node->NodeStageVolume(c, stage, &stage_out);
                             },
                             [&] {
                               return std::string("staging path is ") +
                                      (IsMountPoint(staging) ? "a mount point" : "not mounted");
                             }));

  csi::v1::NodePublishVolumeRequest publish;
  publish.set_volume_id(id);
  publish.set_staging_target_path(staging);
  publish.set_target_path(target);
  *publish.mutable_volume_capability() = capability;
  *publish.mutable_publish_context() = cp_out.publish_context();
  csi::v1::NodePublishVolumeResponse publish_out;
  ok = ok && demo.Step("NodePublishVolume", id + " at " + target, [&](grpc::ClientContext* c) {
    return demo.node->NodePublishVolume(c, publish, &publish_out);
  });
  // A second pod on the node reads the same volume only.
  csi::v1::NodePublishVolumeRequest ro_publish = publish;
  ro_publish.set_target_path(ro_target);
  ro_publish.set_readonly(true);
  ok = ok && demo.Step("NodePublishVolume", id + " at " + ro_target + " readonly",
                       [&](grpc::ClientContext* c) {
                         return demo.node->NodePublishVolume(c, ro_publish, &publish_out);
                       });

  if (ok) {
    const std::string file = target + "/hello.txt";
    { std::ofstream(file) << "hello from csi-loopback\n"; }
    std::ifstream in(file);
    std::stringstream content;
    content << in.rdbuf();
    std::cout << "==> write+read " << file << "\n    read back: " << content.str();
    std::ifstream ro_in(ro_target + "/hello.txt");
    std::stringstream ro_content;
    ro_content << ro_in.rdbuf();
    const bool ro_writable = static_cast<bool>(std::ofstream(ro_target + "/denied.txt"));
    std::cout << "==> read-only target: reads " << ro_content.str() << "    a write there is "
              << (ro_writable ? "ACCEPTED (wrong)" : "refused") << std::endl;
    ok &= !ro_writable;
    std::cout << "    filesystem size: " << Mib(FilesystemBytes(target)) << std::endl;

    csi::v1::ControllerExpandVolumeRequest expand;
    expand.set_volume_id(id);
    expand.mutable_capacity_range()->set_required_bytes(grown);
    csi::v1::ControllerExpandVolumeResponse expand_out;
    demo.Step(
        "ControllerExpandVolume", id + " to " + Mib(grown),
        [&](grpc::ClientContext* c) {
          return demo.controller->ControllerExpandVolume(c, expand, &expand_out);
        },
        [&] {
          return "capacity=" + Mib(expand_out.capacity_bytes()) + " node_expansion_required=" +
                 (expand_out.node_expansion_required() ? "true" : "false");
        });
    csi::v1::NodeExpandVolumeRequest node_expand;
    node_expand.set_volume_id(id);
    node_expand.set_volume_path(target);
    node_expand.set_staging_target_path(staging);
    node_expand.mutable_capacity_range()->set_required_bytes(grown);
    csi::v1::NodeExpandVolumeResponse node_expand_out;
    demo.Step(
        "NodeExpandVolume", id + " at " + target,
        [&](grpc::ClientContext* c) {
          return demo.node->NodeExpandVolume(c, node_expand, &node_expand_out);
        },
        [&] { return "filesystem size now " + Mib(FilesystemBytes(target)); });

    csi::v1::NodeGetVolumeStatsRequest stats;
    stats.set_volume_id(id);
    stats.set_volume_path(target);
    csi::v1::NodeGetVolumeStatsResponse stats_out;
    demo.Step(
        "NodeGetVolumeStats", id + " at " + target,
        [&](grpc::ClientContext* c) { return demo.node->NodeGetVolumeStats(c, stats, &stats_out); },
        [&] {
          std::string s;
          for (const auto& u : stats_out.usage()) {
            s += csi::v1::VolumeUsage::Unit_Name(u.unit()) + " total=" + std::to_string(u.total()) +
                 " used=" + std::to_string(u.used()) + "  ";
          }
          return s + "abnormal=" + (stats_out.volume_condition().abnormal() ? "true" : "false");
        });
  }

  // Teardown runs whatever happened above, in CO order.
  csi::v1::NodeUnpublishVolumeRequest unpublish;
  unpublish.set_volume_id(id);
  unpublish.set_target_path(target);
  csi::v1::NodeUnpublishVolumeResponse unpublish_out;
  bool clean = demo.Step("NodeUnpublishVolume", id + " at " + target, [&](grpc::ClientContext* c) {
    return demo.node->NodeUnpublishVolume(c, unpublish, &unpublish_out);
  });
  unpublish.set_target_path(ro_target);
  clean &= demo.Step("NodeUnpublishVolume", id + " at " + ro_target, [&](grpc::ClientContext* c) {
    return demo.node->NodeUnpublishVolume(c, unpublish, &unpublish_out);
  });
  csi::v1::NodeUnstageVolumeRequest unstage;
  unstage.set_volume_id(id);
  unstage.set_staging_target_path(staging);
  csi::v1::NodeUnstageVolumeResponse unstage_out;
  clean &=
      !stages || demo.Step("NodeUnstageVolume", id + " at " + staging, [&](grpc::ClientContext* c) {
        return demo.node->NodeUnstageVolume(c, unstage, &unstage_out);
      });
  csi::v1::ControllerUnpublishVolumeRequest cu;
  cu.set_volume_id(id);
  cu.set_node_id(node_id);
  csi::v1::ControllerUnpublishVolumeResponse cu_out;
  clean &=
      !attaches ||
      demo.Step("ControllerUnpublishVolume", id + " from " + node_id, [&](grpc::ClientContext* c) {
        return demo.controller->ControllerUnpublishVolume(c, cu, &cu_out);
      });
  csi::v1::DeleteVolumeRequest del;
  del.set_volume_id(id);
  csi::v1::DeleteVolumeResponse del_out;
  clean &= demo.Step("DeleteVolume", id, [&](grpc::ClientContext* c) {
    return demo.controller->DeleteVolume(c, del, &del_out);
  });
  std::cout << (ok && clean ? "demo finished" : "demo finished with failures") << std::endl;
  return ok && clean ? 0 : 1;
}
