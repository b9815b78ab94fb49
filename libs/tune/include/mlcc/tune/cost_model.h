// The learned cost model: gradient-boosted trees (XGBoost) trained online on
// the features (features.h) of measured candidates and their normalized
// throughput (1.0 = the best of their task so far), as MetaSchedule's
// XGBModel. It ranks candidates before they are measured.
//
//   CostModel model(seed);
//   model.update(features, scores);              // after each measured batch
//   std::vector<double> s = model.predict(more); // higher is faster
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

namespace mlcc::tune {

class CostModel {
 public:
  explicit CostModel(uint64_t seed = 0);
  ~CostModel();
  CostModel(CostModel&&) noexcept;
  CostModel& operator=(CostModel&&) noexcept;

  // Adds measured samples (score: normalized throughput in [0, 1]; a failed
  // candidate scores 0) and retrains on everything seen so far.
  void update(const std::vector<std::vector<float>>& features, const std::vector<double>& scores);
  // Predicted scores; all 0 until trained on enough samples.
  std::vector<double> predict(const std::vector<std::vector<float>>& features) const;
  bool trained() const;
  size_t samples() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace mlcc::tune
