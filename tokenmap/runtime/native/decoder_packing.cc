// Packed GEMM for the decoder of Whisper on CTranslate2 4.7.1 (tokenmap/runtime/packing.py loads this).
//
// With packing on (CT2_USE_EXPERIMENTAL_PACKED_GEMM=1, Intel MKL), CTranslate2 4.7.1 replaces every
// weight that Model::is_packable accepts by a packed copy and drops the original. For Whisper that
// includes the 3-D convolution weights of the encoder, which Conv1D then cannot find, so the model
// fails to load. This definition takes the place of the library's exported Model::is_packable (its
// one caller has already checked that the name is a linear weight) and accepts the decoder's weights
// only: the decoder's GEMMs are packed, the encoder is loaded as without packing.
#include <string>

namespace ctranslate2 {
namespace models {
class Model {
 public:
  bool is_packable(const std::string& variable_name) const;
};
}  // namespace models
}  // namespace ctranslate2

bool ctranslate2::models::Model::is_packable(const std::string& variable_name) const {
  return variable_name.rfind("decoder/", 0) == 0;
}
