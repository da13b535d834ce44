// MD5 as lower-case hex. Used only because Ceph RBD migration derives its clusterID from the MD5
// of the monitor list (translation.md §11); not for anything security-related.
#pragma once

#include <string>

namespace flexcsi {
namespace translator {

std::string Md5Hex(const std::string& data);

}  // namespace translator
}  // namespace flexcsi
