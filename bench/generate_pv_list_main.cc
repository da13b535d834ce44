// generate_pv_list: writes the benchmark's PersistentVolumeList (generate_pv_list.h).
//
// usage: generate_pv_list [--count N] [--seed S] [--format json|yaml] [--rules FILE] [OUT]
//   N defaults to 50000 (about 112 MB of JSON), S to 1; OUT defaults to stdout. --rules writes
//   the FlexVolume rules the list's acme/lvm volumes need.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>

#include "bench/generate_pv_list.h"

int main(int argc, char** argv) {
  uint64_t count = 50000, seed = 1;
  std::string format = "json", out_path, rules_path;
  for (int i = 1; i < argc; ++i) {
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "generate_pv_list: %s needs a value\n", argv[i]);
        std::exit(2);
      }
      return argv[++i];
    };
    if (std::strcmp(argv[i], "--count") == 0) {
      count = std::strtoull(value().c_str(), nullptr, 10);
    } else if (std::strcmp(argv[i], "--seed") == 0) {
      seed = std::strtoull(value().c_str(), nullptr, 10);
    } else if (std::strcmp(argv[i], "--format") == 0) {
      format = value();
    } else if (std::strcmp(argv[i], "--rules") == 0) {
      rules_path = value();
    } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
      std::fprintf(stderr, "usage: generate_pv_list [--count N] [--seed S] "
                           "[--format json|yaml] [--rules FILE] [OUT]\n");
      return 2;
    } else {
      out_path = argv[i];
    }
  }
  if (format != "json" && format != "yaml") {
    std::fprintf(stderr, "generate_pv_list: --format is json or yaml\n");
    return 2;
  }
  if (!rules_path.empty()) {
    std::ofstream rules(rules_path);
    rules << flexcsi::bench::kFlexVolumeRulesJson << "\n";
    if (!rules) {
      std::fprintf(stderr, "generate_pv_list: cannot write %s\n", rules_path.c_str());
      return 1;
    }
  }
  auto list_format =
      format == "yaml" ? flexcsi::bench::ListFormat::kYaml : flexcsi::bench::ListFormat::kJson;
  std::ios::sync_with_stdio(false);
  if (out_path.empty() || out_path == "-") {
    flexcsi::bench::WritePVList(std::cout, seed, count, list_format);
    std::cout.flush();
    return std::cout ? 0 : 1;
  }
  std::ofstream out(out_path, std::ios::binary);
  flexcsi::bench::WritePVList(out, seed, count, list_format);
  out.close();
  if (!out) {
    std::fprintf(stderr, "generate_pv_list: cannot write %s\n", out_path.c_str());
    return 1;
  }
  return 0;
}
