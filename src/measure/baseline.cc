#include "measure/baseline.h"

#include "measure/cublaslt_gemm.h"
#include "measure/cudnn_sdpa.h"
#include "measure/flashinfer_attention.h"

namespace ptxbench {
namespace {

class GemmBaseline : public Baseline {
 public:
  GemmBaseline(const Axes& axes, bool half) : lt_(CublasLtGemm::Load()) {
    lt_->Prepare(static_cast<int>(axes.at("M")), static_cast<int>(axes.at("N")),
                 static_cast<int>(axes.at("K")), half);
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
class CudnnAttentionBaseline : public Baseline {
 public:
  CudnnAttentionBaseline(bool forward, const Axes& axes)
      : forward_(forward), sdpa_(CudnnSdpa::Load()) {
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

// mha_fwd (Q, K, V, O, LSE): FlashInfer's sm90 prefill, built by the parent
// (PrepareBaselineOptions) and loaded here; planned for the shape before any timing.
class FlashInferBaseline : public Baseline {
 public:
  FlashInferBaseline(const Axes& axes, const nlohmann::json& options) {
    if (options.contains("flashinfer_unsupported"))
      throw BaselineUnsupported(options["flashinfer_unsupported"].get<std::string>());
    if (options.contains("flashinfer_error"))
      throw BaselineError(options["flashinfer_error"].get<std::string>());
    if (!options.contains("flashinfer_build"))
      throw BaselineError("FlashInfer: the parent built no kernel for this child");
    const FlashInferBuild build = FlashInferBuildFromJson(options["flashinfer_build"]);
    // The record names the version asked for: timing another would mislabel every figure.
    const std::string asked = AttentionBaselineOf(options).flashinfer_version;
    if (build.version != asked)
      throw BaselineError("FlashInfer: the parent built version " + build.version + ", not the " +
                          asked + " asked for");
    fi_ = FlashInferAttention::Load(build);
    fi_->Prepare(ShapeOf(axes));
  }
  std::string Name() const override { return fi_->Name(); }
  void Run(const std::vector<DeviceTensor>& t, Stream stream) override {
    fi_->Forward(t.at(0).data, t.at(1).data, t.at(2).data, t.at(3).data,
                 static_cast<float*>(t.at(4).data), stream);
  }
  nlohmann::json Describe() const override { return fi_->Describe(); }

 private:
  static SdpaShape ShapeOf(const Axes& a) {
    return {static_cast<int>(a.at("B")), static_cast<int>(a.at("H")), static_cast<int>(a.at("S")),
            static_cast<int>(a.at("D")), a.at("causal") != 0};
  }
  std::unique_ptr<FlashInferAttention> fi_;
};

}  // namespace

AttentionBaseline AttentionBaselineOf(const nlohmann::json& options) {
  if (!options.is_object()) return AttentionBaseline{};
  if (options.value("attention", "") == "cudnn") return AttentionBaseline::Cudnn();
  return AttentionBaseline::FlashInfer(
      options.value("flashinfer_version", std::string(kDefaultFlashInferVersion)));
}

nlohmann::json PrepareBaselineOptions(const Family& family, const Axes& axes,
                                      const AttentionBaseline& attention,
                                      const std::string& cache_root) {
  nlohmann::json o = {{"attention", ToString(attention.library)}};
  if (!attention.IsFlashInfer()) return o;
  o["flashinfer_version"] = attention.flashinfer_version;
  if (family.Name() != "mha_fwd") return o;
  try {
    o["flashinfer_build"] =
        ToJson(BuildFlashInferAttention(static_cast<int>(axes.at("D")), axes.at("causal") != 0,
                                        attention.flashinfer_version, cache_root));
  } catch (const BaselineUnsupported& e) {
    o["flashinfer_unsupported"] = e.what();
  } catch (const std::exception& e) {
    o["flashinfer_error"] = e.what();
  }
  return o;
}

std::unique_ptr<Baseline> MakeBaseline(const Family& family, const Axes& axes,
                                       const nlohmann::json& options, std::string* why) {
  if (family.Name() == "gemm") return std::make_unique<GemmBaseline>(axes, false);
  if (family.Name() == "gemm_f16") return std::make_unique<GemmBaseline>(axes, true);
  if (family.Name() == "mha_fwd") {
    if (AttentionBaselineOf(options).IsFlashInfer())
      return std::make_unique<FlashInferBaseline>(axes, options);
    return std::make_unique<CudnnAttentionBaseline>(true, axes);
  }
  if (family.Name() == "mha_bwd") return std::make_unique<CudnnAttentionBaseline>(false, axes);
  if (why) *why = "the " + family.Name() + " family has no baseline yet";
  return nullptr;
}

}  // namespace ptxbench
