#include <gtest/gtest.h>

#include "syntorch/base/diagnostics.hpp"
#include "syntorch/base/units.hpp"

namespace syntorch {
namespace {

TEST(Units, ParsesDecimalAndBinaryPrefixes) {
  EXPECT_DOUBLE_EQ(*units::parse_bandwidth_bytes_per_s("3.35 TB/s"), 3.35e12);
  EXPECT_DOUBLE_EQ(*units::parse_bandwidth_bytes_per_s("64GB/s"), 64e9);
  EXPECT_DOUBLE_EQ(*units::parse_bandwidth_bytes_per_s("400 Gb/s"), 50e9);
  EXPECT_DOUBLE_EQ(*units::parse_bandwidth_bytes_per_s("1 GiB/s"), 1073741824.0);
  EXPECT_DOUBLE_EQ(*units::parse_size_bytes("80 GiB"), 80.0 * 1073741824.0);
  EXPECT_DOUBLE_EQ(*units::parse_size_bytes("50 MB"), 50e6);
  EXPECT_DOUBLE_EQ(*units::parse_frequency_hz("1.83 GHz"), 1.83e9);
  EXPECT_DOUBLE_EQ(*units::parse_time_s("2 us"), 2e-6);
  EXPECT_DOUBLE_EQ(*units::parse_time_s("500 ns"), 500e-9);
  EXPECT_DOUBLE_EQ(*units::parse_flops_per_s("989.4 TFLOP/s"), 989.4e12);
}

TEST(Units, RejectsMissingOrWrongUnits) {
  EXPECT_FALSE(units::parse_bandwidth_bytes_per_s("3350"));
  EXPECT_FALSE(units::parse_bandwidth_bytes_per_s("3.35 TB"));
  EXPECT_FALSE(units::parse_size_bytes("80 GiB/s"));
  EXPECT_FALSE(units::parse_frequency_hz("fast"));
  EXPECT_FALSE(units::parse_time_s("2 parsecs"));
  EXPECT_FALSE(units::parse_time_s(""));
}

TEST(Units, KeepsTheSignSoValidatorsCanRejectIt) {
  EXPECT_DOUBLE_EQ(*units::parse_bandwidth_bytes_per_s("-5 GB/s"), -5e9);
}

TEST(Units, FormatsWithThreeSignificantDigits) {
  EXPECT_EQ(units::format_bandwidth(3.35e12), "3.35 TB/s");
  EXPECT_EQ(units::format_size(80.0 * 1073741824.0), "80 GiB");
  EXPECT_EQ(units::format_size(80e9), "80 GB");
  EXPECT_EQ(units::format_size(512), "512 B");
  EXPECT_EQ(units::format_frequency(1.83e9), "1.83 GHz");
  EXPECT_EQ(units::format_time_ps(2'000'000), "2 us");
  EXPECT_EQ(units::format_flops(989.4e12), "989 TFLOP/s");
}

TEST(Units, SecondsToPicosecondsRounds) {
  EXPECT_EQ(units::seconds_to_ps(2e-6), 2'000'000u);
  EXPECT_EQ(units::seconds_to_ps(-1.0), 0u);
}

TEST(Diagnostics, DidYouMeanFindsCloseKeys) {
  const std::vector<std::string> keys{"bandwidth", "latency", "size"};
  EXPECT_EQ(closest_match("bandwith", keys), "bandwidth");
  EXPECT_EQ(closest_match("latncy", keys), "latency");
  EXPECT_EQ(closest_match("colour", keys), "");
}

TEST(Diagnostics, DidYouMeanLooksPastVersionSeparatorsAndSpelling) {
  // Closer by edit distance than the one meant: "llama3-70b" is 2 edits from "llama3-405b".
  const std::vector<std::string> zoo{"llama3-8b", "llama3-70b", "llama3.1-8b", "llama3.1-70b", "llama3.1-405b",
                                     "gpt3-6.7b", "gpt3-175b"};
  EXPECT_EQ(closest_match("llama3-405b", zoo), "llama3.1-405b");
  EXPECT_EQ(closest_match("Llama-3.1-405B", zoo), "llama3.1-405b");
  EXPECT_EQ(closest_match("llama_3_70b", zoo), "llama3-70b");  // the exact spelling beats another version
  EXPECT_EQ(closest_match("gpt3-6b", zoo), "gpt3-6.7b");
  EXPECT_EQ(closest_match("GPT3-175B", zoo), "gpt3-175b");
  EXPECT_EQ(closest_match("mixtral", zoo), "");
  EXPECT_EQ(closest_match(std::string(1'000'000, 'x'), zoo), "");  // a pasted file: no quadratic work
  EXPECT_EQ(did_you_mean("llama3-405b", zoo), ", did you mean \"llama3.1-405b\"?");
}

TEST(Diagnostics, FormatsFilePathAndMessage) {
  Diagnostics d;
  d.error("hw_configs/h100.json", "/components/hbm/bandwidth", "expected a bandwidth");
  d.error("--set", "", "bad");
  EXPECT_EQ(d.to_string(), "hw_configs/h100.json:/components/hbm/bandwidth: expected a bandwidth\n--set: bad\n");
}

TEST(Diagnostics, KeepsTheFirstHundredProblemsAndCountsTheRest) {
  Diagnostics d;
  for (int i = 0; i < 1000; ++i) d.error(std::string(1 << 16, 'w'), "", "problem " + std::to_string(i));
  EXPECT_EQ(d.size(), 1000u);  // every problem counts
  EXPECT_EQ(d.items().size(), Diagnostics::kMaxKept);
  const std::string text = d.to_string();
  EXPECT_NE(text.find("problem 99\n"), std::string::npos);
  EXPECT_EQ(text.find("problem 100\n"), std::string::npos);
  EXPECT_NE(text.find("... and 900 more problems\n"), std::string::npos);
  EXPECT_LT(text.size(), 64u << 10);  // each where cut to 300 bytes
  Diagnostics merged;
  merged.append(d);
  EXPECT_EQ(merged.size(), 1000u);
}

TEST(Diagnostics, ClipCutsAtACharacterAndSaysHowMuchWasLeft) {
  EXPECT_EQ(clip("short", 10), "short");
  EXPECT_EQ(clip("abcdefghij", 4), "abcd... (6 more bytes)");
  EXPECT_EQ(clip("ab\xc3\xa9" "cd", 3), "ab... (4 more bytes)");  // not half of the é
}

}  // namespace
}  // namespace syntorch
