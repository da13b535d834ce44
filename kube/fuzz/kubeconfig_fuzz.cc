// libFuzzer target for the kubeconfig reader: LoadClientConfig, the entry point every flexcsi
// command and the bridge's node registration use, over kubeconfig files written from the input
// into a temp dir that also holds the files a kubeconfig may name (ca.crt, client.crt,
// client.key, token), with the command-line flags the first byte picks.
//
// Input: a flags byte, then NUL-separated fields: the first kubeconfig, a second one (merged
// through $KUBECONFIG when flag bit 0 is set, as kubectl merges a list), the --context value.
// Flag bits: 0 two files via $KUBECONFIG (else --kubeconfig), 1 --context, 2 --server,
// 3 --token, 4 --namespace.
//
// Any crash, sanitizer report or escaped exception is a bug, and so is an accepted
// configuration that breaks the reader's promises: a server with a scheme and no trailing
// slash, no credentials sent to a server that is not https, a namespace.
#include <stdlib.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "kube/kube_config.h"

namespace {

namespace fs = std::filesystem;
using flexcsi::kube::ClientConfig;

[[noreturn]] void Fail(const std::string& what, const std::string& input) {
  fprintf(stderr, "kubeconfig_fuzz: %s\n--- input ---\n%s\n", what.c_str(), input.c_str());
  abort();
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

const std::string& Dir() {
  static const std::string* dir = [] {
    char tmpl[] = "/tmp/flexcsi-kubeconfig-fuzz.XXXXXX";
    if (mkdtemp(tmpl) == nullptr) Fail("mkdtemp failed", tmpl);
    auto* d = new std::string(tmpl);
    WriteFile(*d + "/ca.crt", "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n");
    WriteFile(*d + "/client.crt", "-----BEGIN CERTIFICATE-----\nMIIC\n-----END CERTIFICATE-----\n");
    WriteFile(*d + "/client.key", "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n");
    WriteFile(*d + "/token", " fuzz-token\n");
    fs::create_directories(*d + "/sa");  // an empty service-account dir: not in a cluster
    unsetenv("KUBERNETES_SERVICE_HOST");
    unsetenv("KUBERNETES_SERVICE_PORT");
    unsetenv("KUBERNETES_MASTER");
    std::atexit([] {
      std::error_code ec;
      fs::remove_all(Dir(), ec);
    });
    return d;
  }();
  return *dir;
}

std::vector<std::string> SplitFields(const std::string& text, size_t count) {
  std::vector<std::string> fields;
  size_t start = 0;
  while (fields.size() + 1 < count) {
    const size_t nul = text.find('\0', start);
    if (nul == std::string::npos) break;
    fields.push_back(text.substr(start, nul - start));
    start = nul + 1;
  }
  fields.push_back(text.substr(start));
  fields.resize(count);
  return fields;
}

void CheckAccepted(const ClientConfig& c, const std::string& input) {
  if (c.server.find("://") == std::string::npos) {
    Fail("server without a scheme: " + c.server, input);
  }
  if (c.server.size() > 8 && c.server.back() == '/') Fail("server ends in /: " + c.server, input);
  if (c.server.rfind("https://", 0) != 0 &&
      (!c.token.empty() || !c.token_file.empty() || !c.password.empty() ||
       !c.client_key_pem.empty() || c.exec.has_value())) {
    Fail("credentials for a server that is not https: " + c.server, input);
  }
  if (c.namespace_.empty()) Fail("no namespace", input);
  if (c.exec.has_value() && c.exec->command.empty()) Fail("exec plugin without a command", input);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string& dir = Dir();
  const uint8_t flags_byte = data[0];
  const std::string input(reinterpret_cast<const char*>(data + 1), size - 1);
  const std::vector<std::string> fields = SplitFields(input, 3);
  WriteFile(dir + "/config", fields[0]);
  WriteFile(dir + "/config-2", fields[1]);

  flexcsi::kube::ConfigFlags flags;
  flags.service_account_dir = dir + "/sa";
  if (flags_byte & 1) {
    setenv("KUBECONFIG", (dir + "/config:" + dir + "/config-2:" + dir + "/missing").c_str(), 1);
  } else {
    unsetenv("KUBECONFIG");
    flags.kubeconfig = dir + "/config";
  }
  if (flags_byte & 2) flags.context = fields[2];
  if (flags_byte & 4) flags.server = "https://flag.example:6443/";
  if (flags_byte & 8) flags.token = "flag-token";
  if (flags_byte & 16) flags.namespace_ = "flag-namespace";

  auto config = flexcsi::kube::LoadClientConfig(flags);
  if (config.ok()) CheckAccepted(*config, input);
  return 0;
}
