// translate_bench: how fast `flexcsi translate` turns a cluster dump into CSI, in how much memory.
//
// Input: the realistic mixed PersistentVolumeList of generate_pv_list.h (written to a temporary
// file, JSON and YAML), or any file given with --input. Reports, on one core:
//   library  the translator on already parsed PVs, PVs per CPU second:
//            - TranslateInTreePVToCSIChanges on PVs parsed by simdjson (the list as one DOM
//              document, items read through JsonView::Of) and on PVs parsed into nlohmann::json
//              (a vector of items, as the copying figures use): the translation
//              as changes to the PV, which is not copied (the fast form);
//            - the same on simdjson's PVs plus the CSI PV written as JSON text from the view
//              (what the command does per PV, without reading and writing);
//            - TranslateInTreePVToCSI, the copying call (like csi-translation-lib, which
//              deep-copies its argument: the changes applied to a copy), and the call that
//              consumes its argument
//   command  the flexcsi-translate binary end to end (`to-csi pv --rules`, stdin from the file,
//            stdout to /dev/null), pinned to CPU 0: wall and CPU seconds, and its peak RSS
// for JSON and for YAML input.
//
// usage: translate_bench [--count N] [--seed S] [--input FILE] [--rules FILE] [--binary PATH]
//                        [--runs R] [--no-yaml] [--no-library]
//   N defaults to 50000 (about 105 MB of JSON), R (command runs, best is kept) to 3. With
//   --input, --rules names the FlexVolume rules (default: the generator's rules); --no-library
//   skips parsing the whole input in this process (for inputs too large for that).
#include <fcntl.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <memory>

#include <simdjson.h>
#include <nlohmann/json.hpp>

#include "bench/generate_pv_list.h"
#include "common/yaml_json.h"
#include "translator/flexvolume_rules.h"
#include "translator/json_text_writer.h"
#include "translator/json_view.h"
#include "translator/translator.h"

namespace {

using flexcsi::translator::JsonView;
using flexcsi::translator::Translator;
using nlohmann::json;

double CpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

void PinToCpu0() {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(0, &set);
  sched_setaffinity(0, sizeof(set), &set);
}

struct CommandRun {
  int status = -1;
  double wall = 0, cpu = 0;
  long max_rss_kib = 0;
};

// Runs `binary args...` with stdin from `input`, stdout to /dev/null, stderr to `err_path`,
// pinned to CPU 0.
CommandRun RunCommand(const std::string& binary, const std::vector<std::string>& args,
                      const std::string& input, const std::string& err_path) {
  CommandRun run;
  auto start = std::chrono::steady_clock::now();
  pid_t pid = fork();
  if (pid == 0) {
    PinToCpu0();
    int in = open(input.c_str(), O_RDONLY);
    int out = open("/dev/null", O_WRONLY);
    int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (in < 0 || out < 0 || err < 0) _exit(127);
    dup2(in, 0);
    dup2(out, 1);
    dup2(err, 2);
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(binary.c_str()));
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(binary.c_str(), argv.data());
    _exit(127);
  }
  int raw = 0;
  struct rusage usage;
  wait4(pid, &raw, 0, &usage);
  run.wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  run.cpu = usage.ru_utime.tv_sec + usage.ru_utime.tv_usec / 1e6 + usage.ru_stime.tv_sec +
            usage.ru_stime.tv_usec / 1e6;
  run.max_rss_kib = usage.ru_maxrss;
  run.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return run;
}

std::string FirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

long FileSize(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? static_cast<long>(st.st_size) : -1;
}

// The PVs of a List file, parsed (the library figure starts from parsed objects).
std::vector<json> LoadItems(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  auto doc = flexcsi::ParseJsonText(text.str());
  if (!doc.ok() || !doc->is_object() || !(*doc)["items"].is_array()) return {};
  return (*doc)["items"].get<std::vector<json>>();
}

// The PVs as a program that parsed the list with simdjson has them: views of the items of one
// document.
struct SimdjsonPVs {
  simdjson::dom::parser parser;
  std::vector<JsonView> views;
};

std::unique_ptr<SimdjsonPVs> ParseWithSimdjson(const std::string& path) {
  auto out = std::make_unique<SimdjsonPVs>();
  simdjson::dom::element root;
  simdjson::dom::array items;
  if (out->parser.load(path).get(root) != simdjson::SUCCESS ||
      root["items"].get(items) != simdjson::SUCCESS) {
    return out;
  }
  for (simdjson::dom::element item : items) out->views.push_back(JsonView::Of(item));
  return out;
}

// TranslateInTreePVToCSIChanges over `views` until a second of CPU has passed.
template <typename Views>
void ReportChanges(const Translator& translator, const Views& views, const char* label) {
  size_t translated = 0, failed = 0;
  double start = CpuSeconds(), elapsed = 0;
  do {
    for (const auto& pv : views) {
      auto changes = translator.TranslateInTreePVToCSIChanges(JsonView(pv));
      changes.ok() ? ++translated : ++failed;
    }
    elapsed = CpuSeconds() - start;
  } while (elapsed < 1.0);
  std::printf(
      "  library, changes, %-9s: %9.0f PVs/s on one core (%zu PVs in %.2f s CPU, %zu failed)\n",
      label, translated / elapsed, translated + failed, elapsed, failed);
}

// The command's work per PV without its input and output: the changes from the simdjson view
// and the CSI PV written as indented JSON text from the view and the changes.
void ReportChangesWritten(const Translator& translator, const std::vector<JsonView>& views) {
  size_t translated = 0, bytes = 0;
  std::string text;
  double start = CpuSeconds(), elapsed = 0;
  do {
    for (const JsonView& pv : views) {
      auto changes = translator.TranslateInTreePVToCSIChanges(pv);
      if (!changes.ok()) continue;
      text.clear();
      flexcsi::translator::AppendTranslatedPVText(
          pv, *changes, flexcsi::translator::JsonStyle::kIndented, 2, &text);
      bytes += text.size();
      ++translated;
    }
    elapsed = CpuSeconds() - start;
  } while (elapsed < 1.0);
  std::printf(
      "  library, changes + text : %9.0f PVs/s on one core (%zu PVs in %.2f s CPU, %.0f MB "
      "written)\n",
      translated / elapsed, translated, elapsed, bytes / 1e6);
}

void ReportLibrary(const Translator& translator, const std::string& path,
                   const std::vector<json>& pvs) {
  {
    std::unique_ptr<SimdjsonPVs> parsed = ParseWithSimdjson(path);
    ReportChanges(translator, parsed->views, "simdjson");
    ReportChangesWritten(translator, parsed->views);
  }
  ReportChanges(translator, pvs, "nlohmann");
  // Copying call: repeat until a second of CPU has passed, so the figure is steady.
  size_t translated = 0, failed = 0;
  double start = CpuSeconds(), elapsed = 0;
  do {
    for (const json& pv : pvs) {
      auto out = translator.TranslateInTreePVToCSI(pv);
      out.ok() ? ++translated : ++failed;
    }
    elapsed = CpuSeconds() - start;
  } while (elapsed < 1.0);
  std::printf(
      "  library, copying call   : %9.0f PVs/s on one core (%zu PVs in %.2f s CPU, %zu failed)\n",
      translated / elapsed, translated + failed, elapsed, failed);
  // Consuming call: fresh copies each round, made outside the timed part.
  size_t consumed = 0;
  double timed = 0;
  while (timed < 1.0) {
    std::vector<json> copies = pvs;
    double round = CpuSeconds();
    for (json& pv : copies) {
      auto out = translator.TranslateInTreePVToCSI(std::move(pv));
      if (out.ok()) ++consumed;
    }
    timed += CpuSeconds() - round;
  }
  std::printf("  library, consuming call : %9.0f PVs/s on one core (%zu PVs in %.2f s CPU)\n",
              consumed / timed, consumed, timed);
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t count = 50000, seed = 1;
  int runs = 3;
  bool yaml = true, library = true;
  std::string input, rules_path, binary = FLEXCSI_TRANSLATE_BINARY;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--count") {
      count = std::strtoull(value().c_str(), nullptr, 10);
    } else if (a == "--seed") {
      seed = std::strtoull(value().c_str(), nullptr, 10);
    } else if (a == "--input") {
      input = value();
    } else if (a == "--rules") {
      rules_path = value();
    } else if (a == "--binary") {
      binary = value();
    } else if (a == "--runs") {
      runs = std::atoi(value().c_str());
    } else if (a == "--no-yaml") {
      yaml = false;
    } else if (a == "--no-library") {
      library = false;  // a big --input would not fit in memory parsed
    } else {
      std::fprintf(stderr,
                   "usage: translate_bench [--count N] [--seed S] [--input FILE] [--rules FILE] "
                   "[--binary PATH] [--runs R] [--no-yaml] [--no-library]\n");
      return 2;
    }
  }
  PinToCpu0();
  const std::string tmp = "/tmp/translate_bench." + std::to_string(getpid());
  std::vector<std::string> cleanup;
  if (rules_path.empty()) {
    rules_path = tmp + ".rules.json";
    std::ofstream(rules_path) << flexcsi::bench::kFlexVolumeRulesJson << "\n";
    cleanup.push_back(rules_path);
  }
  std::string json_path = input, yaml_path;
  if (input.empty()) {
    json_path = tmp + ".json";
    std::ofstream out(json_path, std::ios::binary);
    flexcsi::bench::WritePVList(out, seed, count, flexcsi::bench::ListFormat::kJson);
    cleanup.push_back(json_path);
    if (yaml) {
      yaml_path = tmp + ".yaml";
      std::ofstream y(yaml_path, std::ios::binary);
      flexcsi::bench::WritePVList(y, seed, count, flexcsi::bench::ListFormat::kYaml);
      cleanup.push_back(yaml_path);
    }
  }
  auto rules = flexcsi::translator::LoadFlexVolumeRulesFile(rules_path);
  if (!rules.ok()) {
    std::fprintf(stderr, "rules: %s\n", rules.status().message().c_str());
    return 1;
  }
  std::printf("translate_bench: %s (%.1f MB JSON)\n",
              input.empty() ? "generate_pv_list" : input.c_str(), FileSize(json_path) / 1e6);
  // The commands run first, while this process is small: Linux carries a parent's peak RSS
  // into a forked child, even across exec.
  bool ok = true;
  std::vector<std::pair<std::string, std::string>> inputs = {{"JSON", json_path}};
  if (!yaml_path.empty()) inputs.push_back({"YAML", yaml_path});
  const std::string err_path = tmp + ".err";
  cleanup.push_back(err_path);
  for (const auto& [name, path] : inputs) {
    CommandRun best;
    for (int r = 0; r < runs; ++r) {
      CommandRun run = RunCommand(binary, {"to-csi", "pv", "--rules", rules_path}, path, err_path);
      if (r == 0 || run.wall < best.wall) best = run;
      if (name == "YAML") break;  // slow; once is enough
    }
    std::printf(
        "  command, %s in (%5.1f MB): %6.2f s wall, %6.2f s CPU, peak RSS %5.1f MiB, exit %d\n",
        name.c_str(), FileSize(path) / 1e6, best.wall, best.cpu, best.max_rss_kib / 1024.0,
        best.status);
    std::printf("      %s\n", FirstLine(err_path).c_str());
    ok = ok && best.status == 0;
  }
  if (library) {
    Translator translator(*rules);
    std::vector<json> pvs = LoadItems(json_path);
    std::printf("  library: %zu PVs, parsed\n", pvs.size());
    if (pvs.empty()) {
      std::fprintf(stderr, "no items in %s\n", json_path.c_str());
      ok = false;
    } else {
      ReportLibrary(translator, json_path, pvs);
    }
  }
  for (const std::string& path : cleanup) std::remove(path.c_str());
  return ok ? 0 : 1;
}
