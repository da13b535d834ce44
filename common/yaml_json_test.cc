#include "common/yaml_json.h"

#include <gtest/gtest.h>

namespace flexcsi {
namespace {

nlohmann::json J(const std::string& text) { return nlohmann::json::parse(text); }

// Compares pretty dumps so that a failure shows both documents.
#define EXPECT_JSON_EQ(actual, expected) EXPECT_EQ((actual).dump(1), (expected).dump(1))

TEST(YamlJsonTest, ScalarsResolveWithCoreSchema) {
  auto docs = ParseYamlDocuments(
      "a: true\nb: 'true'\nc: 12\nd: \"12\"\ne: ~\nf: 1.5\ng: yes\nh: -7\ni: \n---\nx: 1\n---\n");
  ASSERT_TRUE(docs.ok()) << docs.status().message();
  ASSERT_EQ(docs->size(), 2u);
  EXPECT_JSON_EQ(
      (*docs)[0],
      J(R"({"a":true,"b":"true","c":12,"d":"12","e":null,"f":1.5,"g":"yes","h":-7,"i":null})"));
  EXPECT_JSON_EQ((*docs)[1], J(R"({"x":1})"));
}

TEST(YamlJsonTest, RoundTripQuotesAmbiguousStrings) {
  nlohmann::json value =
      J(R"({"s":["true","12","","yes","null","plain: colon","a"],"n":3,"b":false,"e":{},"l":[]})");
  std::string yaml = JsonToYaml(value);
  auto back = ParseYamlDocuments(yaml);
  ASSERT_TRUE(back.ok()) << back.status().message() << "\n" << yaml;
  ASSERT_EQ(back->size(), 1u);
  EXPECT_JSON_EQ((*back)[0], value);
}

TEST(YamlJsonTest, Errors) {
  EXPECT_FALSE(ParseYamlDocuments("a: [").ok());
  EXPECT_EQ(ParseJsonText("{\"a\":").status().message(),
            "invalid JSON: parse error at line 1, column 6: syntax error while parsing value - "
            "unexpected end of input; expected '[', '{', or a literal");
  EXPECT_EQ(ParseJsonText(std::string(100000, '[')).status().message(),
            "invalid JSON: nested deeper than 512 levels");
  std::string block;
  for (int i = 0; i < 600; ++i) block += std::string(i, ' ') + "a:\n";
  // libyaml has no depth limit of its own (nor recursion); ours refuses.
  auto deep_yaml = ParseYamlDocuments(block);
  ASSERT_FALSE(deep_yaml.ok());
  EXPECT_EQ(deep_yaml.status().message(), "YAML input is nested deeper than 512 levels");
  // A node built in memory bypasses yaml-cpp's parser limit; our converter still stops.
  YAML::Node root(YAML::NodeType::Sequence);
  YAML::Node current = root;
  for (int i = 0; i < 600; ++i) {
    YAML::Node child(YAML::NodeType::Sequence);
    current.push_back(child);
    current.reset(child);
  }
  EXPECT_EQ(YamlNodeToJson(root).status().message(), "YAML input is nested deeper than 512 levels");
  auto deep_flow = ParseYamlDocuments(std::string(600, '[') + std::string(600, ']'));
  ASSERT_FALSE(deep_flow.ok());
  EXPECT_EQ(deep_flow.status().message(), "YAML input is nested deeper than 512 levels");
  EXPECT_EQ(ParseYamlDocuments(std::string(100000, '[')).status().message(),
            "YAML input is nested deeper than 512 levels");
}

TEST(YamlJsonTest, AliasBombIsRejected) {
  std::string text = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  std::string prev = "a";
  for (int i = 0; i < 9; ++i) {
    std::string name = "l" + std::to_string(i);
    text += name + ": &" + name + " [*" + prev + ", *" + prev + ", *" + prev + ", *" + prev +
            ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" +
            prev + "]\n";
    prev = name;
  }
  auto docs = ParseYamlDocuments(text);
  ASSERT_FALSE(docs.ok());
  EXPECT_EQ(docs.status().message(), "YAML input expands to more than " +
                                         std::to_string(1000 + 2 * text.size()) +
                                         " nodes (alias bomb?)");
}

}  // namespace
}  // namespace flexcsi

namespace flexcsi {
namespace {

// Found by translate_fuzz: yaml-cpp's LoadAll never returned on this input; libyaml refuses it.
TEST(YamlJsonTest, StrayCharactersAfterADocumentDoNotHang) {
  auto docs = ParseYamlDocuments("\"v\",\": \"d");
  ASSERT_FALSE(docs.ok());
  EXPECT_EQ(docs.status().message(),
            "invalid YAML: line 1, column 4: did not find expected <document start>");
}

TEST(YamlJsonTest, AnchorsAliasesAndScalarKeys) {
  auto docs = ParseYamlDocuments("base: &b {x: 1}\ncopy: *b\n1: one\ntrue: yes\n");
  ASSERT_TRUE(docs.ok()) << docs.status().message();
  ASSERT_EQ(docs->size(), 1u);
  EXPECT_JSON_EQ((*docs)[0], J(R"({"base":{"x":1},"copy":{"x":1},"1":"one","true":"yes"})"));
  auto complex_key = ParseYamlDocuments("? [a]\n: b\n");
  ASSERT_FALSE(complex_key.ok());
  EXPECT_EQ(complex_key.status().message(),
            "invalid YAML: line 1, column 3: mapping keys must be scalars");
}

}  // namespace
}  // namespace flexcsi

namespace flexcsi {
namespace {

TEST(YamlJsonTest, ParseYamlDocumentWantsExactlyOneDocument) {
  EXPECT_TRUE(ParseYamlDocument("a: 1\n").ok());
  EXPECT_EQ(ParseYamlDocument("").status().code(), Code::kInvalidArgument);
  auto two = ParseYamlDocument("a: 1\n---\nb: 2\n");
  ASSERT_FALSE(two.ok());
  EXPECT_NE(two.status().message().find("found 2"), std::string::npos);
}

TEST(YamlJsonTest, LoadYamlFileNamesAMissingFile) {
  auto doc = LoadYamlFile("/nonexistent/flexcsi.yaml");
  ASSERT_FALSE(doc.ok());
  EXPECT_EQ(doc.status().code(), Code::kNotFound);
  EXPECT_NE(doc.status().message().find("/nonexistent/flexcsi.yaml"), std::string::npos);
}

}  // namespace
}  // namespace flexcsi

namespace flexcsi {
namespace {

// Texts hostile or unusual at the byte level, read by libyaml (common/yaml_reader.h).
TEST(YamlJsonTest, ByteLevelOddities) {
  auto one = [](const std::string& text) -> std::string {
    auto docs = ParseYamlDocuments(text);
    if (!docs.ok()) return "error: " + docs.status().message();
    std::string s;
    for (const auto& d : *docs) s += d.dump() + ";";
    return s;
  };
  EXPECT_EQ(one(std::string("a: b\0c\n", 7)),
            "error: invalid YAML: line 1, column 5: control characters are not allowed");
  EXPECT_EQ(one("a: \xff\n"), "error: invalid YAML: line 1, column 4: invalid leading UTF-8 octet");
  EXPECT_EQ(one("a: \xc3\n"),
            "error: invalid YAML: line 1, column 5: invalid trailing UTF-8 octet");
  EXPECT_EQ(one("\xEF\xBB\xBF"
                "a: 1\n"),
            "{\"a\":1};");
  EXPECT_EQ(one("%YAML 1.2\n---\na: 1\n"), "{\"a\":1};");
  EXPECT_EQ(one("%YAML 1.1\n---\na: yes\n"), "{\"a\":\"yes\"};");  // still our 1.2 core schema
  EXPECT_EQ(one("a:\tb\t# tab\r\nc: [1,\r\n  2]\r\n"), "{\"a\":\"b\",\"c\":[1,2]};");
  EXPECT_EQ(one("a: \"x\\0y\"\n"), "{\"a\":\"x\\u0000y\"};");  // an escaped NUL is content
  std::string huge(20 * 1000 * 1000, 'x');
  auto big = ParseYamlDocuments("a: " + huge + "\n");
  ASSERT_TRUE(big.ok()) << big.status().message();
  EXPECT_EQ((*big)[0]["a"].get<std::string>().size(), huge.size());
  // Deep nesting is refused by our limit long before libyaml's (heap-allocated) stacks matter.
  std::string deep;
  for (int i = 0; i < 200000; ++i) deep += "- ";
  EXPECT_EQ(one(deep), "error: YAML input is nested deeper than 512 levels");
  std::string just_deep_enough = std::string(511, '[') + std::string(511, ']');
  EXPECT_TRUE(ParseYamlDocuments(just_deep_enough).ok());
}

TEST(YamlJsonTest, ErrorsNameTheParsersProblem) {
  EXPECT_EQ(ParseYamlDocuments("a: [b\n").status().message(),
            "invalid YAML: line 2, column 1: did not find expected ',' or ']' (while parsing a "
            "flow sequence)");
  EXPECT_EQ(ParseYamlDocuments("a: *x\n").status().message(),
            "invalid YAML: line 1, column 4: unknown anchor 'x' referenced");
  EXPECT_EQ(ParseYamlDocuments("a: &x [*x]\n").status().message(),
            "invalid YAML: line 1, column 8: anchor 'x' value contains itself");
  // Anchors belong to their document.
  EXPECT_EQ(ParseYamlDocuments("a: &x 1\n---\nb: *x\n").status().message(),
            "invalid YAML: line 3, column 4: unknown anchor 'x' referenced");
  EXPECT_EQ(ParseYamlDocuments("a: &x 1\nb: &x 2\nc: *x\n")->at(0).dump(),
            R"({"a":1,"b":2,"c":2})");
}

// Merge keys are not merged: "<<" is an ordinary key, as it always was here.
TEST(YamlJsonTest, MergeKeyIsAnOrdinaryKey) {
  auto docs = ParseYamlDocuments("base: &b {x: 1}\nd:\n  <<: *b\n  y: 2\n");
  ASSERT_TRUE(docs.ok()) << docs.status().message();
  EXPECT_EQ((*docs)[0].dump(), R"({"base":{"x":1},"d":{"<<":{"x":1},"y":2}})");
}

}  // namespace
}  // namespace flexcsi
