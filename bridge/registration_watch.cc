#include "bridge/registration_watch.h"

#include <utility>

#include "kube/discovery.h"

namespace flexcsi {

using json = nlohmann::json;

RegistrationWatch::RegistrationWatch(kube::KubeClient& client, std::string node_name,
                                     std::function<void()> on_change)
    : client_(client), node_name_(std::move(node_name)), on_change_(std::move(on_change)) {}

RegistrationWatch::~RegistrationWatch() { Stop(); }

Status RegistrationWatch::Start() {
  if (Started()) return Status::Ok();
  auto csinode_version = kube::CsiNodeGroupVersion(client_);
  if (!csinode_version.ok()) return csinode_version.status();
  kube::ListOptions just_this_node;
  just_this_node.field_selector = "metadata.name=" + node_name_;
  node_ = std::make_unique<kube::Informer>(&client_, kube::ResourcePath::Core("nodes"),
                                           just_this_node);
  if (!csinode_version->empty()) {
    csinode_ = std::make_unique<kube::Informer>(
        &client_, kube::ResourcePath::Group(*csinode_version, "csinodes"), just_this_node);
  }
  stop_ = false;
  for (kube::Informer* informer : {node_.get(), csinode_.get()}) {
    if (!informer) continue;
    informer->OnEvent([this](const std::string&, const json&) {
      ++generation_;
      on_change_();
    });
    threads_.emplace_back([this, informer] { informer->Run(stop_); });
  }
  return Status::Ok();
}

void RegistrationWatch::Stop() {
  stop_ = true;
  for (std::thread& t : threads_) t.join();
  threads_.clear();
  node_.reset();
  csinode_.reset();
}

std::optional<RegistrationWatch::Seen> RegistrationWatch::Current() const {
  if (!node_ || !node_->HasSynced() || (csinode_ && !csinode_->HasSynced())) return std::nullopt;
  auto node = node_->Get(node_name_);
  if (!node) return std::nullopt;  // the Node itself is gone: nothing to register on
  Seen seen{std::move(*node), json(nullptr)};
  if (csinode_) seen.csinode = csinode_->Get(node_name_).value_or(json::object());
  return seen;
}

Status RegistrationWatch::LastError() const {
  for (const kube::Informer* informer : {node_.get(), csinode_.get()}) {
    if (informer && !informer->HasSynced()) return informer->LastError();
  }
  return Status::Ok();
}

}  // namespace flexcsi
