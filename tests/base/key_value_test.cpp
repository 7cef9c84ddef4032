#include <gtest/gtest.h>

#include "syntorch/base/key_value.hpp"

namespace {

using namespace syntorch;

TEST(KeyValue, ItemsSplitAtTheFirstEqualsInOrder) {
  Diagnostics d;
  const auto items = parse_key_values("b=2,a=x=y,,c=", {}, d, "spec");
  EXPECT_TRUE(d.empty()) << d.to_string();
  ASSERT_EQ(items.size(), 3u);
  EXPECT_EQ(items[0].key, "b");
  EXPECT_EQ(items[1].value, "x=y");
  EXPECT_EQ(items[2].key, "c");
  EXPECT_EQ(items[2].value, "");
}

TEST(KeyValue, WhitespaceSeparatedRunsCountAsOne) {
  Diagnostics d;
  KeyValueFormat f;
  f.separator = ' ';
  const auto items = parse_key_values("  m=1 \t n=2  ", f, d, "row");
  EXPECT_TRUE(d.empty());
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[1].key, "n");
}

TEST(KeyValue, MalformedItemsAndRepeatedKeysAreReportedAndLeftOut) {
  Diagnostics d;
  KeyValueFormat f;
  f.context = "model \"x\": ";
  const auto items = parse_key_values("layers=2,layers=3,oops,=4", f, d, "--model");
  ASSERT_EQ(items.size(), 1u);
  EXPECT_EQ(items[0].value, "2");
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d.items()[0].to_string(), "--model: model \"x\": layers given twice");
  EXPECT_EQ(d.items()[1].to_string(), "--model: model \"x\": expected key=value, got \"oops\"");
  EXPECT_EQ(d.items()[2].to_string(), "--model: model \"x\": expected key=value, got \"=4\"");
  Diagnostics rows;
  f = {};
  f.keys_are_paths = true;
  parse_key_values("m=1,m=2", f, rows, "file row B1");
  EXPECT_EQ(rows.to_string(), "file row B1:m: given twice\n");
}

TEST(Diagnostics, LongEchoedTextIsCut) {
  Diagnostics d;
  d.error("f", std::string(10'000, 'k'), "unknown key \"" + std::string(2 << 20, 'x') + "\"");
  const std::string text = d.to_string();
  EXPECT_LT(text.size(), 3'000u);
  EXPECT_NE(text.find("more bytes)"), std::string::npos);
}

}  // namespace
