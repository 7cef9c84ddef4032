// The design's own hardware JSON: a group that lists its members by name, a compute unit with
// metadata.ops_supported, a memory with start_address and a size in plain bytes. The forms are
// accepted; what a simulation still lacks (clocks, bandwidths) stays an error naming the field.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "syntorch/hw/machine.hpp"

namespace syntorch::hw {
namespace {

namespace fs = std::filesystem;

std::string write_temp(const std::string& name, const std::string& text) {
  const fs::path dir = fs::temp_directory_path() / "syntorch_design_form_test";
  fs::create_directories(dir);
  const fs::path p = dir / name;
  std::ofstream(p) << text;
  return p.string();
}

// Every problem Machine::load reports for `text`, one per line.
std::string problems(const std::string& name, const std::string& text) {
  try {
    Machine::load(write_temp(name, text));
  } catch (const InputError& e) {
    return e.diagnostics().to_string();
  }
  return "";
}

TEST(DesignForm, TheReadmeExampleIsRejectedOnlyForWhatASimulationLacks) {
  const std::string p = problems("readme.json", R"({
    "name": "Simple GPU",
    "components": {
      "gpu": {"type": "group", "components": ["sm_group", "memory_hierarchy"]},
      "sm0": {"type": "compute", "metadata": {"ops_supported": ["matmul", "add", "mul"]}},
      "hbm": {"type": "memory", "start_address": 0, "size": 16777216}
    }})");
  // The example lists members it never writes, and gives no clock, count, throughput or bandwidth.
  EXPECT_NE(p.find("/components/gpu/components/0: names \"sm_group\", which is not a component of /components"),
            std::string::npos) << p;
  EXPECT_NE(p.find("/components/sm0: missing required field \"clock\""), std::string::npos) << p;
  EXPECT_NE(p.find("/components/sm0: missing required field \"vector_ops_per_cycle\""), std::string::npos) << p;
  EXPECT_NE(p.find("/components/hbm: missing required field \"bandwidth\""), std::string::npos) << p;
  // Its forms are not the problem.
  EXPECT_EQ(p.find("metadata"), std::string::npos) << p;
  EXPECT_EQ(p.find("start_address"), std::string::npos) << p;
  EXPECT_EQ(p.find("/components/hbm/size"), std::string::npos) << p;
  EXPECT_EQ(p.find("expected an object mapping"), std::string::npos) << p;
}

TEST(DesignForm, ListedMembersMakeTheDeviceAndKeepTheirOwnFields) {
  const Machine m = Machine::load(write_temp("listed.json", R"({
    "name": "listed",
    "components": {
      "gpu": {"type": "group", "count": 2, "components": ["sm", "hbm"]},
      "nvlink": {"type": "link", "bandwidth": "100 GB/s", "endpoints": ["gpu[0]", "gpu[1]"]},
      "sm": {"type": "compute", "count": 4, "clock": "1 GHz", "vector_ops_per_cycle": {"fp32": 128},
             "metadata": {"ops_supported": ["matmul", "add"]}},
      "hbm": {"type": "memory", "start_address": "0x100000000", "size": 16777216, "bandwidth": "100 GB/s"}
    }})"));
  ASSERT_EQ(m.devices().size(), 2u);
  const Device& d = m.devices()[1];
  EXPECT_EQ(d.name, "gpu[1]");
  EXPECT_EQ(d.compute.units, 4u);
  EXPECT_DOUBLE_EQ(d.memory.size_bytes, 16777216.0);
  EXPECT_EQ(d.memory.start_address, 0x100000000ULL);
  EXPECT_EQ(d.compute.ops_supported, (std::vector<std::string>{"matmul", "add"}));
  EXPECT_EQ(d.compute.ops_supported_pointer, "/components/sm/metadata/ops_supported");
}

TEST(DesignForm, MembersMustExistBelongToOneGroupAndNotFormACycle) {
  const std::string p = problems("cycles.json", R"({
    "name": "bad lists",
    "components": {
      "a": {"type": "group", "components": ["b", "hbn", 3, "a"]},
      "b": {"type": "group", "components": ["a"]},
      "c": {"type": "group", "components": ["hbm"]},
      "d": {"type": "group", "components": ["hbm"]},
      "e": {"type": "group", "components": []},
      "hbm": {"type": "memory", "size": 1024, "bandwidth": "1 TB/s"}
    }})");
  EXPECT_NE(p.find("/components/a/components/1: names \"hbn\", which is not a component of /components, did you "
                   "mean \"hbm\"?"), std::string::npos) << p;
  EXPECT_NE(p.find("/components/a/components/2: expected the name of a component written beside the group, got 3"),
            std::string::npos) << p;
  EXPECT_NE(p.find("/components/a/components/3: a group cannot list itself"), std::string::npos) << p;
  EXPECT_NE(p.find("groups list each other in a cycle"), std::string::npos) << p;
  EXPECT_NE(p.find("/components/d/components/0: \"hbm\" is already listed by group \"c\""), std::string::npos) << p;
  EXPECT_NE(p.find("/components/e/components: a group needs at least one component"), std::string::npos) << p;
}

TEST(DesignForm, SizesInBytesAndAddressesAreCheckedToo) {
  const std::string p = problems("numbers.json", R"({
    "name": "numbers",
    "components": {
      "gpu": {"type": "group", "components": {
        "sm": {"type": "compute", "count": 1, "clock": "1 GHz", "vector_ops_per_cycle": {"fp32": 128},
               "shared_memory": 1.5, "metadata": {"ops": ["add"]}},
        "hbm": {"type": "memory", "size": -4, "bandwidth": "1 TB/s", "start_address": "somewhere"}}},
      "gpu2": {"type": "group", "components": {
        "sm": {"type": "compute", "count": 1, "clock": "1 GHz", "vector_ops_per_cycle": {"fp32": 128},
               "metadata": {"ops_supported": []}},
        "hbm": {"type": "memory", "size": "1 PiB", "bandwidth": "1 TB/s", "start_address": 18446744073709551615}}}
    }})");
  EXPECT_NE(p.find("/components/gpu/components/sm/shared_memory: expected a size like \"80 GiB\" or a whole number of "
                   "bytes, got 1.5"), std::string::npos) << p;
  EXPECT_NE(p.find("/components/gpu/components/hbm/size: size must be positive"), std::string::npos) << p;
  EXPECT_NE(p.find("/components/gpu/components/hbm/start_address: expected an address"), std::string::npos) << p;
  EXPECT_NE(p.find("/components/gpu/components/sm/metadata/ops: unknown key \"ops\""), std::string::npos) << p;
  EXPECT_NE(p.find("/components/gpu2/components/sm/metadata/ops_supported: expected at least one op name"),
            std::string::npos) << p;
  EXPECT_NE(p.find("/components/gpu2/components/hbm/start_address: the memory would end past the 64-bit address space"),
            std::string::npos) << p;
}

}  // namespace
}  // namespace syntorch::hw
