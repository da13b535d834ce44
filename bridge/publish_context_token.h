// PublishContextToken: how ControllerPublishVolume's publish_context travels from the
// controller-side bridge (where kube-controller-manager runs `attach`) to the node-side bridge
// (where kubelet runs `waitforattach` and `mountdevice`). The only thing FlexVolume carries
// between them is the `device` string attach returns, which kube-controller-manager stores in
// node.status.volumesAttached[].devicePath; so the context is encoded into it:
//   "flexcsi-pc1:" + base64url(compact JSON object of string -> string)
#pragma once

#include <map>
#include <string>

#include "common/status.h"

namespace flexcsi {

using PublishContext = std::map<std::string, std::string>;

std::string EncodePublishContextToken(const PublishContext& context);

// An empty device (attach answered by a driver without PUBLISH_UNPUBLISH_VOLUME, or a kubelet
// that attached nothing) decodes to an empty context. Anything that is not our token is
// INVALID_ARGUMENT: mounting with a guessed context could expose another volume's device.
StatusOr<PublishContext> DecodePublishContextToken(const std::string& device);

}  // namespace flexcsi
