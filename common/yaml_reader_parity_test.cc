// The libyaml reader (ParseYamlDocuments) against the yaml-cpp reader it replaced
// (tests/support/yaml_cpp_reader_oracle.h): every text both accept must give the same JSON, value
// and number type alike, and our own errors (depth, alias budget, scalar keys) the same message.
// Texts: every YAML file and string literal in the repository's sources, generated PV lists,
// JsonToYaml of seeded random values, and kubeconfig/kubectl-shaped documents. Where the parsers
// legitimately disagree, kKnownDifferences and kStricterThanYamlCpp say why and what go-yaml
// (kubectl) does; we follow it.
#include <dirent.h>
#include <sys/stat.h>

#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "bench/generate_pv_list.h"
#include "common/yaml_json.h"
#include "tests/support/yaml_cpp_reader_oracle.h"

namespace flexcsi {
namespace {

using Json = nlohmann::json;

// A dump that also names each number's type, so 1, 1u and 1.0 differ.
std::string Typed(const Json& v) {
  switch (v.type()) {
    case Json::value_t::object: {
      std::string s = "{";
      for (auto it = v.begin(); it != v.end(); ++it)
        s += Json(it.key()).dump() + ":" + Typed(*it) + ",";
      return s + "}";
    }
    case Json::value_t::array: {
      std::string s = "[";
      for (const Json& e : v) s += Typed(e) + ",";
      return s + "]";
    }
    case Json::value_t::number_integer:
      return "i" + v.dump();
    case Json::value_t::number_unsigned:
      return "u" + v.dump();
    case Json::value_t::number_float:
      return "f" + v.dump();
    default:
      return v.dump(-1, ' ', false, Json::error_handler_t::replace);
  }
}

std::string TypedAll(const std::vector<Json>& docs) {
  std::string s;
  for (const Json& d : docs) s += Typed(d) + "\n";
  return s;
}

// The builder's own errors (limits, scalar keys), as opposed to a parser's syntax errors.
bool IsOwnError(const std::string& m) {
  auto ends_with = [&m](const std::string& s) {
    return m.size() >= s.size() && m.compare(m.size() - s.size(), s.size(), s) == 0;
  };
  return m.rfind("YAML input ", 0) == 0 || ends_with(": mapping keys must be scalars");
}

// Syntax yaml-cpp 0.7 accepts (often by silently dropping or splitting text) and libyaml
// refuses, by libyaml's problem. go-yaml is a line-by-line port of libyaml's scanner and parser
// and refuses the same texts with the same problem, so kubectl would refuse them too.
struct StricterClass {
  const char* problem;
  const char* example_and_why;
};
const StricterClass kStricterThanYamlCpp[] = {
    {"did not find expected <document start>",
     "\"k\":\"v\" in block context, \"[a] [b]\", or a line less indented than the root node: "
     "content after the document's root; yaml-cpp started new documents or dropped the rest"},
    {"did not find expected key",
     "\": value\" where a block mapping expects a key; yaml-cpp took an empty key (\"null\")"},
    {"found character that cannot start any token",
     "a tab where YAML 1.1 sees indentation (\"-\\tb\", \" \\t a\"); yaml-cpp allowed it"},
    {"found unexpected end of stream",
     "an unterminated quoted scalar; yaml-cpp closed it at the end of the input"},
    {"while scanning a directive",
     "\"%\" lines that are no valid directive; yaml-cpp skipped them"},
    {"did not find expected node content",
     "a lone \"...\" or a flow collection cut short; yaml-cpp read an empty document"},
    {"control characters are not allowed",
     "raw DEL (0x7F), C0 controls, NUL or a BOM inside the text: outside YAML's printable set; "
     "yaml-cpp read them (NUL even switched it to UTF-16)"},
    {"did not find expected alphabetic or numeric character",
     "\"&\" or \"*\" followed by no anchor name, after the root (\"\\\"x\\\" && y\")"},
    {"could not find expected ':'",
     "an implicit key running over a YAML 1.1 line break (CR, NEL, U+2028, U+2029)"},
    {"mapping values are not allowed in this context",
     "\": \" inside a plain scalar that spans a YAML 1.1 line break"},
    {"did not find expected '-' indicator",
     "a block sequence continued after a YAML 1.1 line break yaml-cpp did not see"},
    {"did not find expected comment or line break",
     "junk after a block scalar header; yaml-cpp refused it too but not always"},
    {"found incompatible YAML document",
     "%YAML 1.3 or 2.0 (libyaml 0.2.5 takes 1.1 and 1.2); yaml-cpp only refused major 2"},
    {"found undefined tag handle", "!e!x without a %TAG for !e!; yaml-cpp ignored the handle"},
    {"found unexpected document indicator",
     "\"---\" at the start of a line inside a quoted scalar"},
};

const StricterClass* StricterClassOf(const std::string& libyaml_message) {
  for (const StricterClass& c : kStricterThanYamlCpp) {
    if (libyaml_message.find(c.problem) != std::string::npos) return &c;
  }
  return nullptr;
}

// YAML 1.1 (libyaml, go-yaml) breaks lines at CR, NEL, U+2028 and U+2029 and does not allow DEL;
// yaml-cpp reads all of them as ordinary characters. JsonToYaml (byte for byte yaml-cpp's
// emitter) writes them raw inside scalars, which libyaml and kubectl then read differently or
// refuse. kubectl's own emitter escapes them, so Kubernetes-made YAML never has them raw.
bool HasYaml11BreakOrDel(const std::string& text) {
  for (size_t i = 0; i < text.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == 0x7F) return true;
    if (c == '\r' && (i + 1 == text.size() || text[i + 1] != '\n')) return true;
    if (c == 0xC2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) == 0x85) {
      return true;
    }
    if (c == 0xE2 && i + 2 < text.size() && static_cast<unsigned char>(text[i + 1]) == 0x80 &&
        (static_cast<unsigned char>(text[i + 2]) == 0xA8 ||
         static_cast<unsigned char>(text[i + 2]) == 0xA9)) {
      return true;
    }
  }
  return false;
}

enum class Outcome { kSame, kDiffer, kOnlyLibyamlRefuses, kOnlyYamlCppRefuses };

struct Comparison {
  Outcome outcome;
  std::string explanation;
  std::string libyaml_error;
};

Comparison Compare(const std::string& text) {
  auto old_docs = yaml_reader_oracle::OracleParseYamlDocuments(text);
  auto new_docs = ParseYamlDocuments(text);
  if (old_docs.ok() && new_docs.ok()) {
    std::string a = TypedAll(*old_docs), b = TypedAll(*new_docs);
    return {a == b ? Outcome::kSame : Outcome::kDiffer, "yaml-cpp:\n" + a + "libyaml:\n" + b, ""};
  }
  if (!old_docs.ok() && !new_docs.ok()) {
    const std::string& a = old_docs.status().message();
    const std::string& b = new_docs.status().message();
    // Both refuse: parser errors are worded differently, and which error comes first in a text
    // that is not YAML may differ; two of our own errors must be the same message.
    bool same = !IsOwnError(a) || !IsOwnError(b) || a == b;
    return {same ? Outcome::kSame : Outcome::kDiffer, "yaml-cpp: " + a + "\nlibyaml: " + b, b};
  }
  if (old_docs.ok()) {
    return {Outcome::kOnlyLibyamlRefuses,
            "only libyaml refuses: " + new_docs.status().message() + "\nyaml-cpp:\n" +
                TypedAll(*old_docs),
            new_docs.status().message()};
  }
  return {Outcome::kOnlyYamlCppRefuses,
          "only yaml-cpp refuses: " + old_docs.status().message() + "\nlibyaml:\n" +
              TypedAll(*new_docs),
          ""};
}

std::string Show(const std::string& text) {
  return "input: " + Json(text).dump(-1, ' ', true, Json::error_handler_t::replace) + "\n";
}

// Texts both must read alike: Kubernetes-shaped documents and generated lists.
#define EXPECT_SAME(text)                                                      \
  do {                                                                         \
    Comparison c_ = Compare(text);                                             \
    EXPECT_TRUE(c_.outcome == Outcome::kSame) << Show(text) << c_.explanation; \
  } while (0)

// Texts from anywhere: a difference must fall in a documented class.
#define EXPECT_SAME_OR_DOCUMENTED(text, stats)                     \
  do {                                                             \
    Comparison c_ = Compare(text);                                 \
    if (c_.outcome == Outcome::kSame) break;                       \
    if (HasYaml11BreakOrDel(text)) {                               \
      ++(stats).yaml11_breaks;                                     \
      break;                                                       \
    }                                                              \
    bool stricter_ = c_.outcome == Outcome::kOnlyLibyamlRefuses && \
                     StricterClassOf(c_.libyaml_error) != nullptr; \
    if (stricter_) ++(stats).stricter;                             \
    EXPECT_TRUE(stricter_) << Show(text) << c_.explanation;        \
  } while (0)

struct Stats {
  size_t texts = 0, yaml11_breaks = 0, stricter = 0;
};

// Documents shaped like what kubectl, kubeconfig files and our configs contain.
const char* const kKubeShaped[] = {
    // kubeconfig with certificate data, quoted keys, comments, flow maps and sequences
    "apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n    certificate-authority-data: "
    "LS0tLS1CRUdJTi==\n    server: https://10.0.0.1:6443\n  name: kubernetes\ncontexts:\n- "
    "context: {cluster: kubernetes, user: admin}\n  name: admin@kubernetes  # comment\n"
    "current-context: admin@kubernetes\npreferences: {}\nusers:\n- name: admin\n  user:\n    "
    "exec:\n      apiVersion: client.authentication.k8s.io/v1\n      args: [\"--region\", "
    "'eu-1']\n      command: aws\n      env: null\n",
    // kubectl get -o yaml: block scalars with every chomping indicator, timestamps, quantities
    "apiVersion: v1\nkind: PersistentVolume\nmetadata:\n  annotations:\n    "
    "kubectl.kubernetes.io/last-applied-configuration: |\n      {\"apiVersion\":\"v1\"}\n    "
    "folded: >\n      one\n      two\n\n      three\n    keep: |+\n      kept\n\n    strip: |-\n"
    "      stripped\n    indented: |2\n       two spaces\n  creationTimestamp: "
    "\"2024-01-02T03:04:05Z\"\n  finalizers:\n  - kubernetes.io/pv-protection\n  name: pv-1\n  "
    "resourceVersion: \"123\"\n  uid: 0f1e2d3c-aaaa-bbbb-cccc-000000000000\nspec:\n  "
    "accessModes:\n  - ReadWriteOnce\n  capacity:\n    storage: 10Gi\n  flexVolume:\n    driver: "
    "example/lvm\n    fsType: ext4\n    options:\n      size: \"10\"\n      readonly: 'false'\n"
    "  persistentVolumeReclaimPolicy: Retain\nstatus:\n  phase: Bound\n",
    // multi-document with explicit ends, anchors and aliases, merge key, comments everywhere
    "# leading comment\n---\nbase: &base\n  a: 1\n  b: [x, y]\nderived:\n  <<: *base\n  c: 3\n"
    "list: &l [1, 2.5, -3, +4, 0x10, 0o7, 1e3, .5, 1., .inf, .nan, 1_000]\n"
    "again: *l\n...\n---\n- &s scalar\n- *s\n- !!str 12\n- !!int \"13\"\n- ! 14\n- !custom 15\n"
    "--- # empty document\n---\n~\n---\nnull\n--- >\n  folded root\n",
    // quoted keys, null and boolean keys, odd spellings, empty values
    "\"quoted key\": 1\n'single': 2\n~: tilde\nnull: nul\nNull: N\n? explicit\n: value\n"
    "\"\": empty-quoted\ntrue: t\n1.5: f\n-1: neg\nempty:\nseq:\n- \n- ''\n",
    // flow forms, multi-line flow, implicit keys in flow sequences, plain multi-line scalars
    "a: {x: 1, y: [2, 3], 'z': {}}\nb: [a: 1, {b: 2}, c]\nc: [\n  1,\n  2,\n]\nd: this is\n  "
    "continued\n  here\ne: \"double \\\"escaped\\\" \\u00e9 \\x41 \\t tab\\n\"\nf: 'it''s'\n"
    "g: \"multi\n  line\"\n",
    // CRLF line breaks and a BOM, tabs inside scalars and after values
    "\xEF\xBB\xBFkind: List\r\nitems:\r\n- a: 1\r\n  b: \"x\ty\"\r\n- c: v\t# tab then comment\r\n",
    // directives
    "%YAML 1.1\n---\na: yes\nb: 0777\n",
    "%TAG !e! tag:example.com,2000:\n---\n- !e!foo 1\n",
    // config-file shapes: deeply indented lists, long strings, unicode
    "flexVolumeRules:\n- flexDriver: example.com/lvm\n  csiDriver: lvm.csi.example.com\n  "
    "volumeHandle:\n    fromOption: volumeID\n  attributes:\n    rename: {vg: volumeGroup}\n    "
    "static: {fs: ext4}\nnote: \"h\u00e9llo \u4e16\u754c \U0001F600\"\n",
    // sequences as mapping values without indentation, nested sequences
    "a:\n- b\n- - c\n  - d\n-\n  - e\nf: [[[]], {}]\n",
};

// Where the two readers disagree on purpose, one case per class: what the libyaml reader gives
// (a typed dump, or "error: <message>"), what yaml-cpp gave, and why we follow libyaml/go-yaml.
struct KnownDifference {
  const char* text;
  const char* libyaml;
  const char* why;
};
const KnownDifference kKnownDifferences[] = {
    {"a: &x [*x]\n", "error: invalid YAML: line 1, column 8: anchor 'x' value contains itself",
     "an alias inside the node it names; yaml-cpp's reader said \"unknown alias\", go-yaml says "
     "\"anchor 'x' value contains itself\""},
    {"a: *nope\n", "error: invalid YAML: line 1, column 4: unknown anchor 'nope' referenced",
     "libyaml's parser leaves aliases to the loader, so the builder checks them; go-yaml's "
     "wording (yaml-cpp: \"the referenced anchor is not defined\")"},
    {"? \n: v\n", "{\"null\":\"v\",}\n",
     "an explicit empty key is an empty plain scalar (key \"null\", as \": v\" in a flow map); "
     "yaml-cpp reported no key node, so the old reader said \"mapping keys must be scalars\""},
    {"\"a\":\"b\"\n",
     "error: invalid YAML: line 1, column 4: did not find expected <document start>",
     "no space after ':' is JSON-style and allowed in flow collections only; yaml-cpp read two "
     "documents, \"a\" and \":\\\"b\\\"\"; go-yaml refuses"},
    {"key:\n- a\n-\tb\n",
     "error: invalid YAML: line 3, column 2: found character that cannot start any token (while "
     "scanning for the next token)",
     "a tab after a block indicator may be indentation in YAML 1.1; go-yaml refuses too"},
    {"a: x\ry\n",
     "error: invalid YAML: line 3, column 1: could not find expected ':' (while scanning a simple "
     "key)",
     "a lone CR is a line break in YAML 1.1 (also NEL, U+2028, U+2029); yaml-cpp kept it in "
     "the scalar"},
    {"a: x\x7Fy\n", "error: invalid YAML: line 1, column 5: control characters are not allowed",
     "DEL is not printable in YAML; yaml-cpp read it"},
    {": a\n",
     "error: invalid YAML: line 1, column 1: did not find expected key (while parsing a block "
     "mapping)",
     "a value without a key; yaml-cpp made the key \"null\"; go-yaml refuses"},
    {"\"unterminated\n",
     "error: invalid YAML: line 2, column 1: found unexpected end of stream (while scanning a "
     "quoted scalar)",
     "yaml-cpp closed the quote at the end of the input"},
    {"%FOO bar\n---\na: 1\n",
     "error: invalid YAML: line 1, column 5: found unknown directive name (while scanning a "
     "directive)",
     "libyaml knows %YAML and %TAG only; yaml-cpp skipped others; go-yaml refuses"},
    {"%YAML 1.3\n---\na: 1\n",
     "error: invalid YAML: line 1, column 1: found incompatible YAML document",
     "libyaml 0.2.5 takes %YAML 1.1 and 1.2 (go-yaml takes 1.1 only: the one place we accept "
     "more than kubectl, to keep reading 1.2 files as before); yaml-cpp only refused 2.x"},
    {"- !e!x 1\n",
     "error: invalid YAML: line 1, column 3: found undefined tag handle (while parsing a node)",
     "a tag handle without %TAG; yaml-cpp ignored it"},
};

std::string NewResult(const std::string& text) {
  auto docs = ParseYamlDocuments(text);
  return docs.ok() ? TypedAll(*docs) : "error: " + docs.status().message();
}

bool IsKnownDifference(const std::string& text) {
  for (const KnownDifference& d : kKnownDifferences) {
    if (text == d.text) return true;
  }
  return false;
}

TEST(YamlReaderParityTest, KnownDifferencesFollowLibyaml) {
  for (const KnownDifference& d : kKnownDifferences) {
    EXPECT_EQ(NewResult(d.text), d.libyaml) << d.why;
  }
}

TEST(YamlReaderParityTest, KubernetesShapedDocuments) {
  for (const char* text : kKubeShaped) EXPECT_SAME(std::string(text));
}

TEST(YamlReaderParityTest, GeneratedPvList) {
  for (uint64_t seed : {1, 2, 3}) {
    std::ostringstream out;
    bench::WritePVList(out, seed, 200, bench::ListFormat::kYaml);
    EXPECT_SAME(out.str());
  }
}

// Implicit keys are limited to 1024 characters in both parsers; JsonToYaml switches to "? key"
// past 1024 bytes. libyaml counts characters and yaml-cpp bytes, so a long multi-byte quoted
// key only yaml-cpp refuses is fine; the reverse is not.
TEST(YamlReaderParityTest, KeysAroundTheSimpleKeyLimit) {
  for (const std::string fill : {"k", "\xC3\xA9", "#"}) {
    for (size_t chars = 1010; chars <= 1030; ++chars) {
      std::string key;
      for (size_t i = 0; i < chars; ++i) key += fill;
      for (const std::string& k : {key, "true" + key, key + " "}) {
        std::string yaml = JsonToYaml(Json{{k, 1}});
        Comparison c = Compare(yaml);
        EXPECT_TRUE(c.outcome == Outcome::kSame || c.outcome == Outcome::kOnlyYamlCppRefuses)
            << Show(yaml) << c.explanation;
      }
    }
  }
}

// Strings made of the characters YAML gives meaning to, plus ordinary ones.
std::string RandomString(std::mt19937_64& rng) {
  static const std::vector<std::string> kPieces = {":",
                                                   " ",
                                                   "-",
                                                   "?",
                                                   "#",
                                                   "&",
                                                   "*",
                                                   "!",
                                                   "|",
                                                   ">",
                                                   "'",
                                                   "\"",
                                                   "%",
                                                   "@",
                                                   "`",
                                                   ",",
                                                   "[",
                                                   "]",
                                                   "{",
                                                   "}",
                                                   "\\",
                                                   "\n",
                                                   "\t",
                                                   "\r",
                                                   "~",
                                                   "null",
                                                   "true",
                                                   "no",
                                                   "yes",
                                                   "0",
                                                   "1",
                                                   "0x1F",
                                                   "1e5",
                                                   ".",
                                                   "+",
                                                   "e",
                                                   "a",
                                                   "b",
                                                   "---",
                                                   "...",
                                                   "<<",
                                                   "\xC3\xA9",
                                                   "\xE2\x80\xA8",
                                                   "\x7F",
                                                   "\x01",
                                                   "\xEF\xBB\xBF",
                                                   "9223372036854775808",
                                                   "-0",
                                                   ".inf",
                                                   "=",
                                                   " #",
                                                   ": "};
  std::string s;
  int n = static_cast<int>(rng() % 6);
  for (int i = 0; i < n; ++i) s += kPieces[rng() % kPieces.size()];
  return s;
}

Json RandomJson(std::mt19937_64& rng, int depth) {
  switch (rng() % (depth > 3 ? 6 : 8)) {
    case 0:
      return nullptr;
    case 1:
      return rng() % 2 == 0;
    case 2:
      return static_cast<int64_t>(rng()) >> (rng() % 64);
    case 3:
      return static_cast<double>(static_cast<int64_t>(rng() % 2000000) - 1000000) / 64.0;
    case 4:
    case 5:
      return RandomString(rng);
    case 6: {
      Json a = Json::array();
      for (int i = static_cast<int>(rng() % 4); i > 0; --i) a.push_back(RandomJson(rng, depth + 1));
      return a;
    }
    default: {
      Json o = Json::object();
      for (int i = static_cast<int>(rng() % 4); i > 0; --i)
        o[RandomString(rng)] = RandomJson(rng, depth + 1);
      return o;
    }
  }
}

TEST(YamlReaderParityTest, JsonToYamlOfRandomValues) {
  std::mt19937_64 rng(20261124);
  Stats stats;
  for (int i = 0; i < 4000; ++i) {
    Json value = RandomJson(rng, 0);
    if (value.is_null()) continue;
    std::string yaml = JsonToYaml(value);
    EXPECT_SAME_OR_DOCUMENTED(yaml, stats);
    EXPECT_SAME_OR_DOCUMENTED("---\n" + yaml + "---\n" + yaml, stats);
    stats.texts += 2;
  }
  // The generator favours YAML's special characters; most texts must still be compared.
  EXPECT_LT(stats.yaml11_breaks, stats.texts / 4);
  // One text in this seed: JsonToYaml("...") writes a bare document end marker, which yaml-cpp
  // read as no document at all and libyaml refuses (a writer bug either way).
  EXPECT_LE(stats.stricter, 1u);
}

// Every *.yaml/*.yml file and every string literal of the repository's C++ sources (raw strings
// and one-piece "..." literals with a line break or ": "): the YAML the tests feed us and then
// some. Texts that are not YAML at all just have to be refused by both.
void Walk(const std::string& dir, std::vector<std::string>* files) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == ".." || name == ".git" || name.rfind("build", 0) == 0) continue;
    std::string path = dir + "/" + name;
    struct stat st;
    if (stat(path.c_str(), &st) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      Walk(path, files);
    } else {
      files->push_back(path);
    }
  }
  closedir(d);
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// Raw strings R"(...)" and R"delim(...)delim", then simple "..." literals (common escapes).
void Literals(const std::string& src, std::vector<std::string>* out) {
  for (size_t i = src.find("R\""); i != std::string::npos; i = src.find("R\"", i + 2)) {
    size_t open = src.find('(', i);
    if (open == std::string::npos || open - i > 18) continue;
    std::string close = ")" + src.substr(i + 2, open - i - 2) + "\"";
    size_t end = src.find(close, open);
    if (end == std::string::npos) continue;
    out->push_back(src.substr(open + 1, end - open - 1));
  }
  for (size_t i = 0; i < src.size(); ++i) {
    if (src[i] != '"' || (i > 0 && (src[i - 1] == 'R' || src[i - 1] == '\\' || src[i - 1] == '\'')))
      continue;
    std::string s;
    size_t j = i + 1;
    bool ok = true;
    for (; j < src.size() && src[j] != '"'; ++j) {
      if (src[j] == '\n') {
        ok = false;
        break;
      }
      if (src[j] != '\\') {
        s += src[j];
        continue;
      }
      char c = src[++j];
      if (c == 'n')
        s += '\n';
      else if (c == 't')
        s += '\t';
      else if (c == 'r')
        s += '\r';
      else if (c == '"' || c == '\\' || c == '\'')
        s += c;
      else {
        ok = false;
        break;
      }
    }
    if (ok && (s.find('\n') != std::string::npos || s.find(": ") != std::string::npos))
      out->push_back(s);
    i = j;
  }
}

TEST(YamlReaderParityTest, EveryYamlTextInTheRepository) {
  std::vector<std::string> files;
  Walk(FLEXCSI_SOURCE_DIR, &files);
  Stats stats;
  for (const std::string& path : files) {
    if (EndsWith(path, ".yaml") || EndsWith(path, ".yml")) {
      SCOPED_TRACE(path);
      EXPECT_SAME(ReadFile(path));
      ++stats.texts;
    } else if (EndsWith(path, ".cc") || EndsWith(path, ".h")) {
      std::vector<std::string> literals;
      Literals(ReadFile(path), &literals);
      SCOPED_TRACE(path);
      for (const std::string& text : literals) {
        if (IsKnownDifference(text)) continue;
        EXPECT_SAME_OR_DOCUMENTED(text, stats);
        ++stats.texts;
      }
    }
  }
  EXPECT_GT(stats.texts, 500u);
  std::cout << stats.texts << " texts, " << stats.stricter << " refused only by libyaml, "
            << stats.yaml11_breaks << " with YAML 1.1 breaks or DEL\n";
}

}  // namespace
}  // namespace flexcsi
