#include "controller/provisioner_lock.h"

#include <cctype>
#include <fstream>

namespace flexcsi::controller {

std::string ExternalProvisionerLockName(const std::string& provisioner) {
  std::string out;
  for (char c : provisioner) {
    out += (std::isalnum(static_cast<unsigned char>(c)) || c == '-') ? c : '-';
  }
  if (!out.empty() && out.back() == '-') out += 'X';
  return out;
}

std::string DefaultLockNamespace(const std::string& pod_namespace,
                                 const std::string& service_account_namespace_file) {
  if (!pod_namespace.empty()) return pod_namespace;
  std::ifstream in(service_account_namespace_file);
  std::string ns;
  if (in && std::getline(in, ns)) {
    while (!ns.empty() && std::isspace(static_cast<unsigned char>(ns.back()))) ns.pop_back();
    if (!ns.empty()) return ns;
  }
  return "default";
}

}  // namespace flexcsi::controller
