//! PyO3 bindings (feature "python"): the native module `tlrs._core`. Thin by design: conversion
//! and error mapping only; semantics live in the core.

mod checkpoint;
mod cuda;
mod dlpack;
mod elementwise;
mod errors;
mod graph;
mod init;
mod int_args;
mod nccl;
mod nn_ops;
mod numpy_conv;
mod ops;
mod optim;
mod random;
mod tensor;

use pyo3::prelude::*;

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("ShapeError", py.get_type::<errors::ShapeError>())?;
    m.add("DTypeError", py.get_type::<errors::DTypeError>())?;
    m.add("DeviceError", py.get_type::<errors::DeviceError>())?;
    m.add(
        "CudaUnavailableError",
        py.get_type::<errors::CudaUnavailableError>(),
    )?;
    m.add("CheckpointError", py.get_type::<errors::CheckpointError>())?;
    m.add("AutogradError", py.get_type::<errors::AutogradError>())?;
    m.add("TraceError", py.get_type::<errors::TraceError>())?;
    m.add_class::<tensor::PyTensor>()?;
    m.add_class::<init::PyFloatInit>()?;
    m.add_class::<init::PyPlan>()?;
    m.add_class::<graph::PyGraph>()?;
    m.add_function(wrap_pyfunction!(graph::_recorded_ops, m)?)?;
    m.add_class::<nccl::PyNcclComm>()?;
    macro_rules! add_fns {
        ($($f:path),* $(,)?) => { $( m.add_function(wrap_pyfunction!($f, m)?)?; )* };
    }
    elementwise::register(m)?;
    add_fns!(
        tensor::dtype_spellings,
        ops::tensor_from_numpy,
        dlpack::from_dlpack_py,
        ops::full,
        ops::matmul,
        ops::mse_loss,
        ops::l1_loss,
        ops::smooth_l1_loss,
        ops::huber_loss,
        ops::binary_cross_entropy_with_logits,
        ops::pow,
        ops::clamp,
        ops::sum,
        ops::mean,
        ops::max,
        ops::reshape,
        ops::broadcast_to,
        ops::flatten,
        ops::permute,
        ops::transpose,
        ops::concat,
        ops::slice,
        ops::index_select,
        ops::index_select_t,
        ops::compare,
        ops::cross_entropy_index_tensor,
        ops::softmax,
        ops::log_softmax,
        ops::logsumexp,
        ops::var,
        ops::prod,
        ops::cumsum,
        ops::cross_entropy_indices,
        ops::cross_entropy_probs,
        ops::cross_entropy_smoothed,
        ops::nll_loss_index_tensor,
        ops::linear,
        ops::grad,
        ops::enter_no_grad,
        ops::enter_step,
        ops::exit_step,
        ops::exit_no_grad,
        ops::is_grad_enabled,
        ops::set_num_threads,
        ops::get_num_threads,
        ops::fma_peak_gflops,
        ops::mul_add_peak_gflops,
        ops::cached_memory,
        ops::release_cached_memory,
        ops::set_fast_kernels,
        ops::get_fast_kernels,
        ops::get_kernel_settings,
        ops::set_kernel_settings,
        random::manual_seed,
        random::fresh_seed,
        random::rand,
        random::randn,
        random::cpu_features,
        init::fan_in_out,
        init::xavier_uniform_for_shape,
        init::kaiming_uniform_for_shape,
        init::xavier_linear_weight,
        init::kaiming_linear_weight,
        init::splitmix64,
        init::next_seed,
        init::key_of,
        init::runtime_init_unit,
        init::lcg_units,
        init::shuffle_permutation,
        init::seed_stream_state,
        init::set_seed_stream_state,
        init::layer_init,
        checkpoint::save_safetensors,
        checkpoint::load_safetensors,
        checkpoint::load_safetensors_complex,
        nn_ops::conv2d,
        nn_ops::max_pool2d,
        nn_ops::avg_pool2d,
        nn_ops::global_avg_pool2d,
        nn_ops::batch_norm_per_image,
        nn_ops::batch_norm_train,
        nn_ops::batch_norm_eval,
        nn_ops::layer_norm,
        nn_ops::attention_softmax,
        nn_ops::multi_head_attention,
        nn_ops::dropout,
        nn_ops::embedding,
        nn_ops::embedding_t,
        nn_ops::gather,
        nn_ops::sort_along,
        nn_ops::scatter_add,
        nn_ops::masked_fill,
        cuda::cuda_status,
        cuda::cuda_device_count,
        cuda::cuda_diagnostics,
        cuda::cuda_set_tf32,
        cuda::cuda_synchronize,
        cuda::cuda_set_matmul_precision,
        cuda::build_features,
        nccl::nccl_probe,
        nccl::nccl_unique_id,
        optim::optim_update,
        optim::optim_update_,
        nn_ops::assign_,
    );
    elementwise::set_star_exports(m)
}
