#include "run/baseline.h"

#include "measure/cublaslt_gemm.h"
#include "measure/cudnn_sdpa.h"

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

// mha_fwd (Q, K, V, O, LSE) and mha_bwd (Q, K, V, O, dO, LSE, dQ, dK, dV): cuDNN's fused
// flash attention. The plan is chosen here; a shape no cuDNN engine takes throws
// BaselineUnsupported (a BaselineError).
class AttentionBaseline : public Baseline {
 public:
  AttentionBaseline(bool forward, const Axes& axes) : forward_(forward), sdpa_(CudnnSdpa::Load()) {
    SdpaShape s{static_cast<int>(axes.at("B")), static_cast<int>(axes.at("H")),
                static_cast<int>(axes.at("S")), static_cast<int>(axes.at("D")),
                axes.at("causal") != 0};
    if (forward_)
      sdpa_->PrepareForward(s);
    else
      sdpa_->PrepareBackward(s);
  }
  std::string Name() const override { return "cuDNN SDPA"; }
  void Run(const std::vector<DeviceTensor>& t, Stream stream) override {
    if (forward_)
      sdpa_->Forward(t.at(0).data, t.at(1).data, t.at(2).data, t.at(3).data,
                     static_cast<float*>(t.at(4).data), stream);
    else
      sdpa_->Backward(t.at(0).data, t.at(1).data, t.at(2).data, t.at(3).data, t.at(4).data,
                      static_cast<const float*>(t.at(5).data), t.at(6).data, t.at(7).data,
                      t.at(8).data, stream);
  }
  nlohmann::json Describe() const override { return sdpa_->Describe(); }

 private:
  bool forward_;
  std::unique_ptr<CudnnSdpa> sdpa_;
};

}  // namespace

std::unique_ptr<Baseline> MakeBaseline(const Family& family, const Axes& axes, std::string* why) {
  if (family.Name() == "gemm") return std::make_unique<GemmBaseline>(axes);
  if (family.Name() == "mha_fwd") return std::make_unique<AttentionBaseline>(true, axes);
  if (family.Name() == "mha_bwd") return std::make_unique<AttentionBaseline>(false, axes);
  if (why) *why = "the " + family.Name() + " family has no baseline yet";
  return nullptr;
}

}  // namespace ptxbench
