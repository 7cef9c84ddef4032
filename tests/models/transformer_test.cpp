// The Llama-family zoo and Hugging Face configs: published shapes to the weight, and a
// config.json that is wrong or unmodelled named by file and key.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "syntorch/models/gptj.hpp"
#include "syntorch/models/hf_config.hpp"
#include "syntorch/models/llama.hpp"
#include "syntorch/models/registry.hpp"

namespace {

using namespace syntorch;
namespace fs = std::filesystem;

std::string model_dir(const std::string& name) { return std::string(SYNTORCH_SOURCE_DIR) + "/models/" + name; }

const models::TransformerConfig& zoo(const std::string& name) {
  for (const auto& c : models::llama_family()) {
    if (c.name == name) return c;
  }
  throw std::runtime_error("not in the zoo: " + name);
}

TEST(LlamaZoo, ParameterCountsMatchTheReleasedCheckpoints) {
  // The weight counts of the released checkpoints (safetensors metadata), to the weight.
  const std::map<std::string, double> released{
      {"llama2-7b", 6738415616},      {"llama2-13b", 13015864320},   {"llama2-70b", 68976648192},
      {"llama3-8b", 8030261248},      {"llama3-70b", 70553706496},   {"llama3.1-405b", 405853388800},
      {"llama3.2-1b", 1235814400},    {"llama3.2-3b", 3212749824},   {"mistral-7b", 7248023552},
      {"qwen2.5-7b", 7615616512}};
  for (const auto& [name, count] : released) EXPECT_EQ(zoo(name).parameters(), count) << name;
  // GPT-J's model card gives 6,053,381,344 for the JAX checkpoint; the PyTorch modules (no
  // attention biases, biased MLP and head) hold 6,050,882,784.
  EXPECT_EQ(models::gptj_6b().parameters(), 6050882784);
  EXPECT_NEAR(models::gptj_6b().parameters(), 6053381344, 0.001 * 6053381344);
}

TEST(LlamaZoo, GroupedQueryAttentionKeepsKvHeadsAndReplicatesThemPastTp) {
  const auto& c = zoo("llama2-70b");
  EXPECT_EQ(c.kv_heads, 8);
  EXPECT_EQ(c.local_kv_heads(1), 8);
  EXPECT_EQ(c.local_kv_heads(8), 1);
  EXPECT_EQ(c.local_kv_heads(16), 1);  // replicated: each rank still holds one
  Diagnostics d;
  auto m = models::parse_model("llama2-70b", d, "test");
  ASSERT_TRUE(m);
  m->check({16, 1, 1, 128}, d, "flags");
  EXPECT_TRUE(d.empty()) << d.to_string();  // 64 heads over 16; 8 K/V heads replicate twice
  auto q = models::parse_model("qwen2.5-7b", d, "test");
  ASSERT_TRUE(q);
  q->check({8, 1, 1, 128}, d, "flags");
  EXPECT_NE(d.to_string().find("28 heads, which do not split over tp 8"), std::string::npos) << d.to_string();
}

TEST(LlamaZoo, CustomShapesParseAndBadOnesNameTheProblem) {
  Diagnostics d;
  auto m = models::parse_model("llama:layers=4,hidden=512,heads=8,kv_heads=2,ffn=1376,vocab=1000", d, "--model");
  ASSERT_TRUE(m) << d.to_string();
  const auto& c = dynamic_cast<const models::TransformerModel&>(*m).config();
  EXPECT_EQ(c.head_dim, 64);
  EXPECT_EQ(c.kv_heads, 2);
  EXPECT_EQ(c.context, 4096);
  for (const auto& [spec, message] : std::vector<std::pair<std::string, std::string>>{
           {"llama2-8b", "did you mean"},
           {"llama:layers=2,hidden=64,heads=4,ffn=128", "missing vocab="},
           {"llama:layers=2,hidden=64,heads=4,ffn=128,vocab=10,kv_heads=3", "4 attention heads are not a multiple of 3"},
           {"llama:layers=2,hidden=64,heads=4,ffn=128,vocab=10,expert=8", "unknown key \"expert\""},
           {"llama:layers=2,hidden=64,heads=4,ffn=128,vocab=10,experts=8,top_k=9", "experts per token must be in [1, experts = 8]"},
           {"llama:layers=2,hidden=66,heads=4,ffn=128,vocab=10", "must be a multiple of heads"}}) {
    Diagnostics bad;
    EXPECT_FALSE(models::parse_model(spec, bad, "--model")) << spec;
    EXPECT_NE(bad.to_string().find(message), std::string::npos) << spec << ": " << bad.to_string();
  }
}

TEST(HfConfig, BundledConfigsReadAsTheZooModels) {
  for (const std::string name : {"llama2-7b", "llama3-8b", "mistral-7b", "qwen2.5-7b"}) {
    Diagnostics d;
    auto c = models::load_hf_config(model_dir(name) + "/config.json", d);
    ASSERT_TRUE(c) << d.to_string();
    models::TransformerConfig expected = zoo(name);
    expected.name = c->name;
    EXPECT_EQ(c->parameters(), expected.parameters()) << name;
    EXPECT_EQ(c->architecture, expected.architecture) << name;
    EXPECT_EQ(c->kv_heads, expected.kv_heads) << name;
    EXPECT_EQ(c->context, expected.context) << name;
    EXPECT_EQ(c->qkv_bias, expected.qkv_bias) << name;
  }
  Diagnostics d;
  auto gptj = models::load_hf_config(model_dir("gptj-6b"), d);  // a folder holding config.json
  ASSERT_TRUE(gptj) << d.to_string();
  EXPECT_EQ(gptj->parameters(), models::gptj_6b().parameters());
  EXPECT_EQ(gptj->rotary_dim, 64);
  auto gpt2 = models::load_hf_config(model_dir("gpt2"), d);
  ASSERT_TRUE(gpt2) << d.to_string();
  EXPECT_EQ(gpt2->parameters(), 124439808);  // GPT-2 small, tied head
}

class HfConfigErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("syntorch_hf_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // The problems of loading `text` as a config.json.
  std::string problems(const std::string& text) {
    const std::string file = (dir_ / "config.json").string();
    std::ofstream(file) << text;
    Diagnostics d;
    EXPECT_FALSE(models::load_hf_config(file, d)) << text;
    EXPECT_NE(d.to_string().find(file), std::string::npos) << d.to_string();
    return d.to_string();
  }

  fs::path dir_;
};

TEST_F(HfConfigErrors, NameTheFileTheKeyAndWhatWasExpected) {
  const std::string llama = R"("hidden_size": 64, "num_attention_heads": 4, "intermediate_size": 128,
      "vocab_size": 100, "max_position_embeddings": 256)";
  EXPECT_NE(problems(R"({"architectures": ["LlamaForCausalLM"], )" + llama + "}").find("/num_hidden_layers: missing"),
            std::string::npos);
  EXPECT_NE(problems(R"({"architectures": ["LlamaForCausalLM"], "num_hidden_layers": "2", )" + llama + "}")
                .find("/num_hidden_layers: expected a positive integer, got \"2\""),
            std::string::npos);
  EXPECT_NE(problems(R"({"architectures": ["LlamaForCausalLM"], "num_hidden_layers": 2, "hidden_act": "relu", )" +
                     llama + "}")
                .find("/hidden_act: activation \"relu\" is not modelled"),
            std::string::npos);
  EXPECT_NE(problems(R"({"architectures": ["LlamaForCausalLM"], "num_hidden_layers": 2, "num_local_experts": 8, )" +
                     llama + "}")
                .find("/num_local_experts: a mixture-of-experts architecture the simulator does not model"),
            std::string::npos);
  EXPECT_NE(problems(R"({"architectures": ["LlamaForCausalLM"], "num_hidden_layers": 2, "num_key_value_heads": 3, )" +
                     llama + "}")
                .find("not a multiple of 3 key/value heads"),
            std::string::npos);
  EXPECT_NE(problems(R"({"architectures": ["LlamaForCausalLn"]})").find("did you mean \"LlamaForCausalLM\""),
            std::string::npos);
  EXPECT_NE(problems(R"({"model_type": "qwen2_moe"})").find("/model_type: \"qwen2_moe\" is a mixture-of-experts"),
            std::string::npos);
  EXPECT_NE(problems(R"({"architectures": ["MixtralForCausalLM"], "num_hidden_layers": 2, "num_local_experts": 2, "num_experts_per_tok": 3, )" +
                     llama + "}")
                .find("/num_experts_per_tok: 3 experts per token, but only 2 experts"),
            std::string::npos);
  EXPECT_NE(problems(R"({"hidden_size": 64})").find("/architectures: missing"), std::string::npos);
  EXPECT_NE(problems("{\"architectures\": [\n  \"LlamaForCausalLM\"").find("malformed JSON at line 2"),
            std::string::npos);
  EXPECT_NE(problems("[1, 2]").find("expected a JSON object at the top level"), std::string::npos);
}

TEST(HfConfig, TheMixtralConfigReadsAsTheZoosMixtral) {
  Diagnostics d;
  auto c = models::load_hf_config(model_dir("mixtral-8x7b"), d);
  ASSERT_TRUE(c) << d.to_string();
  const auto& zoo_mixtral = zoo("mixtral-8x7b");
  EXPECT_EQ(c->parameters(), zoo_mixtral.parameters());
  EXPECT_EQ(c->experts, 8);
  EXPECT_EQ(c->experts_per_token, 2);
  EXPECT_EQ(c->architecture, "MixtralForCausalLM");
  Diagnostics missing;
  EXPECT_FALSE(models::parse_model("no/such/config.json", missing, "--model"));
  EXPECT_NE(missing.to_string().find("no/such/config.json"), std::string::npos) << missing.to_string();
}

TEST(MixtralZoo, ParameterCountsMatchTheReleasedCheckpoints) {
  // Mixtral 8x7B's released checkpoint holds 46,702,792,704 weights; Mistral AI gives 8x22B as
  // 141 B in all (39 B active).
  EXPECT_EQ(zoo("mixtral-8x7b").parameters(), 46702792704);
  EXPECT_NEAR(zoo("mixtral-8x22b").parameters(), 141e9, 0.005 * 141e9);
}

}  // namespace
