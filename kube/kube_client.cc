#include "kube/kube_client.h"

namespace flexcsi::kube {

class KubeClient::Impl {
 public:
  explicit Impl(ClientConfig config) : config_(std::move(config)) {}
  ClientConfig config_;
};

StatusOr<std::unique_ptr<KubeClient>> KubeClient::Create(ClientConfig config) {
  return std::unique_ptr<KubeClient>(new KubeClient(std::make_unique<Impl>(std::move(config))));
}
KubeClient::KubeClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
KubeClient::~KubeClient() = default;
const std::string& KubeClient::DefaultNamespace() const { return impl_->config_.namespace_; }
const ClientConfig& KubeClient::config() const { return impl_->config_; }
StatusOr<nlohmann::json> KubeClient::Get(const ResourcePath&) { return Unimplemented("kube: Get"); }
StatusOr<nlohmann::json> KubeClient::List(const ResourcePath&, const ListOptions&) {
  return Unimplemented("kube: List");
}
StatusOr<nlohmann::json> KubeClient::Create(const ResourcePath&, const nlohmann::json&,
                                            const WriteOptions&) {
  return Unimplemented("kube: Create");
}
StatusOr<nlohmann::json> KubeClient::Update(const ResourcePath&, const nlohmann::json&,
                                            const WriteOptions&) {
  return Unimplemented("kube: Update");
}
StatusOr<nlohmann::json> KubeClient::Patch(const ResourcePath&, PatchType, const nlohmann::json&,
                                           const WriteOptions&) {
  return Unimplemented("kube: Patch");
}
StatusOr<nlohmann::json> KubeClient::Delete(const ResourcePath&, const DeleteOptions&) {
  return Unimplemented("kube: Delete");
}
Status KubeClient::Watch(const ResourcePath&, const WatchOptions&,
                         const std::function<bool(const WatchEvent&)>&) {
  return Unimplemented("kube: Watch");
}

}  // namespace flexcsi::kube
