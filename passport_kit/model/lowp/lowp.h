// What kernels.cpp and amx.cpp share (one library, one `passport_kit` op namespace, two
// translation units). The loader digests this header with the sources (loader.library_key), so a
// changed declaration makes a built library stale.
#pragma once

#include <cstdint>

namespace passport_kit_lowp {

// amx.cpp: whether this process may run AMX tile instructions (the CPU's AMX-TILE and AMX-BF16 and
// the kernel's permission for the tile data), and that file's tile configuration (all eight tiles
// 16 rows × 64 bytes) loaded on the calling thread.
bool amx_usable();
void load_tile_config();

// kernels.cpp: one sample's whole criss-cross attention with that file's attend or attend_amx (the
// same bits as criss_cross_attention), behind an opaque per-thread workspace, for amx.cpp's
// criss_cross_layer. qkv: the sample's C·P token rows (channel-major, row stride ldq), columns
// [q_s k_s v_s | q_t k_t v_t]; the spatial heads' outputs go to out's columns 0.., the temporal
// ones' to out_t.., row stride ldo. With AMX the caller has the tile configuration loaded.
struct SampleAttention;
SampleAttention* sample_attention_new(int64_t c, int64_t p, int64_t e, int64_t heads_s, int64_t heads_t);
void sample_attention_free(SampleAttention* w);
void sample_attention_run(SampleAttention* w, const uint16_t* qkv, int64_t ldq, uint16_t* out, int64_t ldo,
                          int64_t out_t);

}  // namespace passport_kit_lowp
