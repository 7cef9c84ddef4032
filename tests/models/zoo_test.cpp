// The model zoo: the published shapes, custom specs, and the registry every front end resolves
// model names through.

#include <gtest/gtest.h>

#include <algorithm>

#include "syntorch/models/gpt.hpp"
#include "syntorch/models/registry.hpp"

namespace {

using namespace syntorch;

TEST(ModelZoo, Gpt3FamilyMatchesThePaper) {
  const auto& family = models::gpt3_family();
  ASSERT_EQ(family.size(), 8u);
  const auto& big = family.back();
  EXPECT_EQ(big.name, "gpt3-175b");
  EXPECT_EQ(big.layers, 96);
  EXPECT_EQ(big.hidden, 12288);
  EXPECT_EQ(big.heads, 96);
  EXPECT_EQ(big.head_dim, 128);
  EXPECT_NEAR(big.parameters() / 1e9, 175, 1.5);
  EXPECT_NEAR(family[0].parameters() / 1e6, 125, 2);
  EXPECT_NEAR(family[5].parameters() / 1e9, 6.7, 0.1);
}

TEST(ModelZoo, CustomShapesParseAndBadOnesNameTheProblem) {
  Diagnostics d;
  auto m = models::parse_gpt_config("gpt:layers=44,hidden=6144,heads=48,vocab=51200", d, "--model");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->head_dim, 128);
  EXPECT_EQ(m->ffn, 4 * 6144);
  for (const auto& [spec, message] : std::vector<std::pair<std::string, std::string>>{
           {"gpt3-17b", "did you mean \"gpt3-13b\""},
           {"gpt:layers=2,hidden=64,heads=4", "missing vocab="},
           {"gpt:layers=2,hidden=64,heads=4,vocab=10,depth=3", "unknown key \"depth\""},
           {"gpt:layers=x,hidden=64,heads=4,vocab=10", "layers expects a positive integer, got \"x\""},
           {"gpt:layers=2,hidden=65,heads=4,vocab=10", "must be a multiple of heads"},
           {"gpt:layers=2,layers=3,hidden=64,heads=4,vocab=10", "layers given twice"},
           {"gpt:layers=1000000000,hidden=64,heads=4,vocab=10", "layers must be at most 4096, got 1000000000"}}) {
    Diagnostics bad;
    EXPECT_FALSE(models::parse_model(spec, bad, "--model")) << spec;
    EXPECT_NE(bad.to_string().find(message), std::string::npos) << bad.to_string();
  }
}

TEST(ModelRegistry, EveryZooNameResolvesToAModelOfThatName) {
  const std::vector<std::string> names = models::model_names();
  ASSERT_FALSE(names.empty());
  for (const models::ModelEntry* entry : models::model_registry()) {
    const std::vector<std::string> zoo = entry->zoo();
    if (entry->custom_form.empty()) {
      EXPECT_FALSE(zoo.empty()) << entry->family;
    }
    for (const std::string& name : zoo) {
      Diagnostics d;
      auto m = models::parse_model(name, d, "test");
      ASSERT_TRUE(m) << name << ": " << d.to_string();
      EXPECT_EQ(m->name(), name);
      EXPECT_GT(m->parameters(), 0) << name;
      EXPECT_GT(m->context(), 0) << name;
      EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
    }
  }
}

TEST(ModelRegistry, AnUnknownNameListsTheZooOnce) {
  Diagnostics d;
  EXPECT_FALSE(models::parse_model("llama-7b", d, "--model"));
  ASSERT_EQ(d.size(), 1u) << d.to_string();
  const std::string text = d.to_string();
  EXPECT_NE(text.find("--model"), std::string::npos) << text;
  EXPECT_NE(text.find("unknown model \"llama-7b\""), std::string::npos) << text;
  EXPECT_NE(text.find("gpt3-175b"), std::string::npos) << text;
  EXPECT_NE(text.find("gpt:layers=L,hidden=H,heads=N,vocab=V"), std::string::npos) << text;
}

TEST(ModelRegistry, AModelChecksItsOwnLayout) {
  Diagnostics d;
  auto m = models::parse_model("gpt3-125m", d, "test");
  ASSERT_TRUE(m);
  m->check({8, 5, 1, 128}, d, "flags");  // 12 heads over tp 8; 12 layers over pp 5
  const std::string text = d.to_string();
  EXPECT_NE(text.find("12 heads, which do not split over tp 8"), std::string::npos) << text;
  EXPECT_NE(text.find("12 layers, which do not split evenly over pp 5"), std::string::npos) << text;
}

}  // namespace
