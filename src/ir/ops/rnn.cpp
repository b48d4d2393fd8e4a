// Schemas and shape inference: rnn family (RNN, GRU, LSTM), and Tessera's
//   PackedRecurrent(X, Wpacked, Rpacked, B?, sequence_lens?, initial_h?, initial_c?) -> Y?, Y_h?, Y_c?
//     an LSTM (cell "LSTM") or GRU (cell "GRU") whose constant W and R the pack_recurrent pass packed as
//     GEMM panels: per direction d, W_d^T (input_size x gates hidden_size, block kc_w) then R_d^T
//     (hidden_size x gates hidden_size, block kc_r), panels nr wide (kernels/x86/gemm.h, PackedB). Inputs,
//     outputs and the other attributes are the ONNX op's.
#include "ir/op_registry.h"

namespace tessera::ir {
namespace {

using K = Attribute::Kind;

void infer_recurrent(InferenceContext& ctx, int gates) {
  const DType t = ctx.input_dtype(0);
  const auto& xs = ctx.input_shape(0);
  const auto& ws = ctx.input_shape(1);
  const int64_t layout = ctx.attr_int("layout", 0);
  const std::string dir = ctx.attr_string("direction", "forward");
  const Dim dirs(dir == "bidirectional" ? 2 : 1);
  Dim seq, batch, hidden;
  if (xs && xs->size() == 3) {
    seq = layout == 0 ? (*xs)[0] : (*xs)[1];
    batch = layout == 0 ? (*xs)[1] : (*xs)[0];
  }
  if (ctx.has_attr("hidden_size"))
    hidden = Dim(ctx.attr_int("hidden_size", 0));
  else if (ws && ws->size() == 3 && (*ws)[1].known())
    hidden = Dim((*ws)[1].value / gates);
  if (layout == 0)
    ctx.set_output(0, t, std::vector<Dim>{seq, dirs, batch, hidden});
  else
    ctx.set_output(0, t, std::vector<Dim>{batch, seq, dirs, hidden});
  for (size_t i = 1; i < ctx.num_outputs(); ++i) {
    if (layout == 0)
      ctx.set_output(i, t, std::vector<Dim>{dirs, batch, hidden});
    else
      ctx.set_output(i, t, std::vector<Dim>{batch, dirs, hidden});
  }
}

std::vector<AttrSpec> rnn_attrs(bool gru, bool lstm) {
  std::vector<AttrSpec> a{{"activation_alpha", K::floats},
                          {"activation_beta", K::floats},
                          {"activations", K::strings},
                          {"clip", K::f},
                          {"direction", K::s},
                          {"hidden_size", K::i},
                          {"layout", K::i}};
  if (gru) a.push_back({"linear_before_reset", K::i});
  if (lstm) a.push_back({"input_forget", K::i});
  return a;
}

}  // namespace

void register_rnn_schemas(OpRegistry& r) {
  std::vector<AttrSpec> packed = rnn_attrs(true, true);
  for (const char* a : {"input_size", "kc_w", "kc_r", "nr"}) packed.push_back({a, K::i});
  packed.push_back({"cell", K::s});
  OpSchema p = make_schema(
      "PackedRecurrent", 3, 7, 0, 3,
      [](InferenceContext& c) { infer_recurrent(c, c.attr_string("cell", "LSTM") == "GRU" ? 3 : 4); }, packed,
      "tessera");
  p.family = "fused";
  r.add(p);
  r.add(make_schema(
      "RNN", 3, 6, 0, 2, [](InferenceContext& c) { infer_recurrent(c, 1); }, rnn_attrs(false, false)));
  r.add(make_schema(
      "GRU", 3, 6, 0, 2, [](InferenceContext& c) { infer_recurrent(c, 3); }, rnn_attrs(true, false)));
  r.add(make_schema(
      "LSTM", 3, 8, 0, 3, [](InferenceContext& c) { infer_recurrent(c, 4); }, rnn_attrs(false, true)));
}

}  // namespace tessera::ir
