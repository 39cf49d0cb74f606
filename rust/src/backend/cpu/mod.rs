//! CPU kernels: reference kernels (bit-reproducible fold orders) and fast kernels.

pub mod attention_softmax;
mod binary_lanes;
pub mod compare;
pub mod conv;
#[cfg(test)]
mod conv_act_tests;
#[cfg(target_arch = "x86_64")]
mod conv_direct;
pub mod conv_grad;
mod cross_entropy_probs;
pub mod elementwise;
#[cfg(target_arch = "x86_64")]
mod elu_lanes;
pub mod erf_lanes;
#[cfg(target_arch = "x86_64")]
mod erf_sorted;
pub mod exp_lanes;
pub mod f32_lane_ops;
mod f32_view;
mod f64_lane_ops;
mod fold_f32;
pub mod fused;
mod gelu_f32;
pub mod gemm_ref;
pub mod host_buf;
pub mod kept_unary;
pub mod lanewise;
pub mod layout;
pub mod logsumexp;
pub mod loss;
pub mod matmul;
mod max_long;
pub mod norm;
mod outer;
pub mod parallel;
pub mod peak;
mod pointwise_loss;
pub mod pool;
#[cfg(target_arch = "x86_64")]
mod pool_2x2;
mod pow_special;
pub mod prod;
mod prod_rows;
pub mod reduce;
mod row_folds;
pub mod simd;
pub mod softmax;
pub mod sort;
pub mod storage;
pub mod storage_ops;
pub mod table_kernels;
mod team;
#[cfg(target_arch = "x86_64")]
mod tile16;
pub mod uninit;
pub mod variance;
mod wide_rows;

pub use storage::{CpuElem, CpuStorage};
