// Schemas and shape inference: sequence family. Sequence-typed values carry
// their element type; their tensors' shapes are known only at run time.
#include "core/dtype_attr.h"
#include "ir/op_registry.h"
#include "ir/ops/shape_infer_util.h"

namespace tessera::ir {

using namespace shape_infer;
using K = Attribute::Kind;

namespace {


// Element type of a sequence input (or of a tensor input).
DType elem_of(const InferenceContext& ctx, size_t i) { return ctx.input_type(i).elem; }

void add(OpRegistry& r, OpSchema s) { add_schema(r, std::move(s), "sequence"); }

}  // namespace

void register_sequence_schemas(OpRegistry& r) {
  add(r, make_schema("SequenceConstruct", 1, -1, 1, 1,
                     [](InferenceContext& c) { set_sequence_output(c, 0, elem_of(c, 0)); }));
  add(r, make_schema("SequenceEmpty", 0, 0, 1, 1,
                     [](InferenceContext& c) { set_sequence_output(c, 0, dtype_from_type_code(c.attr_int("dtype", 1))); },
                     {{"dtype", K::i}}));
  add(r, make_schema("SequenceAt", 2, 2, 1, 1,
                     [](InferenceContext& c) { c.set_output(0, elem_of(c, 0), std::nullopt); }));
  add(r, make_schema("SequenceInsert", 2, 3, 1, 1, [](InferenceContext& c) {
        DType e = elem_of(c, 0);
        if (e == DType::undefined) e = elem_of(c, 1);
        set_sequence_output(c, 0, e);
      }));
  add(r, make_schema("SequenceErase", 1, 2, 1, 1,
                     [](InferenceContext& c) { set_sequence_output(c, 0, elem_of(c, 0)); }));
  add(r, make_schema("SequenceLength", 1, 1, 1, 1,
                     [](InferenceContext& c) { c.set_output(0, DType::i64, Dims{}); }));
  add(r, make_schema("SplitToSequence", 1, 2, 1, 1,
                     [](InferenceContext& c) { set_sequence_output(c, 0, elem_of(c, 0)); },
                     {{"axis", K::i}, {"keepdims", K::i}}));
  add(r, make_schema("ConcatFromSequence", 1, 1, 1, 1, [](InferenceContext& c) { c.set_output(0, elem_of(c, 0), std::nullopt); },
                     {{"axis", K::i}, {"new_axis", K::i}}));
  // SequenceMap: output j is a sequence of the body's output j (inferred before this node).
  add(r, make_schema("SequenceMap", 1, -1, 1, -1, [](InferenceContext& c) {
        const Attribute* body = c.node().attr("body");
        const auto* g = body && body->kind == K::g ? dynamic_cast<const Graph*>(body->g.get()) : nullptr;
        if (!g) return;
        for (size_t j = 0; j < c.num_outputs() && j < g->outputs.size(); ++j)
          if (g->outputs[j]) set_sequence_output(c, j, g->outputs[j]->type.elem);
      }, {{"body", K::g}}));
}

}  // namespace tessera::ir
