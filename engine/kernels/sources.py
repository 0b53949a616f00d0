"""CUDA sources of the fused kernels; each is compiled with ``typedef float T;`` or ``typedef double T;``
in front. Every kernel takes its element count last and walks it with a grid-stride loop."""

from __future__ import annotations

PRELUDE = r"""
#define GRID_LOOP(i, n) \
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < (n); \
       i += (long long)blockDim.x * gridDim.x)
#define LOWEST_FLOAT (-3.4028234663852886e+38)
#define SMALLEST_FLOAT (1.1754943508222875e-38)
"""

IM2COL_2D = r"""
extern "C" __global__ void im2col_2d(
    const T* x, T* col, const int C, const int H, const int W, const int KH, const int KW,
    const int PH, const int PW, const int SH, const int SW, const int DH, const int DW,
    const int OH, const int OW, const long long count) {
  GRID_LOOP(index, count) {  // over (n, c, oh, ow)
    const int ow = index % OW;
    long long t = index / OW;
    const int oh = t % OH;
    t /= OH;  // n * C + c
    const T* image = x + t * H * W;
    T* out = col + (t * KH * KW * OH + oh) * OW + ow;
    const int h0 = oh * SH - PH;
    const int w0 = ow * SW - PW;
    for (int i = 0; i < KH; ++i) {
      const int h = h0 + i * DH;
      for (int j = 0; j < KW; ++j) {
        const int w = w0 + j * DW;
        *out = (h >= 0 && w >= 0 && h < H && w < W) ? image[h * W + w] : T(0);
        out += (long long)OH * OW;
      }
    }
  }
}
"""

COL2IM_2D = r"""
extern "C" __global__ void col2im_2d(
    const T* col, T* x, const int C, const int H, const int W, const int KH, const int KW,
    const int PH, const int PW, const int SH, const int SW, const int DH, const int DW,
    const int OH, const int OW, const long long count) {
  GRID_LOOP(index, count) {  // over (n, c, h, w)
    const int w = index % W;
    long long t = index / W;
    const int h = t % H;
    t /= H;  // n * C + c
    const T* image_col = col + t * KH * KW * OH * OW;
    T sum = 0;
    for (int i = 0; i < KH; ++i) {
      const int hp = h + PH - i * DH;  // = oh * SH for the output row that reads (h, i)
      if (hp < 0 || hp % SH != 0 || hp / SH >= OH) continue;
      const int oh = hp / SH;
      for (int j = 0; j < KW; ++j) {
        const int wp = w + PW - j * DW;
        if (wp < 0 || wp % SW != 0 || wp / SW >= OW) continue;
        sum += image_col[((long long)(i * KW + j) * OH + oh) * OW + wp / SW];
      }
    }
    x[index] = sum;
  }
}
"""

MAX_POOL_FORWARD = r"""
extern "C" __global__ void max_pool_forward(
    const T* x, T* y, int* mask, const int C, const int H, const int W, const int PH, const int PW,
    const int KH, const int KW, const int SH, const int SW, const int PADH, const int PADW,
    const long long count) {
  GRID_LOOP(index, count) {  // over (n, c, ph, pw)
    const int pw = index % PW;
    long long t = index / PW;
    const int ph = t % PH;
    t /= PH;
    int hs = ph * SH - PADH;
    int ws = pw * SW - PADW;
    const int he = min(hs + KH, H);
    const int we = min(ws + KW, W);
    hs = max(hs, 0);
    ws = max(ws, 0);
    const T* image = x + t * H * W;
    T best = T(LOWEST_FLOAT);  // as Caffe: only a strictly greater value takes over (never NaN)
    int chosen = -1;
    for (int h = hs; h < he; ++h) {
      for (int w = ws; w < we; ++w) {
        const T v = image[h * W + w];
        if (v > best) {
          best = v;
          chosen = h * W + w;
        }
      }
    }
    y[index] = best;
    mask[index] = chosen;
  }
}
"""

MAX_POOL_BACKWARD = r"""
extern "C" __global__ void max_pool_backward(
    const T* dy, const int* mask, T* dx, const int C, const int H, const int W, const int PH,
    const int PW, const int KH, const int KW, const int SH, const int SW, const int PADH,
    const int PADW, const long long count) {
  GRID_LOOP(index, count) {  // over (n, c, h, w)
    const int w = index % W;
    long long t = index / W;
    const int h = t % H;
    t /= H;
    const int phs = (h + PADH < KH) ? 0 : (h + PADH - KH) / SH + 1;
    const int phe = min((h + PADH) / SH + 1, PH);
    const int pws = (w + PADW < KW) ? 0 : (w + PADW - KW) / SW + 1;
    const int pwe = min((w + PADW) / SW + 1, PW);
    const long long offset = t * PH * PW;
    const int me = h * W + w;
    T sum = 0;
    for (int ph = phs; ph < phe; ++ph) {
      for (int pw = pws; pw < pwe; ++pw) {
        if (mask[offset + ph * PW + pw] == me) sum += dy[offset + ph * PW + pw];
      }
    }
    dx[index] = sum;
  }
}
"""

SGD_UPDATE = r"""
extern "C" __global__ void sgd_update(
    T* data, T* diff, T* history, const T scale, const T decay, const T momentum, const T rate,
    const long long count) {
  GRID_LOOP(i, count) {
    T g = diff[i] * scale;
    if (decay != T(0)) g += decay * data[i];
    T v = momentum * history[i];
    v += rate * g;
    history[i] = v;
    diff[i] = v;
    data[i] -= v;
  }
}
"""

# The same step with the rate read from the device (a CUDA graph replays it as the rate changes):
# local = rate * lr_mult is formed in T as Caffe's local_rate, so the numbers are sgd_update's.
SGD_UPDATE_DEVICE_RATE = r"""
extern "C" __global__ void sgd_update_device_rate(
    T* data, T* diff, T* history, const T decay, const T momentum, const T* rate, const T lr_mult,
    const long long count) {
  const T local = rate[0] * lr_mult;
  GRID_LOOP(i, count) {
    T g = diff[i];
    if (decay != T(0)) g += decay * data[i];
    T v = momentum * history[i];
    v += local * g;
    history[i] = v;
    diff[i] = v;
    data[i] -= v;
  }
}
"""

SOFTMAX_LOSS_FORWARD = r"""
extern "C" __global__ void softmax_loss_forward(
    const T* scores, const T* labels, T* prob, T* loss, T* valid, T* bad, const int C,
    const int inner, const int has_ignore, const int ignore_label, const long long count) {
  GRID_LOOP(index, count) {  // over (outer, inner) positions
    const long long o = index / inner;
    const int i = index % inner;
    const T* s = scores + o * C * inner + i;
    T* p = prob + o * C * inner + i;
    T top = s[0];
    for (int k = 1; k < C; ++k) top = s[k * inner] > top ? s[k * inner] : top;
    T total = 0;
    for (int k = 0; k < C; ++k) {
      const T e = exp(s[k * inner] - top);
      p[k * inner] = e;
      total += e;
    }
    for (int k = 0; k < C; ++k) p[k * inner] /= total;
    const T whole = trunc(labels[index]);
    const bool counted = !(has_ignore && whole == T(ignore_label));
    const bool in_range = whole >= 0 && whole < C;
    valid[index] = counted ? T(1) : T(0);
    bad[index] = (counted && !in_range) ? T(1) : T(0);
    T picked = T(1);
    if (counted && in_range) picked = p[(int)whole * inner];
    loss[index] = counted ? -log(picked > T(SMALLEST_FLOAT) ? picked : T(SMALLEST_FLOAT)) : T(0);
  }
}
"""

SOFTMAX_LOSS_BACKWARD = r"""
extern "C" __global__ void softmax_loss_backward(
    const T* prob, const T* labels, const T* valid, const T* scale, T* dx, const int C,
    const int inner, const long long count) {
  GRID_LOOP(index, count) {  // over (outer, C, inner)
    const int i = index % inner;
    const long long t = index / inner;
    const int k = t % C;
    const long long position = (t / C) * inner + i;
    const T v = valid[position];
    const T target = (v != T(0) && (int)trunc(labels[position]) == k) ? T(1) : T(0);
    T d = prob[index] - target;
    d *= v;
    dx[index] = d * scale[0];
  }
}
"""

SOURCES = {
    name: PRELUDE + source
    for name, source in {
        "im2col_2d": IM2COL_2D,
        "col2im_2d": COL2IM_2D,
        "max_pool_forward": MAX_POOL_FORWARD,
        "max_pool_backward": MAX_POOL_BACKWARD,
        "sgd_update": SGD_UPDATE,
        "sgd_update_device_rate": SGD_UPDATE_DEVICE_RATE,
        "softmax_loss_forward": SOFTMAX_LOSS_FORWARD,
        "softmax_loss_backward": SOFTMAX_LOSS_BACKWARD,
    }.items()
}
