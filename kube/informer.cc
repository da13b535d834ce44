#include "kube/informer.h"

namespace flexcsi::kube {

Informer::Informer(KubeClient* client, ResourcePath collection, ListOptions options)
    : client_(client), collection_(std::move(collection)), options_(std::move(options)) {}
void Informer::OnEvent(Handler handler) { handlers_.push_back(std::move(handler)); }
void Informer::Run(const std::atomic<bool>&) {}
std::vector<nlohmann::json> Informer::List() const { return {}; }
std::optional<nlohmann::json> Informer::Get(const std::string&) const { return std::nullopt; }
bool Informer::HasSynced() const { return synced_; }

}  // namespace flexcsi::kube
