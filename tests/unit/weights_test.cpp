// WeightStore: lookup across a module's weights files, and the check of
// weight constants against the tensors they name.
#include "mlcc/ir/weights.h"

#include <gtest/gtest.h>

#include <functional>
#include <tuple>

#include "mlcc/support/diagnostic.h"
#include "tensor_files.h"
#include "testlib.h"

using namespace mlcc::ir;
using mlcc::test::errorAt;
using mlcc::test::TempDir;

namespace {

std::vector<std::byte> zeros(size_t n) { return std::vector<std::byte>(n); }

// Writes `file` in `dir` with tensors (name, safetensors dtype, shape), data zero.
void writeWeights(const TempDir& dir, const std::string& file,
                  const std::vector<std::tuple<std::string, std::string, std::vector<int64_t>>>& tensors) {
  std::vector<std::vector<std::byte>> storage;
  std::vector<mlcc::SafetensorsTensorToWrite> views;
  storage.reserve(tensors.size());
  for (const auto& [name, dtype, shape] : tensors) {
    int64_t n = *mlcc::safetensorsDTypeBytes(dtype);
    for (int64_t d : shape) n *= d;
    storage.push_back(zeros(static_cast<size_t>(n)));
    views.push_back({name, dtype, shape, storage.back()});
  }
  mlcc::writeSafetensors(dir.file(file), views);
}

// graph @main with one `%<var>: <type> = const "<weight>"` binding per entry.
Module moduleWithConsts(const TempDir& dir, std::vector<std::string> files,
                        const std::vector<std::pair<std::string, Type>>& consts) {
  Module m;
  m.weight_files = std::move(files);
  m.base_dir = dir.path();
  GraphFunc g;
  g.name = "main";
  BindingBlock block;
  for (const auto& [weight, type] : consts) {
    GraphValue v;
    v.kind = ValueKind::Const;
    v.weight = weight;
    block.bindings.push_back({makeGraphVar("w_" + weight, type), v});
  }
  g.blocks.push_back(block);
  m.functions.push_back(g);
  return m;
}

}  // namespace

TEST(Weights, DTypeNames) {
  for (DType t : kAllDTypes) EXPECT_EQ(dtypeFromSafetensors(safetensorsName(t)), t);
  EXPECT_FALSE(dtypeFromSafetensors("U64").has_value());
  EXPECT_FALSE(dtypeFromSafetensors("F8_E4M3").has_value());
}

TEST(Weights, LookupAcrossFiles) {
  TempDir dir;
  writeWeights(dir, "a.safetensors", {{"fc1.weight", "F32", {4, 3}}, {"fc1.bias", "F32", {4}}});
  writeWeights(dir, "b.safetensors", {{"emb", "BF16", {2, 2}}, {"mask", "BOOL", {}}, {"raw", "U64", {3}}});
  Module m = moduleWithConsts(dir, {"a.safetensors", "b.safetensors"}, {});
  WeightStore store = WeightStore::open(m);
  EXPECT_EQ(store.names(), (std::vector<std::string>{"emb", "fc1.bias", "fc1.weight", "mask", "raw"}));
  WeightView w = store.get("fc1.weight");
  EXPECT_EQ(w.dtype, DType::f32);
  EXPECT_EQ(w.shape, (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(w.data.size(), 48u);
  EXPECT_EQ(w.file, dir.file("a.safetensors"));
  EXPECT_EQ(store.get("mask").dtype, DType::boolean);
  EXPECT_EQ(store.get("emb").dtype, DType::bf16);
  EXPECT_TRUE(store.contains("raw"));

  std::string missing = errorAt([&] { store.get("fc2.weight"); });
  EXPECT_NE(missing.find("weight 'fc2.weight' not found in " + dir.file("a.safetensors") + ", " +
                         dir.file("b.safetensors")),
            std::string::npos)
      << missing;
  std::string u64 = errorAt([&] { store.get("raw"); });
  EXPECT_NE(u64.find("has dtype U64, which mlcc does not support"), std::string::npos) << u64;
}

TEST(Weights, NamesMustBeUniqueAcrossFiles) {
  TempDir dir;
  writeWeights(dir, "a.safetensors", {{"w", "F32", {1}}});
  writeWeights(dir, "b.safetensors", {{"w", "F32", {1}}});
  std::string e = errorAt([&] {
    WeightStore::open(moduleWithConsts(dir, {"a.safetensors", "b.safetensors"}, {}));
  });
  EXPECT_NE(
      e.find("weight 'w' is in both " + dir.file("a.safetensors") + " and " + dir.file("b.safetensors")),
      std::string::npos)
      << e;
}

TEST(Weights, MissingFile) {
  TempDir dir;
  std::string e = errorAt([&] { WeightStore::open(moduleWithConsts(dir, {"nosuch.safetensors"}, {})); });
  EXPECT_NE(e.find(dir.file("nosuch.safetensors")), std::string::npos) << e;
  WeightStore none = WeightStore::open(moduleWithConsts(dir, {}, {}));
  EXPECT_NE(errorAt([&] { none.get("w"); }).find("names none"), std::string::npos);
}

TEST(Weights, CheckModuleWeights) {
  TempDir dir;
  writeWeights(dir, "model.safetensors",
               {{"fc1.weight", "F32", {256, 784}},
                {"fc1.bias", "F32", {256}},
                {"ids", "I64", {}},
                {"raw", "U64", {2}}});
  auto check = [&](const std::vector<std::pair<std::string, Type>>& consts) {
    Module m = moduleWithConsts(dir, {"model.safetensors"}, consts);
    WeightStore store = WeightStore::open(m);
    return errorAt([&] { checkModuleWeights(m, store); });
  };
  EXPECT_EQ(check({{"fc1.weight", Type::tensor(DType::f32, std::vector<int64_t>{256, 784})},
                   {"fc1.bias", Type::tensor(DType::f32, std::vector<int64_t>{256})},
                   {"ids", Type::tensor(DType::i64, std::vector<int64_t>{})}}),
            "(no error)");

  std::string shape = check({{"fc1.weight", Type::tensor(DType::f32, std::vector<int64_t>{256, 100})}});
  EXPECT_NE(shape.find("@main: %w_fc1.weight: weight 'fc1.weight' is f32[256, 784] in"), std::string::npos)
      << shape;
  EXPECT_NE(shape.find("but the binding's type is f32[256, 100]"), std::string::npos) << shape;

  std::string dtype = check({{"fc1.bias", Type::tensor(DType::f16, std::vector<int64_t>{256})}});
  EXPECT_NE(dtype.find("is f32[256]"), std::string::npos) << dtype;

  std::string missing = check({{"fc2.weight", Type::tensor(DType::f32, std::vector<int64_t>{1})}});
  EXPECT_NE(missing.find("@main: %w_fc2.weight: weight 'fc2.weight' not found in"), std::string::npos)
      << missing;

  std::string symbolic = check({{"fc1.bias", Type::tensor(DType::f32, {PrimExpr(makeVar("n"))})}});
  EXPECT_NE(symbolic.find("symbolic dimension 0"), std::string::npos) << symbolic;

  std::string u64 = check({{"raw", Type::tensor(DType::i8, std::vector<int64_t>{2})}});
  EXPECT_NE(u64.find("dtype U64"), std::string::npos) << u64;
}
