// The XGBoost cost model (cost_model.h): every update retrains a booster
// from scratch on all samples seen so far (a few thousand at most in a
// tuning run; 1000 samples of the features of features.h train in about
// 0.2 s with one thread and the histogram tree method). Every XGBoost call
// is checked; a failure becomes mlcc::Error with XGBoost's message (its
// first line, without the time stamp and the stack trace).
#include "mlcc/tune/cost_model.h"

#include <xgboost/c_api.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "mlcc/support/diagnostic.h"

namespace mlcc::tune {

namespace {

// The first line of XGBoost's last error, without its "[hh:mm:ss] " prefix.
std::string lastXGBoostError() {
  std::string e = XGBGetLastError();
  e = e.substr(0, e.find('\n'));
  if (!e.empty() && e[0] == '[') {
    size_t close = e.find("] ");
    if (close != std::string::npos) e = e.substr(close + 2);
  }
  while (!e.empty() && (e.back() == ' ' || e.back() == '\r')) e.pop_back();
  return e;
}

void check(int rc, const char* what) {
  if (rc != 0) throw Error(std::string("cost model: XGBoost ") + what + " failed: " + lastXGBoostError());
}

struct DMatrixDeleter {
  void operator()(void* h) const { XGDMatrixFree(h); }
};
struct BoosterDeleter {
  void operator()(void* h) const { XGBoosterFree(h); }
};
using DMatrix = std::unique_ptr<void, DMatrixDeleter>;
using Booster = std::unique_ptr<void, BoosterDeleter>;

// A dense matrix of the rows (all of length `width`).
DMatrix makeMatrix(const std::vector<std::vector<float>>& rows, size_t width) {
  std::vector<float> data;
  data.reserve(rows.size() * width);
  for (const auto& r : rows) data.insert(data.end(), r.begin(), r.end());
  DMatrixHandle h = nullptr;
  check(XGDMatrixCreateFromMat(data.data(), rows.size(), width, std::nanf(""), &h), "XGDMatrixCreateFromMat");
  return DMatrix(h);
}

void setParam(BoosterHandle b, const char* key, const std::string& value) {
  check(XGBoosterSetParam(b, key, value.c_str()), "XGBoosterSetParam");
}

// A weight no sample goes below (a failed candidate, scored 0, still
// teaches the model something).
constexpr float kMinWeight = 0.05f;

}  // namespace

struct CostModel::Impl {
  uint64_t seed = 0;
  CostModelOptions options;
  size_t width = 0;  // the feature length (0 until the first sample)
  std::vector<std::vector<float>> features;
  std::vector<float> scores;
  Booster booster;

  void checkRows(const std::vector<std::vector<float>>& rows, size_t expected, const char* what) const {
    for (const auto& r : rows)
      if (r.size() != expected)
        throw Error(std::string("cost model: ") + what + ": a feature vector of length " +
                    std::to_string(r.size()) + ", expected " + std::to_string(expected));
  }

  // A booster trained on `xs`, `ys`; null when there is too little to learn.
  Booster train(const std::vector<std::vector<float>>& xs, const std::vector<float>& ys, size_t w) const {
    if (xs.size() < std::max<size_t>(options.min_samples, 2) || w == 0) return nullptr;
    auto [lo, hi] = std::minmax_element(ys.begin(), ys.end());
    if (*hi - *lo <= 1e-9f) return nullptr;
    DMatrix d = makeMatrix(xs, w);
    check(XGDMatrixSetFloatInfo(d.get(), "label", ys.data(), ys.size()), "XGDMatrixSetFloatInfo(label)");
    const bool rank = options.objective.rfind("rank:", 0) == 0;
    if (options.weight_by_score && !rank) {  // (a ranking objective weighs query groups, not samples)
      const float top = *hi > 0 ? *hi : 1.0f;
      std::vector<float> weights(ys.size());
      for (size_t i = 0; i < ys.size(); ++i) weights[i] = std::clamp(ys[i] / top, kMinWeight, 1.0f);
      check(XGDMatrixSetFloatInfo(d.get(), "weight", weights.data(), weights.size()),
            "XGDMatrixSetFloatInfo(weight)");
    }
    if (rank) {
      const unsigned group = static_cast<unsigned>(ys.size());  // one query: every sample
      check(XGDMatrixSetUIntInfo(d.get(), "group", &group, 1), "XGDMatrixSetUIntInfo(group)");
    }
    DMatrixHandle dh = d.get();
    BoosterHandle bh = nullptr;
    check(XGBoosterCreate(&dh, 1, &bh), "XGBoosterCreate");
    Booster b(bh);
    setParam(bh, "verbosity", "0");
    setParam(bh, "nthread", "1");
    setParam(bh, "seed", std::to_string(seed % 2147483647u));
    setParam(bh, "objective", options.objective);
    setParam(bh, "max_depth", std::to_string(options.max_depth));
    setParam(bh, "eta", std::to_string(options.eta));
    setParam(bh, "min_child_weight", std::to_string(options.min_child_weight));
    setParam(bh, "tree_method", "hist");
    for (int i = 0; i < options.rounds; ++i)
      check(XGBoosterUpdateOneIter(bh, i, dh), "XGBoosterUpdateOneIter");
    return b;
  }
};

CostModel::CostModel(uint64_t seed) : CostModel(seed, CostModelOptions{}) {}

CostModel::CostModel(uint64_t seed, CostModelOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->seed = seed;
  impl_->options = std::move(options);
}

CostModel::~CostModel() = default;
CostModel::CostModel(CostModel&&) noexcept = default;
CostModel& CostModel::operator=(CostModel&&) noexcept = default;

void CostModel::update(const std::vector<std::vector<float>>& features, const std::vector<double>& scores) {
  if (features.size() != scores.size())
    throw Error("cost model: update with " + std::to_string(features.size()) + " feature vectors and " +
                std::to_string(scores.size()) + " scores");
  if (features.empty()) return;
  if (!impl_) impl_ = std::make_unique<Impl>();  // a moved-from model starts over
  Impl& m = *impl_;
  const size_t width = m.width ? m.width : features[0].size();
  if (width == 0) throw Error("cost model: update with empty feature vectors");
  m.checkRows(features, width, "update");
  for (double s : scores)
    if (!std::isfinite(s)) throw Error("cost model: update with a score that is not finite");

  // Train on copies; commit only when training succeeded.
  std::vector<std::vector<float>> xs = m.features;
  xs.insert(xs.end(), features.begin(), features.end());
  std::vector<float> ys = m.scores;
  for (double s : scores) ys.push_back(static_cast<float>(s));
  Booster b = m.train(xs, ys, width);
  m.width = width;
  m.features = std::move(xs);
  m.scores = std::move(ys);
  if (b) m.booster = std::move(b);
}

std::vector<double> CostModel::predict(const std::vector<std::vector<float>>& features) const {
  if (!impl_ || !impl_->booster || features.empty()) return std::vector<double>(features.size(), 0.0);
  const Impl& m = *impl_;
  m.checkRows(features, m.width, "predict");
  DMatrix d = makeMatrix(features, m.width);
  bst_ulong len = 0;
  const float* out = nullptr;
  check(XGBoosterPredict(m.booster.get(), d.get(), 0, 0, 0, &len, &out), "XGBoosterPredict");
  if (len != features.size())
    throw Error("cost model: XGBoost predicted " + std::to_string(len) + " values for " +
                std::to_string(features.size()) + " feature vectors");
  return std::vector<double>(out, out + len);
}

bool CostModel::trained() const { return impl_ && impl_->booster != nullptr; }

size_t CostModel::samples() const { return impl_ ? impl_->scores.size() : 0; }

}  // namespace mlcc::tune
