//! The op set. Each function checks its arguments (naming both shapes on a mismatch), runs the
//! kernel of the current kind and records its `Op` for autograd.

pub mod attention;
pub mod attention_softmax;
pub mod axes;
pub mod compare;
pub mod conv;
pub mod convert;
pub mod cross_entropy_probs;
pub mod dropout;
pub mod elementwise;
pub mod fused;
pub mod index;
pub mod layout;
pub mod logsumexp;
pub mod loss;
pub mod matmul;
pub mod norm;
pub(crate) mod norm_per_image;
pub mod pointwise_loss;
pub mod pool;
pub mod prod;
pub mod reduce;
pub mod softmax;
pub mod sort;
#[cfg(test)]
mod test_support;
pub mod variance;

pub use attention::multi_head_attention;
pub use conv::{conv2d, global_avg_pool2d};
pub use pool::{
    avg_pool2d, avg_pool2d_with, max_pool2d, max_pool2d_indices, max_pool2d_with, PoolSpec,
};
// Every op of the elementwise table, plus binary/unary, pow and clamp.
pub use elementwise::*;
pub use index::{embedding, gather, masked_fill, scatter_add};
pub use layout::{concat, contiguous, flatten, index_select, permute, reshape, slice, transpose};
pub use logsumexp::logsumexp;
pub use loss::{cross_entropy, cross_entropy_ignoring, nll_loss_ignoring, Target};
pub use matmul::{linear, matmul, matmul_t};
pub use norm::{batch_norm_batch_stats, batch_norm_eval, batch_norm_per_image, layer_norm};
pub use pointwise_loss::{
    binary_cross_entropy_with_logits, huber_loss, l1_loss, mse_loss, smooth_l1_loss,
};
pub use prod::prod;
pub use reduce::{broadcast_to, max, mean, sum, sum_to_shape};
pub use softmax::{log_softmax, softmax};
pub use variance::var;
