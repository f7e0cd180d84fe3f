// The decoder layers of model YAMLs, with PyTorch's semantics and initialisation: conv2d_transpose
// (nn.ConvTranspose2d) and upsample (nn.Upsample), for autoencoders and U-Net style networks.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>

#include "layer_types.h"
#include "op_api.h"

namespace pd::model {
namespace {

// torch's ConvTranspose2d: weight [C_in, C_out / groups, kH, kW], initialised from the fan-in torch
// takes for it (the weight's second extent times the kernel).
class ConvTranspose2d : public Layer {
 public:
  using Layer::Layer;
  void build(const std::vector<Shape>& in, ParamFactory& pf) override {
    expect_inputs(in, 1);
    if (in[0].size() != 4) fail("input", fmt::format("conv2d_transpose needs a [N, C, H, W] input, got {}", shape_str(in[0])));
    const int64_t out = get_int("out_channels"), groups = get_int("groups", 1);
    const std::vector<int64_t> k = get_pair("kernel_size", {});
    if (out <= 0 || groups <= 0 || in[0][1] % groups != 0 || out % groups != 0)
      fail("groups", fmt::format("groups {} must divide the input channels {} and out_channels {}", groups, in[0][1], out));
    const int64_t fan_in = out / groups * k[0] * k[1];
    const double bound = fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.0;
    weight_ = add_param(pf, "weight", {in[0][1], out / groups, k[0], k[1]}, bound);
    if (get_bool("bias", true)) bias_ = add_param(pf, "bias", {out}, bound);
    stride_ = get_pair("stride", {1, 1});
    padding_ = get_pair("padding", {0, 0});
    output_padding_ = get_pair("output_padding", {0, 0});
    dilation_ = get_pair("dilation", {1, 1});
    groups_ = groups;
  }
  Tensor forward(const std::vector<Tensor>& in, const ForwardCtx&) override {
    return ops::conv2d_transpose(in[0], weight_, bias_, stride_, padding_, output_padding_, dilation_, groups_);
  }

 private:
  Tensor weight_, bias_;
  std::vector<int64_t> stride_, padding_, output_padding_, dilation_;
  int64_t groups_ = 1;
};

// torch's nn.Upsample: by scale_factor (an integer or [h, w]) or to size, nearest (torch's: asymmetric
// coordinates, indices truncated), bilinear or bicubic (torch's a = -0.75; align_corners as torch's flag).
class Upsample : public Layer {
 public:
  using Layer::Layer;
  void build(const std::vector<Shape>& in, ParamFactory&) override {
    expect_inputs(in, 1);
    if (in[0].size() != 4 || in[0][2] <= 0 || in[0][3] <= 0)
      fail("input", fmt::format("upsample needs a [N, C, H, W] input with known H and W, got {}", shape_str(in[0])));
    const bool by_size = spec_.attrs.count("size") > 0;
    if (by_size == (spec_.attrs.count("scale_factor") > 0)) fail("scale_factor", "give exactly one of scale_factor and size");
    if (by_size) {
      size_ = get_pair("size", {});
    } else {
      const std::vector<int64_t> f = get_pair("scale_factor", {});
      if (f[0] < 1 || f[1] < 1) fail("scale_factor", fmt::format("must be positive integers, got {}", f));
      size_ = {in[0][2] * f[0], in[0][3] * f[1]};
      scales_ = {static_cast<double>(f[0]), static_cast<double>(f[1])};
    }
    mode_ = get_string("mode", "nearest", {"nearest", "bilinear", "bicubic"});
    const bool corners = get_bool("align_corners", false);
    if (corners && mode_ == "nearest") fail("align_corners", "applies to bilinear and bicubic only (as in torch)");
    coordinates_ = mode_ == "nearest" ? "asymmetric" : (corners ? "align_corners" : "pytorch_half_pixel");
  }
  Tensor forward(const std::vector<Tensor>& in, const ForwardCtx&) override {
    return ops::interpolate(in[0], size_, scales_, mode_, coordinates_, "floor");
  }

 private:
  std::vector<int64_t> size_;
  std::vector<double> scales_;
  std::string mode_, coordinates_;
};

}  // namespace

void add_decoder_layers(std::map<std::string, TypeInfo>& r) {
  r["conv2d_transpose"] = {create<ConvTranspose2d>,
                           {"out_channels", "kernel_size", "stride", "padding", "output_padding", "dilation", "groups", "bias"}};
  r["upsample"] = {create<Upsample>, {"scale_factor", "size", "mode", "align_corners"}};
}

}  // namespace pd::model
