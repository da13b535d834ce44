// libFuzzer target for the bridge's socket protocol: the bytes a peer sends on the request socket
// go through what RequestServer::Serve does with them (frame length, JSON, BridgeRequest) into a
// real CallDispatcher, with a real state database in a temp dir and two configured drivers
// (attach and no attach) whose CSI socket does not exist: every call is checked, parsed, mapped
// and looked up as in the daemon, and whatever gets as far as gRPC fails there, without waiting
// (unavailableRetrySeconds 0). The answer is encoded as Serve sends it and read back as
// flexexec reads it.
//
// Input: the first byte's low bit picks the form of the rest: 0, the request's JSON payload
// (what the corpus mostly holds, so that mutations reach the calls); 1, the raw stream: a 4-byte
// big-endian length and the payload. "/var/lib/kubelet" in a payload stands for the kubelet root
// of the temp dir, so that the corpus holds real kubelet paths and the bridge accepts them.
//
// Any crash, sanitizer report or escaped exception is a bug, and so is a reply that flexexec
// could not read. Run it inside `unshare -m` (bench/README.md): nothing here mounts, but the
// dispatcher would unmount a staging marker it found under the temp kubelet root.
#include <stdlib.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include <spdlog/spdlog.h>

#include "bridge/bridge_config.h"
#include "bridge/bridge_context.h"
#include "bridge/call_dispatcher.h"
#include "common/bridge_protocol.h"
#include "common/yaml_json.h"

namespace {

using nlohmann::json;

[[noreturn]] void Fail(const std::string& what, const std::string& detail) {
  fprintf(stderr, "bridge_request_fuzz: %s\n%s\n", what.c_str(), detail.c_str());
  abort();
}

// One daemon's worth of parts, made once: a dispatcher is long-lived in the bridge too, so state
// carried from one input to the next is state a real bridge carries as well.
struct Bridge {
  std::string dir;
  flexcsi::BridgeConfig config;
  flexcsi::Metrics metrics;
  flexcsi::VolumeLocks locks;
  flexcsi::RepairBackoff repairs{&metrics};
  std::unique_ptr<flexcsi::StateStore> store;
  std::unique_ptr<flexcsi::CsiClients> clients;
  std::unique_ptr<flexcsi::BridgeContext> ctx;
  std::unique_ptr<flexcsi::CallDispatcher> dispatcher;
};

Bridge& SharedBridge() {
  static Bridge* bridge = [] {
    spdlog::set_level(spdlog::level::off);
    auto* b = new Bridge;
    char tmpl[] = "/tmp/flexcsi-bridge-fuzz.XXXXXX";
    if (mkdtemp(tmpl) == nullptr) Fail("mkdtemp failed", tmpl);
    b->dir = tmpl;
    std::filesystem::create_directories(b->dir + "/kubelet");
    const std::string endpoint = "unix://" + b->dir + "/no-driver.sock";
    const json config = {
        {"kubeletRoot", b->dir + "/kubelet"},
        {"unavailableRetrySeconds", 0},
        // No cluster here: every call is the admin's, so that inputs reach the calls.
        {"trustPodAuthors", true},
        {"drivers",
         {{{"flexDriver", "flexcsi/loopback"},
           {"csiEndpoint", endpoint},
           {"nodeIdMap", {{"node-1", "node-1-id"}}},
           {"rule",
            {{"csiDriver", "loopback.csi.flexcsi.io"},
             {"volumeHandle", {{"fromOption", "volumeID"}}},
             {"defaultFsType", "ext4"}}}},
          {{"flexDriver", "acme/nfs"},
           {"csiEndpoint", endpoint},
           {"attach", false},
           {"podInfoOnMount", true},
           {"accessMode", "ReadWriteMany"},
           {"rule",
            {{"csiDriver", "nfs.csi.k8s.io"},
             {"volumeHandle", {{"template", "${server}#${share}"}}},
             {"attributes", {{"rename", {{"server", "server"}, {"share", "share"}}}}}}}}}}};
    auto parsed = flexcsi::BridgeConfig::FromJson(config);
    if (!parsed.ok()) Fail("the fuzz target's configuration", parsed.status().ToString());
    b->config = std::move(*parsed);
    auto store = flexcsi::StateStore::Open(b->dir + "/state.db");
    if (!store.ok()) Fail("opening the state database", store.status().ToString());
    b->store = std::move(*store);
    b->clients = std::make_unique<flexcsi::CsiClients>(&b->metrics, std::chrono::milliseconds(0));
    b->ctx = std::make_unique<flexcsi::BridgeContext>(flexcsi::BridgeContext{
        b->config, *b->store, b->locks, b->metrics, *b->clients, b->repairs});
    b->dispatcher = std::make_unique<flexcsi::CallDispatcher>(*b->ctx);
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(SharedBridge().dir, ec);
    });
    return b;
  }();
  return *bridge;
}

std::string InTempKubeletRoot(const Bridge& bridge, std::string payload) {
  static const std::string kReal = "/var/lib/kubelet";
  const std::string temp = bridge.config.kubelet_root;
  for (size_t at = payload.find(kReal); at != std::string::npos;
       at = payload.find(kReal, at + temp.size())) {
    payload.replace(at, kReal.size(), temp);
  }
  return payload;
}

// RequestServer::Serve's reply to the bytes a peer sent, or "" when Serve would have waited
// for more bytes until its read deadline and closed the connection without a reply.
std::string Serve(Bridge& bridge, const std::string& stream) {
  if (stream.size() < 4) return "";
  auto length = flexcsi::DecodeFrameLength(reinterpret_cast<const unsigned char*>(stream.data()));
  json reply;
  if (!length.ok()) {
    reply = flexcsi::FlexFailure("malformed request: " + length.status().message());
  } else {
    if (stream.size() - 4 < *length) return "";
    auto request =
        flexcsi::ParseBridgeRequest(InTempKubeletRoot(bridge, stream.substr(4, *length)));
    reply = request.ok() ? bridge.dispatcher->Dispatch(*request)
                         : flexcsi::FlexFailure("malformed request: " + request.status().message());
  }
  return flexcsi::EncodeBridgeReplyFrame(reply);
}

// flexexec's reading of the reply (common/bridge_client.cc).
void CheckReadableByFlexexec(const std::string& frame) {
  auto length = flexcsi::DecodeFrameLength(reinterpret_cast<const unsigned char*>(frame.data()));
  if (!length.ok() || *length != frame.size() - 4) Fail("the reply frame is malformed", frame);
  const json envelope = json::parse(frame.substr(4), nullptr, /*allow_exceptions=*/false);
  auto reply = flexcsi::FlexReplyFromBridgeReply(envelope);
  if (!reply.ok()) Fail("flexexec cannot read the reply: " + reply.status().ToString(), frame);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  Bridge& bridge = SharedBridge();
  const std::string rest(reinterpret_cast<const char*>(data + 1), size - 1);
  const std::string stream = (data[0] & 1) ? rest : flexcsi::EncodeFrame(rest);
  const std::string frame = Serve(bridge, stream);
  if (!frame.empty()) CheckReadableByFlexexec(frame);
  return 0;
}
