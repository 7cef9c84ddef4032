#pragma once
// The component types a config may use. Each type is one file in this folder with its parser;
// registry.cpp lists them. A parser declares every parameter it reads through the ObjectReader,
// so unknown keys are rejected in one place.

#include <span>
#include <string_view>

#include "../json_reader.hpp"
#include "syntorch/hw/config.hpp"
#include "syntorch/hw/config_loader.hpp"

namespace syntorch::hw::detail {

using ComponentParser = void (*)(ObjectReader& reader, ComponentSpec& out);

struct ComponentType {
  std::string_view name;
  std::string_view summary;
  ComponentParser parse;
};

std::span<const ComponentType> component_types();

void parse_compute(ObjectReader& r, ComponentSpec& out);
void parse_memory(ObjectReader& r, ComponentSpec& out);
void parse_cache(ObjectReader& r, ComponentSpec& out);
void parse_host(ObjectReader& r, ComponentSpec& out);
void parse_link(ObjectReader& r, ComponentSpec& out);
void parse_switch(ObjectReader& r, ComponentSpec& out);
void parse_group(ObjectReader& r, ComponentSpec& out);
void parse_collective(ObjectReader& r, ComponentSpec& out);

// Parses a `components` map (used by the top level and by groups).
void parse_components(const Json& map, const std::string& pointer, ParseContext& ctx, GroupSpec& out);

// Parses a whole (merged) config document.
HardwareConfig parse_config(const Json& doc, ParseContext& ctx);

// Reads `file` (with extends), applies overrides and parses; problems go to ctx.
HardwareConfig load_and_parse(const std::string& file, const std::vector<Override>& overrides, ParseContext& ctx);

}  // namespace syntorch::hw::detail
