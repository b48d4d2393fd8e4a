// Schemas and shape inference: text family.
#include "ir/op_registry.h"

namespace tessera::ir {
namespace {

using K = Attribute::Kind;

void infer_normalizer(InferenceContext& ctx) {
  // The number of strings left depends on the data.
  std::optional<std::vector<Dim>> s;
  if (const auto& in = ctx.input_shape(0)) {
    if (in->size() == 1) s = std::vector<Dim>{Dim()};
    else if (in->size() == 2) s = std::vector<Dim>{Dim(1), Dim()};
    else ctx.fail("input must be [C] or [1, C], got rank ", in->size());
  }
  ctx.set_output(0, DType::string, s);
}

void infer_split(InferenceContext& ctx) {
  std::optional<std::vector<Dim>> y, z = ctx.input_shape(0);
  if (z) {
    y = *z;
    y->push_back(Dim());
  }
  ctx.set_output(0, DType::string, y);
  if (ctx.num_outputs() > 1) ctx.set_output(1, DType::i64, z);
}

}  // namespace

void register_text_schemas(OpRegistry& r) {
  r.add(make_schema("StringNormalizer", 1, 1, 1, 1, infer_normalizer,
                    {{"case_change_action", K::s}, {"is_case_sensitive", K::i}, {"locale", K::s}, {"stopwords", K::strings}}));
  r.add(make_schema("StringConcat", 2, 2, 1, 1, [](InferenceContext& ctx) {
    ctx.set_output(0, DType::string, broadcast_shapes(ctx.input_shape(0), ctx.input_shape(1)));
  }));
  r.add(make_schema("StringSplit", 1, 1, 1, 2, infer_split, {{"delimiter", K::s}, {"maxsplit", K::i}}));
  r.add(make_schema("RegexFullMatch", 1, 1, 1, 1, [](InferenceContext& ctx) {
    ctx.set_output(0, DType::boolean, ctx.input_shape(0));
  }, {{"pattern", K::s}}));
}

}  // namespace tessera::ir
