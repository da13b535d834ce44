#include "tests/migrate/migrate_test_env.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "kube/http_transport.h"
#include "kube/kube_config.h"

extern char** environ;

namespace flexcsi::migrate::testing {

using kube::ResourcePath;

namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Status WaitFor(const std::function<StatusOr<bool>()>& done, const std::string& what,
               std::chrono::seconds timeout = std::chrono::seconds(20)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  Status last;
  while (std::chrono::steady_clock::now() < deadline) {
    auto d = done();
    if (d.ok() && *d) return Status::Ok();
    if (!d.ok()) last = d.status();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return DeadlineExceeded("timed out waiting for " + what +
                          (last.ok() ? "" : ": " + last.message()));
}

}  // namespace

const char* MigrateBinary() { return FLEXCSI_MIGRATE_BINARY; }

std::vector<std::pair<std::string, json>> AllSources() {
  return {
      {"awsElasticBlockStore", {{"volumeID", "aws://us-east-1a/vol-0123abcd"}, {"fsType", "ext4"}}},
      {"gcePersistentDisk", {{"pdName", "pd-data-1"}, {"fsType", "ext4"}}},
      {"azureDisk",
       {{"diskName", "disk-1"},
        {"diskURI", "/subscriptions/s1/resourceGroups/rg/providers/Microsoft.Compute/disks/disk-1"},
        {"kind", "Managed"},
        {"cachingMode", "ReadOnly"},
        {"fsType", "ext4"},
        {"readOnly", false}}},
      {"azureFile",
       {{"secretName", "azure-secret"}, {"shareName", "share-1"}, {"readOnly", false}}},
      {"cinder", {{"volumeID", "cinder-vol-1"}, {"fsType", "ext4"}}},
      {"vsphereVolume", {{"volumePath", "[datastore1] volumes/v1.vmdk"}, {"fsType", "ext4"}}},
      {"portworxVolume", {{"volumeID", "px-vol-1"}, {"fsType", "ext4"}}},
      {"rbd",
       {{"monitors", {"10.0.0.1:6789"}},
        {"image", "kubernetes-dynamic-pvc-1234"},
        {"pool", "rbd"},
        {"user", "admin"},
        {"secretRef", {{"name", "ceph-secret"}}},
        {"fsType", "ext4"}}},
      {"flexVolume", {{"driver", "acme/lvm"}, {"options", {{"volumeID", "lv-1"}}}}},
  };
}

json DistinctSource(json source, int n) {
  const std::string suffix = "-" + std::to_string(n);
  for (const char* f :
       {"volumeID", "pdName", "diskName", "diskURI", "shareName", "volumePath", "image"}) {
    if (source.contains(f) && source[f].is_string()) {
      source[f] = source[f].get<std::string>() + suffix;
    }
  }
  if (source.contains("options") && source["options"].contains("volumeID")) {
    source["options"]["volumeID"] = source["options"]["volumeID"].get<std::string>() + suffix;
  }
  return source;
}

Status MigrateEnv::Start() {
  char tmpl[] = "/tmp/flexcsi-migrate-test.XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return Internal("mkdtemp failed");
  dir_ = tmpl;
  std::ofstream(rules_path()) << kRulesYaml;
  flexcsi::testing::FakeApiServerOptions options;
  options.pod_termination_ms = 50;
  options.detach_ms = 100;
  // --csi-attacher: CSI PVs get VolumeAttachments and csi-attacher's PV finalizer while attached.
  options.extra_args = {"--port", std::to_string(flexcsi::testing::FreeLoopbackPort()),
                        "--csi-attacher"};
  FLEXCSI_RETURN_IF_ERROR(server_.Start(dir_ + "/server", options));
  FLEXCSI_RETURN_IF_ERROR(Reconnect());
  auto node =
      client_->Create(ResourcePath::Core("nodes"),
                      {{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", "node-1"}}}});
  if (!node.ok()) return node.status();
  for (const char* driver :
       {"ebs.csi.aws.com", "pd.csi.storage.gke.io", "disk.csi.azure.com", "file.csi.azure.com",
        "cinder.csi.openstack.org", "csi.vsphere.vmware.com", "pxd.portworx.com",
        "rbd.csi.ceph.com", "lvm.csi.acme.io"}) {
    auto d = client_->Create(ResourcePath::Group("storage.k8s.io/v1", "csidrivers"),
                             {{"apiVersion", "storage.k8s.io/v1"},
                              {"kind", "CSIDriver"},
                              {"metadata", {{"name", driver}}},
                              {"spec", {{"attachRequired", true}}}});
    if (!d.ok()) return d.status();
  }
  return Status::Ok();
}

Status MigrateEnv::Reconnect() {
  kube::ConfigFlags flags;
  flags.kubeconfig = server_.kubeconfig_path();
  auto config = kube::LoadClientConfig(flags);
  if (!config.ok()) return config.status();
  config->max_retries = 2;
  auto client = kube::KubeClient::Create(std::move(*config));
  if (!client.ok()) return client.status();
  client_ = std::move(*client);
  return Status::Ok();
}

MigrateEnv::~MigrateEnv() {
  server_.Kill();
  std::error_code ec;
  if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
}

Status MigrateEnv::CreateNamespace(const std::string& ns) {
  auto created =
      client_->Create(ResourcePath::Core("namespaces"),
                      {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns}}}});
  return created.status();
}

StatusOr<json> MigrateEnv::CreateBoundVolume(const std::string& ns, const std::string& pv_name,
                                             const std::string& claim,
                                             const std::string& source_field, const json& source,
                                             const std::string& reclaim_policy, bool wait) {
  json pv = {{"apiVersion", "v1"},
             {"kind", "PersistentVolume"},
             {"metadata", {{"name", pv_name}, {"labels", {{"test", "migrate"}}}}},
             {"spec",
              {{"capacity", {{"storage", "1Gi"}}},
               {"accessModes", {"ReadWriteOnce"}},
               {"persistentVolumeReclaimPolicy", reclaim_policy},
               {"storageClassName", ""},
               {source_field, source},
               {"claimRef",
                {{"kind", "PersistentVolumeClaim"},
                 {"apiVersion", "v1"},
                 {"namespace", ns},
                 {"name", claim}}}}}};
  auto created_pv = client_->Create(ResourcePath::Core("persistentvolumes"), pv);
  if (!created_pv.ok()) return created_pv.status().WithContext("create PV " + pv_name);
  json pvc = {{"apiVersion", "v1"},
              {"kind", "PersistentVolumeClaim"},
              {"metadata",
               {{"name", claim},
                {"namespace", ns},
                {"labels", {{"app", claim}}},
                {"annotations", {{"owner", "team-a"}}}}},
              {"spec",
               {{"accessModes", {"ReadWriteOnce"}},
                {"storageClassName", ""},
                {"volumeName", pv_name},
                {"resources", {{"requests", {{"storage", "1Gi"}}}}}}}};
  auto created_pvc = client_->Create(ResourcePath::Core("persistentvolumeclaims", ns), pvc);
  if (!created_pvc.ok()) return created_pvc.status().WithContext("create claim " + claim);
  if (!wait) return *created_pv;
  return WaitBound(ns, pv_name, claim);
}

StatusOr<json> MigrateEnv::WaitBound(const std::string& ns, const std::string& pv_name,
                                     const std::string& claim) {
  json bound;
  FLEXCSI_RETURN_IF_ERROR(WaitFor(
      [&]() -> StatusOr<bool> {
        auto p = client_->Get(ResourcePath::Core("persistentvolumes").Named(pv_name));
        auto c = client_->Get(ResourcePath::Core("persistentvolumeclaims", ns).Named(claim));
        if (!p.ok()) return p.status();
        if (!c.ok()) return c.status();
        bound = *p;
        return p->value("status", json::object()).value("phase", "") == "Bound" &&
               c->value("status", json::object()).value("phase", "") == "Bound";
      },
      "PV " + pv_name + " and claim " + claim + " to bind"));
  return bound;
}

Status MigrateEnv::CreateDeployment(const std::string& ns, const std::string& name,
                                    const std::vector<std::string>& claims, int replicas,
                                    bool wait) {
  json volumes = json::array();
  for (const std::string& claim : claims) {
    volumes.push_back({{"name", claim}, {"persistentVolumeClaim", {{"claimName", claim}}}});
  }
  json dep = {
      {"apiVersion", "apps/v1"},
      {"kind", "Deployment"},
      {"metadata", {{"name", name}, {"namespace", ns}}},
      {"spec",
       {{"replicas", replicas},
        {"selector", {{"matchLabels", {{"app", name}}}}},
        {"template",
         {{"metadata", {{"labels", {{"app", name}}}}},
          {"spec",
           {{"containers", {{{"name", "c"}, {"image", "busybox"}}}}, {"volumes", volumes}}}}}}}};
  auto created = client_->Create(ResourcePath::Group("apps/v1", "deployments", ns), dep);
  if (!created.ok()) return created.status();
  return wait ? WaitRunningPods(ns, claims.front(), static_cast<size_t>(replicas)) : Status::Ok();
}

Status MigrateEnv::CreateStatefulSet(const std::string& ns, const std::string& name,
                                     const std::vector<std::string>& templates, int replicas) {
  json claim_templates = json::array();
  for (const std::string& t : templates) {
    claim_templates.push_back({{"metadata", {{"name", t}}},
                               {"spec",
                                {{"accessModes", {"ReadWriteOnce"}},
                                 {"storageClassName", ""},
                                 {"resources", {{"requests", {{"storage", "1Gi"}}}}}}}});
  }
  json sts = {{"apiVersion", "apps/v1"},
              {"kind", "StatefulSet"},
              {"metadata", {{"name", name}, {"namespace", ns}}},
              {"spec",
               {{"replicas", replicas},
                {"serviceName", name},
                {"podManagementPolicy", "Parallel"},
                {"selector", {{"matchLabels", {{"app", name}}}}},
                {"template",
                 {{"metadata", {{"labels", {{"app", name}}}}},
                  {"spec", {{"containers", {{{"name", "c"}, {"image", "busybox"}}}}}}}},
                {"volumeClaimTemplates", claim_templates}}}};
  return client_->Create(ResourcePath::Group("apps/v1", "statefulsets", ns), sts).status();
}

Status MigrateEnv::WaitRunningPods(const std::string& ns, const std::string& claim, size_t count) {
  return WaitFor(
      [&]() -> StatusOr<bool> {
        auto pods = client_->List(ResourcePath::Core("pods", ns));
        if (!pods.ok()) return pods.status();
        size_t running = 0;
        for (const auto& p : (*pods)["items"]) {
          if (p.value("status", json::object()).value("phase", "") != "Running") continue;
          if (p["metadata"].contains("deletionTimestamp")) continue;
          for (const auto& v : p["spec"].value("volumes", json::array())) {
            if (v.contains("persistentVolumeClaim") &&
                v["persistentVolumeClaim"].value("claimName", "") == claim) {
              ++running;
            }
          }
        }
        return running == count;
      },
      std::to_string(count) + " running pods using " + claim);
}

pid_t MigrateEnv::Spawn(const std::vector<std::string>& args, const std::vector<std::string>& env,
                        const std::string& out_prefix, const std::string& binary) {
  std::vector<std::string> argv = {binary};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.push_back("--kubeconfig");
  argv.push_back(server_.kubeconfig_path());
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  std::vector<std::string> envs;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::string(*e).rfind("FLEXCSI_MIGRATE_", 0) != 0) envs.push_back(*e);
  }
  envs.insert(envs.end(), env.begin(), env.end());
  std::vector<char*> cenv;
  for (auto& e : envs) cenv.push_back(e.data());
  cenv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, (out_prefix + ".out").c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&actions, 2, (out_prefix + ".err").c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0600);
  pid_t pid = -1;
  if (posix_spawn(&pid, cargv[0], &actions, nullptr, cargv.data(), cenv.data()) != 0) pid = -1;
  posix_spawn_file_actions_destroy(&actions);
  return pid;
}

ToolRun MigrateEnv::Wait(pid_t pid, const std::string& out_prefix) {
  ToolRun run;
  int status = 0;
  if (pid > 0 && waitpid(pid, &status, 0) == pid) {
    if (WIFEXITED(status)) run.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) run.signal = WTERMSIG(status);
  }
  run.out = ReadFile(out_prefix + ".out");
  run.err = ReadFile(out_prefix + ".err");
  return run;
}

ToolRun MigrateEnv::Run(const std::vector<std::string>& args, const std::vector<std::string>& env) {
  static int counter = 0;
  const std::string prefix = dir_ + "/run-" + std::to_string(++counter);
  return Wait(Spawn(args, env, prefix), prefix);
}

StatusOr<json> MigrateEnv::Control(const std::string& method, const std::string& path,
                                   const json& body) {
  kube::ConfigFlags flags;
  flags.kubeconfig = server_.kubeconfig_path();
  auto c = kube::LoadClientConfig(flags);
  if (!c.ok()) return c.status();
  kube::HttpTransport transport(
      kube::TransportSettings{c->server, "", "", false, c->ca_pem, "test"});
  kube::Credentials credentials;
  credentials.client_cert_pem = c->client_cert_pem;
  credentials.client_key_pem = c->client_key_pem;
  kube::HttpRequest request;
  request.method = method;
  request.path_and_query = "/_fake/" + path;
  if (method != "GET") {
    request.content_type = "application/json";
    request.body = body.dump();
  }
  request.timeout = std::chrono::seconds(20);
  kube::HttpResponse response = transport.Perform(request, credentials);
  if (!response.transport.ok()) return response.transport;
  if (response.http_code != 200) {
    return Internal("/_fake/" + path + ": HTTP " + std::to_string(response.http_code) + " " +
                    response.body);
  }
  json j = json::parse(response.body, nullptr, false);
  if (j.is_discarded()) return Internal("/_fake/" + path + ": not JSON");
  return j;
}

StatusOr<json> MigrateEnv::Audit() { return Control("GET", "audit"); }

MigrateEnv* MigrateEnvTest::env_ = nullptr;

void MigrateEnvTest::SetUpTestSuite() {
  env_ = new MigrateEnv();
  Status s = env_->Start();
  ASSERT_TRUE(s.ok()) << s.ToString();
}

void MigrateEnvTest::TearDownTestSuite() {
  delete env_;
  env_ = nullptr;
}

void MigrateEnvTest::SetUp() {
  ASSERT_NE(env_, nullptr);
  std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
  for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  ns_ = ("t-" + name).substr(0, 50);
  ASSERT_TRUE(env_->CreateNamespace(ns_).ok());
  journal_ = env_->dir() + "/journal-" + ns_;
}

void ExpectNothingLost(MigrateEnv& env, const std::string& ns,
                       const std::vector<std::pair<std::string, std::string>>& pv_and_claim) {
  auto audit = env.Audit();
  ASSERT_TRUE(audit.ok()) << audit.status().ToString();
  for (const auto& e : (*audit)["items"]) {
    const std::string verb = e.value("verb", "");
    const std::string resource = e.value("resource", "");
    EXPECT_NE(verb, "storage-delete") << "storage deleted: " << e.dump();
    const int code = e.value("code", 0);
    const bool applied = code >= 200 && code < 300 && !e.value("dryRun", false);
    if (verb == "delete" && resource == "persistentvolumes" && applied) {
      const json& obj = e.value("object", json::object());
      EXPECT_EQ(obj.value("spec", json::object()).value("persistentVolumeReclaimPolicy", ""),
                "Retain")
          << "a PV was deleted while its reclaim policy was not Retain: " << e.dump();
      EXPECT_TRUE(e.contains("options") && e["options"].contains("preconditions") &&
                  e["options"]["preconditions"].contains("uid"))
          << "PV deleted without a uid precondition: " << e.dump();
    }
    if (verb == "delete" && resource == "persistentvolumeclaims" && applied) {
      ADD_FAILURE() << "a claim was deleted: " << e.dump();
    }
  }
  for (const auto& [pv_name, claim] : pv_and_claim) {
    auto pv = env.Get(ResourcePath::Core("persistentvolumes").Named(pv_name));
    auto pvc = env.Get(ResourcePath::Core("persistentvolumeclaims", ns).Named(claim));
    ASSERT_TRUE(pv.ok()) << "PV " << pv_name << " lost: " << pv.status().ToString();
    ASSERT_TRUE(pvc.ok()) << "claim " << claim << " lost: " << pvc.status().ToString();
    EXPECT_EQ((*pvc)["spec"].value("volumeName", ""), pv_name);
    EXPECT_EQ((*pv)["spec"]["claimRef"].value("uid", ""), (*pvc)["metadata"].value("uid", ""));
  }
}

}  // namespace flexcsi::migrate::testing
