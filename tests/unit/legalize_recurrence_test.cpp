// recurrence (libs/ops/src/recurrence.cpp): the reference kernel on a case
// computed by hand, and the TensorIR compute definition (a scan over the
// steps), run through the interpreter, against the kernel for every cell and
// form: GRU's linear_before_reset, LSTM's peepholes and input_forget, clip,
// reverse, sequences that end early, and every activation function.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "legalize_check.h"
#include "mlcc/ops/op.h"
#include "mlcc/support/diagnostic.h"
#include "numpy_reference.h"

namespace {

using namespace mlcc::ir;
using mlcc::test::expectLegalizeMatchesKernel;
using mlcc::test::randomTensor;

TEST(Recurrence, IsLegalized) { mlcc::test::expectEveryOpHasALegalization({"recurrence"}); }

// An RNN of one unit over two steps: h1 = tanh(x0 + 0.5 h0), h2 = tanh(x1 + 0.5 h1);
// the second batch entry's sequence ends after one step.
TEST(Recurrence, KernelByHand) {
  Tensor xw = Tensor::fromValues(DType::f32, {2, 2, 1}, {0.1, 0.2, 0.3, 0.4});
  Tensor rt = Tensor::fromValues(DType::f32, {1, 1}, {0.5});
  Tensor h0 = Tensor::fromValues(DType::f32, {2, 1}, {1.0, -1.0});
  Tensor lens = Tensor::fromValues(DType::i64, {2}, {2, 1});
  auto out = mlcc::ops::computeOp("recurrence", {xw, rt, h0, lens}, {{"cell", "rnn"}});
  const double a1 = std::tanh(0.1 + 0.5), a2 = std::tanh(0.3 + 0.5 * a1);
  const double b1 = std::tanh(0.2 - 0.5);
  EXPECT_NEAR(out[0].at(0), a1, 1e-6);
  EXPECT_NEAR(out[0].at(1), b1, 1e-6);
  EXPECT_NEAR(out[0].at(2), a2, 1e-6);
  EXPECT_EQ(out[0].at(3), 0.0);  // past entry 1's length
  EXPECT_NEAR(out[1].at(0), a2, 1e-6);
  EXPECT_NEAR(out[1].at(1), b1, 1e-6);  // entry 1 keeps its state
  // Reverse: entry 1 (length 1) runs its only step at time 0.
  auto rev = mlcc::ops::computeOp("recurrence", {xw, rt, h0, lens}, {{"cell", "rnn"}, {"reverse", true}});
  EXPECT_NEAR(rev[0].at(1), b1, 1e-6);
  EXPECT_EQ(rev[0].at(3), 0.0);
}

TEST(Recurrence, TypeErrors) {
  auto f32 = [](std::vector<int64_t> s) { return Type::tensor(DType::f32, s); };
  auto lens = Type::tensor(DType::i64, std::vector<int64_t>{2});
  EXPECT_THROW(mlcc::ops::inferOpType("recurrence", {f32({3, 2, 8}), f32({4, 8}), f32({2, 4}), lens},
                                      {{"cell", "gru"}}),
               mlcc::Error);  // a GRU takes rbh
  EXPECT_THROW(mlcc::ops::inferOpType("recurrence", {f32({3, 2, 8}), f32({4, 8}), f32({2, 4}), lens},
                                      {{"cell", "rnn"}}),
               mlcc::Error);  // 8 columns are not 1 x 4
  EXPECT_THROW(mlcc::ops::inferOpType("recurrence", {f32({3, 2, 4}), f32({4, 4}), f32({2, 4}), lens},
                                      {{"cell", "rnn"}, {"f", "exp2"}}),
               mlcc::Error);  // not an op
  EXPECT_THROW(mlcc::ops::inferOpType("recurrence", {f32({3, 2, 4}), f32({4, 4}), f32({2, 4}), lens},
                                      {{"cell", "rnn"}, {"f", "add"}}),
               mlcc::Error);  // not unary
  EXPECT_NO_THROW(mlcc::ops::inferOpType("recurrence", {f32({3, 2, 4}), f32({4, 4}), f32({2, 4}), lens},
                                         {{"cell", "rnn"}, {"f", "softsign"}}));
}

struct Case {
  const char* cell;
  Attrs attrs;
};

Attrs with(Attrs a, const char* cell) {
  a["cell"] = cell;
  return a;
}

AttrValue floats(std::vector<double> v) {
  AttrValue::List l;
  for (double x : v) l.emplace_back(x);
  return AttrValue(l);
}

// Operands of one cell: T steps, B entries, H units; entry 1 ends after
// two steps, entry 2 after none.
std::vector<Tensor> operands(std::mt19937& rng, const std::string& cell, int64_t T, int64_t B, int64_t H) {
  const int64_t G = cell == "rnn" ? 1 : cell == "gru" ? 3 : 4;
  std::vector<Tensor> in = {randomTensor(rng, DType::f32, {T, B, G * H}, -2, 2),
                            randomTensor(rng, DType::f32, {H, G * H}, -0.6, 0.6),
                            randomTensor(rng, DType::f32, {B, H}, -1, 1)};
  if (cell == "lstm") {
    in.push_back(randomTensor(rng, DType::f32, {B, H}, -1, 1));
    in.push_back(randomTensor(rng, DType::f32, {3 * H}, -1, 1));
  }
  if (cell == "gru") in.push_back(randomTensor(rng, DType::f32, {H}, -1, 1));
  std::vector<double> lens(static_cast<size_t>(B), static_cast<double>(T));
  if (B > 1) lens[1] = 2;
  if (B > 2) lens[2] = 0;
  in.push_back(Tensor::fromValues(DType::i64, {B}, lens));
  return in;
}

TEST(Recurrence, LegalizationMatchesKernel) {
  std::mt19937 rng(11);
  const std::vector<std::pair<const char*, Attrs>> forms = {
      {"rnn", {}},
      {"rnn", {{"reverse", true}, {"clip", 0.7}}},
      {"gru", {}},
      {"gru", {{"linear_before_reset", true}, {"reverse", true}}},
      {"gru", {{"clip", 0.5}}},
      {"lstm", {}},
      {"lstm", {{"input_forget", true}, {"reverse", true}}},
      {"lstm", {{"clip", 0.9}}},
  };
  for (const auto& [cell, attrs] : forms)
    for (auto [T, B, H] : {std::tuple<int64_t, int64_t, int64_t>{4, 3, 5}, {1, 1, 8}, {6, 2, 16}}) {
      SCOPED_TRACE(std::string(cell) + " T=" + std::to_string(T) + " B=" + std::to_string(B) +
                   " H=" + std::to_string(H));
      expectLegalizeMatchesKernel("recurrence", operands(rng, cell, T, B, H), with(attrs, cell),
                                  {.rtol = 1e-5, .atol = 1e-6, .also_symbolic_batch = true});
    }
}

// No step (the final states are the initial ones), an empty batch, no units.
TEST(Recurrence, ZeroSizes) {
  std::mt19937 rng(13);
  for (auto [T, B, H] : {std::tuple<int64_t, int64_t, int64_t>{0, 2, 3}, {3, 0, 4}, {2, 3, 0}})
    for (const char* cell : {"rnn", "gru", "lstm"}) {
      SCOPED_TRACE(std::string(cell) + " T=" + std::to_string(T) + " B=" + std::to_string(B) +
                   " H=" + std::to_string(H));
      expectLegalizeMatchesKernel("recurrence", operands(rng, cell, T, B, H), with({}, cell),
                                  {.rtol = 1e-5, .atol = 1e-6, .also_symbolic_batch = false});
    }
}

TEST(Recurrence, EveryActivation) {
  std::mt19937 rng(12);
  const std::vector<std::vector<const char*>> sets = {{"relu", "softsign", "softplus"},
                                                      {"leaky_relu", "elu", "hard_sigmoid"},
                                                      {"affine", "scaled_tanh", "thresholded_relu"},
                                                      {"hard_sigmoid", "affine", "leaky_relu"}};
  for (const auto& fgh : sets) {
    SCOPED_TRACE(std::string(fgh[0]) + ", " + fgh[1] + ", " + fgh[2]);
    Attrs a = {{"f", fgh[0]},
               {"g", fgh[1]},
               {"h", fgh[2]},
               {"alphas", floats({0.3, 0.8, 0.2})},
               {"betas", floats({0.4, 1.5, 0.0})}};
    for (const char* cell : {"rnn", "gru", "lstm"})
      expectLegalizeMatchesKernel("recurrence", operands(rng, cell, 3, 2, 8), with(a, cell));
  }
}

}  // namespace
