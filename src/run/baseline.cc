#include "run/baseline.h"

#include "measure/cublaslt_gemm.h"

namespace ptxbench {
namespace {

class GemmBaseline : public Baseline {
 public:
  GemmBaseline(const Axes& axes) : lt_(CublasLtGemm::Load()) {
    lt_->Prepare(static_cast<int>(axes.at("M")), static_cast<int>(axes.at("N")),
                 static_cast<int>(axes.at("K")));
  }
  std::string Name() const override { return "cuBLASLt"; }
  void Run(const std::vector<DeviceTensor>& t, Stream stream) override {
    lt_->Run(t.at(0).data, t.at(1).data, t.at(2).data, stream);
  }
  nlohmann::json Describe() const override { return lt_->Describe(); }

 private:
  std::unique_ptr<CublasLtGemm> lt_;
};

}  // namespace

std::unique_ptr<Baseline> MakeBaseline(const Family& family, const Axes& axes, std::string* why) {
  if (family.Name() == "gemm") return std::make_unique<GemmBaseline>(axes);
  if (why) *why = "the " + family.Name() + " family has no baseline yet";
  return nullptr;
}

}  // namespace ptxbench
