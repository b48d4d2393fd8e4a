// The CPU backend's kernel selection: for each node, a tuned kernel that
// claims it (registered with add_tuned_kernel, e.g. by src/kernels/x86/) or
// else the reference kernel from kernels::ref::KernelTable.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/kernel_context.h"
#include "ir/graph.h"

namespace tessera::backends::cpu {

// Whether a tuned kernel handles this node (dtypes, shapes, attributes, ISA).
using KernelPredicate = std::function<bool(const ir::Node&)>;

// Registers a tuned kernel for (domain, op_type). Kernels registered later are
// asked first. Thread-safe; `predicate` may be empty (claims every node).
void add_tuned_kernel(const std::string& domain, const std::string& op_type, KernelPredicate predicate,
                      KernelFn fn);

// The kernel for a node: the first tuned kernel whose predicate accepts it,
// else the reference kernel; nullptr when there is none.
KernelFn select(const ir::Node& node);

// Registers the tuned x86 kernels (x86_bindings.cpp); called once, automatically.
void register_x86_bindings();
void register_x86_attention_bindings();  // x86_attention_bindings.cpp

// Runs the reference kernel of the context's op (domain "" or "tessera"): what a tuned kernel does with
// cases it does not cover, so results and error messages are the reference's.
void run_reference(KernelContext& ctx, const char* domain);

// Per matrix of t's batch (its leading dims, row-major), the element offset of that matrix [.., rows, cols]
// at t's strides: batched GEMM operands read in place.
std::vector<int64_t> matrix_batch_bases(const Tensor& t);

// Which table `select` took the kernel from ("tuned", "ref") or "" if none.
std::string selected_kind(const ir::Node& node);

}  // namespace tessera::backends::cpu
