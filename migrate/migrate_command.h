// `flexcsi migrate`: move bound claims from in-tree and FlexVolume PVs to their CSI twins, and
// StorageClasses to theirs (storage_class_plan.h).
//
//   flexcsi migrate plan     [--leftovers] [--rules FILE] [-o table|json|yaml]
//   flexcsi migrate apply    (--pv NAME... | --storage-class NAME... | --all) [--scale-down]
//                            [--dry-run] [--yes] [--parallel N] [--journal DIR] [--rules FILE]
//                            [--timeout SECONDS] [-o table|json]
//   flexcsi migrate rollback (--pv NAME... | --storage-class NAME... | --all) [--scale-down]
//                            [--yes] [--parallel N] [--journal DIR] [--timeout SECONDS]
//                            [-o table|json]
//   flexcsi migrate status   [--journal DIR] [-o table|json]
// and everywhere the kubectl flags --kubeconfig, --context, -n/--namespace (PVs are cluster-wide;
// a namespace limits plan and --all to PVs claimed from it; --all with a namespace takes no
// StorageClass, they serve every namespace).
//
// Exit status: 0 everything planned can move / was moved / was rolled back (plan --leftovers:
// nothing left); 3 some PVs or StorageClasses were refused (nothing written for them: in use,
// unbound, untranslatable, driver not registered) (plan --leftovers: something is left);
// 1 a failure (a step failed, or the cluster or journal could not be reached; the journal
// says where each PV and class stands); 2 a usage error.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace flexcsi::migrate {

constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;
constexpr int kExitRefused = 3;

// `args` is everything after "flexcsi migrate". Progress goes to `err`: a live line when it is
// std::cerr and stderr is a terminal, plain lines otherwise (progress_board.h).
int RunMigrateCommand(const std::vector<std::string>& args, std::istream& in, std::ostream& out,
                      std::ostream& err);

}  // namespace flexcsi::migrate
