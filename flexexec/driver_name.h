// Which FlexVolume driver this executable is. kubelet knows a driver only by the directory the
// executable sits in: `<plugindir>/<vendor>~<name>/<name>` is driver "vendor/name" (every `~`
// becomes `/`, flexvolume.md section 1.1). The installer copies one flexexec binary into many
// such directories, so the name must come from the path kubelet used, argv[0], and not from
// /proc/self/exe, which resolves symlinks and would name the directory of the original file.
#pragma once

#include <string>

#include "common/status.h"

namespace flexcsi {

// "/x/plugins/flexcsi~loopback/loopback" -> "/x/plugins/flexcsi~loopback". Lexical: symlinks
// are deliberately not resolved. argv[0] without a '/' (run from PATH, never by kubelet) falls
// back to the directory of /proc/self/exe, the only other place the file can be known from.
std::string ExecutableDirectory(const std::string& argv0);

// The driver name for a driver directory: "flexcsi~loopback" -> "flexcsi/loopback",
// "a~b~c" -> "a/b/c", "cifs" -> "cifs". Fails for an empty, "." / ".." or hidden name (kubelet
// ignores directories starting with '.') and for names with empty segments ("a~~b", "~a").
StatusOr<std::string> DriverNameFromDirectory(const std::string& directory);

}  // namespace flexcsi
