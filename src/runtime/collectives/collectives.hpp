#pragma once
// Collective algorithms lowered to transfer DAGs over the routed topology, one file each. Data
// moves in pipelined chunks: a segment is split into k chunks (k from the library's chunk size,
// at most kMaxChunks simulated), and chunk j of a step may go as soon as chunk j of the previous
// step has arrived, so steps overlap as in NCCL's pipelined protocols. Point-to-point protocols
// pay their synchronisation on every chunk, the previous chunk of a channel included: a channel's
// CTA waits for a free slot, copies, fences and raises a flag before it takes the next chunk.
// In-switch reduction issues multicast loads and stores from many warps without flags per chunk,
// so its chunks only follow each other.

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "syntorch/hw/machine.hpp"
#include "syntorch/runtime/executor.hpp"
#include "syntorch/runtime/op.hpp"
#include "syntorch/runtime/policy.hpp"

namespace syntorch::runtime::detail {

inline constexpr std::uint64_t kMaxChunks = 32;
// In-switch reduction pipelines four stages without per-chunk synchronisation; its last chunk's
// trip through them is not hidden, so it is cut finer to keep that tail near the library's.
inline constexpr std::uint64_t kMaxSwitchChunks = 128;

// Algorithms build and estimate in one protocol of the library: transfers carry payload bytes and
// wire rate caps; the dispatcher scales the bytes to the wire (1 / payload) once a plan is built,
// and estimates count payload bytes at `payload` x the wire rate.
struct CollectiveContext {
  const hw::Machine& machine;
  std::vector<std::uint32_t> endpoints;  // of the participating devices, in rank order
  hw::CollectiveSpec library;
  hw::CollectiveProtocol protocol;  // the one being built or estimated
  // nodes_of's answer, found once per context (it compares every pair's routes).
  mutable std::optional<std::vector<std::vector<std::uint32_t>>> nodes;
};

// Chunks a step of `bytes` is pipelined in: one per `channels` x `chunk` bytes, at most `max_chunks`.
std::uint64_t chunks_for(double bytes, const hw::CollectiveProtocol& p, std::uint64_t max_chunks = kMaxChunks);
// The wire rate one transfer of a step of `bytes` can reach: one channel per chunk the step holds,
// of the library's channels shared `ways` ways (between rings that run at once).
double channel_cap(double bytes, const hw::CollectiveProtocol& p, std::uint32_t ways = 1);
// The payload rate of a route's or channel's wire rate in the context's protocol.
inline double payload_rate(const CollectiveContext& cx, double wire_bytes_per_s) {
  return wire_bytes_per_s * cx.protocol.payload;
}


// The achievable bandwidth of the route between ranks `from` and `to` (positions in cx).
double route_bytes_per_s(const CollectiveContext& cx, std::uint32_t from, std::uint32_t to);
// The ranks grouped into nodes: ranks joined by the topology's fastest tier of routes, in rank
// order. Empty when that is not a clean partition into nodes of equal size. Found on first use
// and kept in the context.
const std::vector<std::vector<std::uint32_t>>& nodes_of(const CollectiveContext& cx);
// NCCL's double binary tree over `n` nodes (the construction of its trees.cc): in tree 0 node 0 is
// the root with one child, the largest power of two below n, and below it node r, whose lowest set
// bit is b, has the children r - b/2 and the first of r + b/2, r + b/4, ... below n. Tree 1 is
// tree 0 mirrored (node n-1-r in r's place) for even n and shifted by one for odd n, so that a node
// inner in one tree is a leaf in the other (for odd n, all but node 0).
struct NodeTree {
  std::uint32_t root = 0;
  std::vector<std::vector<std::uint32_t>> children;  // per node
  std::vector<std::uint32_t> parent;                 // per node (the root's is itself)
  std::vector<std::uint32_t> post_order;             // every node after its children
  std::uint32_t depth = 0;                           // edges from the root to the deepest leaf
  bool has_parent(std::uint32_t v) const { return parent[v] != v; }
  // Edges at a node: its children and its parent.
  std::size_t edges(std::uint32_t v) const { return children[v].size() + (has_parent(v) ? 1 : 0); }
};

NodeTree node_tree(std::uint32_t n, std::uint32_t which);
// The time the busiest link (each direction apart) takes to carry the transfers' bytes at its
// achievable bandwidth.
double busiest_link_s(const CollectiveContext& cx, std::span<const Transfer> transfers);
// A switch with in-switch reduction on the route from the first of `ranks` to each other one.
std::optional<std::uint32_t> reducing_switch(const CollectiveContext& cx, std::span<const std::uint32_t> ranks);

// Ranks in nodes of equal size, each node with a switch on its ranks' routes that can reduce.
struct SwitchLayout {
  std::vector<std::vector<std::uint32_t>> nodes;  // ranks per node
  std::vector<std::uint32_t> switch_endpoint;      // per node
};
// Several such nodes (nullopt where the ranks do not form them).
std::optional<SwitchLayout> switch_layout(const CollectiveContext& cx);
// All-reduce through each node's switch (reduce-scatter, a double binary tree along each rail
// between nodes, all-gather by multicast), and its alpha-beta estimate; in_switch.cpp.
CollectivePlan switch_allreduce(const OpDesc& op, const CollectiveContext& cx, const SwitchLayout& layout,
                                std::string name);
double estimate_switch_allreduce_s(const OpDesc& op, const CollectiveContext& cx, const SwitchLayout& layout);

// The slowest achievable bandwidth and the largest latency between consecutive ranks.
double ring_bandwidth(const CollectiveContext& cx);
double ring_hop_latency(const CollectiveContext& cx);

// The rings a ring collective runs at once, each an order of the ranks (positions in cx) carrying
// an equal share of every segment. One ring in rank order, unless the ranks form several nodes of
// L > 1 ranks: then min(L, channels) rings, ring r entering even nodes at local rank r (leaving at
// r-1) and odd nodes at r-1 backwards (leaving at r), so that each crossing joins ranks of one
// local index (one rail; with an odd number of nodes the last node's back to the first changes
// rail) and the rings cross on different ones: every rank's network link carries a share at once,
// as NCCL's channels spread a ring over a node's NICs.
using RingOrders = std::vector<std::vector<std::uint32_t>>;
RingOrders ring_orders(const CollectiveContext& cx);
// The payload time of one ring step of `segment` bytes: the busiest link (each direction apart)
// carrying every ring's share over it, or one ring's channels, whichever is slower.
double ring_step_s(const CollectiveContext& cx, const RingOrders& orders, double segment_bytes);

// `steps` steps of `segment` bytes per rank around the rings of ring_orders.
CollectivePlan ring(const CollectiveContext& cx, std::uint32_t steps, double segment_bytes, std::string name);

// Each algorithm builds a plan, or nullopt where the topology cannot run it, and estimates its
// time by the alpha-beta model (for `auto` to choose among the algorithms of an op).
using AlgorithmBuilder = std::optional<CollectivePlan> (*)(const OpDesc& op, const CollectiveContext& cx);
using AlgorithmEstimate = double (*)(const OpDesc& op, const CollectiveContext& cx);

struct CollectiveAlgorithm {
  OpKind op;
  std::string_view name;
  AlgorithmBuilder build;
  AlgorithmEstimate estimate = nullptr;  // needed where an op has several algorithms
  std::string_view needs = "";           // what the topology must have when the builder can decline
  bool any_protocol = false;             // runs in every protocol of the library, or only in simple
};

// Every (op, algorithm) pair, registered in registry.cpp.
std::span<const CollectiveAlgorithm> collective_algorithms();

std::optional<CollectivePlan> ring_allreduce(const OpDesc& op, const CollectiveContext& cx);
double estimate_ring_allreduce_s(const OpDesc& op, const CollectiveContext& cx);
std::optional<CollectivePlan> ring_allgather(const OpDesc& op, const CollectiveContext& cx);
double estimate_ring_gather_s(const OpDesc& op, const CollectiveContext& cx);  // all-gather and reduce-scatter
std::optional<CollectivePlan> ring_reducescatter(const OpDesc& op, const CollectiveContext& cx);
std::optional<CollectivePlan> ring_broadcast(const OpDesc& op, const CollectiveContext& cx);  // chain.cpp
std::optional<CollectivePlan> ring_reduce(const OpDesc& op, const CollectiveContext& cx);
double estimate_ring_chain_s(const OpDesc& op, const CollectiveContext& cx);
std::optional<CollectivePlan> tree_allreduce(const OpDesc& op, const CollectiveContext& cx);
double estimate_tree_allreduce_s(const OpDesc& op, const CollectiveContext& cx);
std::optional<CollectivePlan> in_switch_allreduce(const OpDesc& op, const CollectiveContext& cx);
double estimate_in_switch_allreduce_s(const OpDesc& op, const CollectiveContext& cx);
std::optional<CollectivePlan> nvlstree_allreduce(const OpDesc& op, const CollectiveContext& cx);  // several nodes
double estimate_nvlstree_allreduce_s(const OpDesc& op, const CollectiveContext& cx);

// Names the collective libraries use for the algorithms registered here (NCCL's nvls and collnet
// are in-switch reduction), for policies and measurement rows; nullopt when `name` is none.
std::optional<std::string_view> algorithm_for_alias(OpKind op, std::string_view name);
std::optional<CollectivePlan> direct_sendrecv(const OpDesc& op, const CollectiveContext& cx);
std::optional<CollectivePlan> direct_allreduce(const OpDesc& op, const CollectiveContext& cx);  // full meshes only
double estimate_direct_allreduce_s(const OpDesc& op, const CollectiveContext& cx);
std::optional<CollectivePlan> pairwise_alltoall(const OpDesc& op, const CollectiveContext& cx);
double estimate_pairwise_alltoall_s(const OpDesc& op, const CollectiveContext& cx);
std::optional<CollectivePlan> hierarchical_alltoall(const OpDesc& op, const CollectiveContext& cx);  // several nodes
double estimate_hierarchical_alltoall_s(const OpDesc& op, const CollectiveContext& cx);

}  // namespace syntorch::runtime::detail
