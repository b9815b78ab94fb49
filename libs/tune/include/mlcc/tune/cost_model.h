// The learned cost model: gradient-boosted trees (XGBoost) trained online on
// the features (features.h) of measured candidates and their normalized
// throughput (1.0 = the best of their task so far), as MetaSchedule's
// XGBModel. It ranks candidates before they are measured.
//
//   CostModel model(seed);
//   model.update(features, scores);              // after each measured batch
//   std::vector<double> s = model.predict(more); // higher is faster
//
// The same seed and samples give the same predictions. One model is not
// for concurrent use (XGBoost's prediction buffers belong to the booster).
// A moved-from model is empty: untrained, no samples; updating it starts
// over with the default options.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace mlcc::tune {

// The booster's settings (the defaults are what the tuner uses).
struct CostModelOptions {
  // XGBoost's objective. Pairwise ranking (all samples one query group:
  // the samples of one task) ranked unseen schedules of a matmul better
  // than squared error, weighted or not (tune_cost_model_test).
  std::string objective = "rank:pairwise";
  // For a regression objective: weigh each sample by its score
  // (MetaSchedule's weighted squared error: the fast candidates, which the
  // search is after, matter most).
  bool weight_by_score = true;
  int rounds = 60;  // boosting rounds of each retraining
  int max_depth = 10;
  double eta = 0.2;
  double min_child_weight = 0.001;
  // No model before this many samples, or while all scores are equal.
  size_t min_samples = 8;
};

class CostModel {
 public:
  explicit CostModel(uint64_t seed = 0);
  CostModel(uint64_t seed, CostModelOptions options);
  ~CostModel();
  CostModel(CostModel&&) noexcept;
  CostModel& operator=(CostModel&&) noexcept;

  // Adds measured samples (score: normalized throughput in [0, 1]; a failed
  // candidate scores 0) and retrains on everything seen so far. Every
  // feature vector must have the length of the first one seen and every
  // score must be finite; otherwise, or when XGBoost fails, it throws
  // mlcc::Error and the model is as it was.
  void update(const std::vector<std::vector<float>>& features, const std::vector<double>& scores);
  // Predicted scores; all 0 until trained on enough samples. Throws
  // mlcc::Error for feature vectors of another length than the samples'.
  std::vector<double> predict(const std::vector<std::vector<float>>& features) const;
  bool trained() const;
  size_t samples() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace mlcc::tune
