"""Seeded generator of large profiler outputs in the real layouts, for the benchmarks.

It writes files that look like what the profilers print for a training step
(tens of thousands to a million kernel launches), imitating the layouts of
the public files in ``../shared/realdata`` without copying them:

``ncu-raw``
    ``ncu --csv --page raw``: ``==PROF==`` lines, a quoted header of 475
    columns (identity columns, then ``c2clink__``, ``device__attribute_*``,
    ``launch__*``, ``nvlink__``, ``numa__``, ``profiler__``, ``sm__``...
    metrics in alphabetical order), a units row (empty for the identity
    columns; ``%``, ``inst/cycle``, ``byte``, ``block``, ``ns``...), and one
    row per launch mixing numbers, tuples such as ``"(128, 1, 1)"`` and words
    such as ``NVIDIA B200`` or ``CachePreferNone``.
``ncu-details``
    ``ncu --csv`` of Nsight Compute 2025: the 20-column layout (Block Size,
    Grid Size, Device, CC and five rule columns), metric rows that end with a
    trailing comma, rule rows with long prose, units chosen per value
    (``byte``/``Kbyte``/``Mbyte``, ``us``, ``Ghz``) and thousands separators
    (``"12,532,580,352"``).
``ncu-details-old``
    the 12-column ``--metrics`` layout of ncu 2019-2022 (``Kernel Time``,
    ``nsecond``, ``cycle/second``, ``byte``), app stdout before ``==PROF==``.
``nvprof``
    a ``--print-gpu-trace --csv`` trace (units row ``ms,us,...``, memcpy rows,
    correlation suffixes ``[1073]``) and the ``--metrics --csv`` summary of
    the same run (Min/Max/Avg with units in the text, ``"Low (2)"`` levels).

Kernel names are the long templated names of a PyTorch training step
(cutlass/cuBLAS GEMMs, flash attention, ``at::native`` elementwise kernels
with ``{lambda(int)#1}``, ``(anonymous namespace)``, Eigen, NCCL, Triton),
drawn with a Zipf-like frequency. Everything is derived from ``seed``.

    python benchmarks/generate.py ncu-raw 100000 /tmp/bench      # one file
    python benchmarks/generate.py all 10000 /tmp/bench           # every layout

Rows are produced from per-kernel templates with ``str.format`` (only the
per-launch counters are formatted for each row) and written in chunks, so a
million-launch raw file (about 3 GB) is written in well under a minute.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

KINDS = ("ncu-raw", "ncu-details", "ncu-details-old", "nvprof")
RAW_COLUMNS = 475
CHUNK = 20_000

# ---- kernel names -----------------------------------------------------------

_DTYPES = ("float", "c10::Half", "c10::BFloat16")
_OPS = ("CUDAFunctor_add", "MulFunctor", "DivFunctor", "GeluCUDAKernelImpl", "silu_kernel", "fill_kernel_cuda",
        "threshold_kernel_impl", "where_kernel_impl", "copy_kernel_impl", "sqrt_kernel_cuda")


def kernel_names() -> list[str]:
    """About 300 distinct kernel names in the styles a PyTorch training step launches."""
    names: list[str] = []
    for dt in _DTYPES:
        for vec in (2, 4, 8):
            for op in _OPS[:6]:
                names.append(
                    f"void at::native::vectorized_elementwise_kernel<{vec}, at::native::{op}<{dt}>, "
                    f"at::detail::Array<char*, 3> >(int, at::native::{op}<{dt}>, at::detail::Array<char*, 3>)")
        for op in _OPS:
            names.append(
                f"void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<"
                f"at::native::BinaryFunctor<{dt}, {dt}, {dt}, at::native::binary_internal::{op}<{dt}> > >"
                f"(at::TensorIteratorBase&, at::native::BinaryFunctor<{dt}, {dt}, {dt}, "
                f"at::native::binary_internal::{op}<{dt}> > const&)::{{lambda(int)#1}}>(int, "
                f"at::native::gpu_kernel_impl_nocast<at::native::BinaryFunctor<{dt}, {dt}, {dt}, "
                f"at::native::binary_internal::{op}<{dt}> > >(at::TensorIteratorBase&, at::native::BinaryFunctor<"
                f"{dt}, {dt}, {dt}, at::native::binary_internal::{op}<{dt}> > const&)::{{lambda(int)#1}})")
            names.append(
                f"void at::native::unrolled_elementwise_kernel<at::native::{op}(at::TensorIteratorBase&)::"
                f"{{lambda()#1}}::operator()() const::{{lambda()#7}}::operator()() const::{{lambda({dt})#1}}, "
                f"at::detail::Array<char*, 2>, TrivialOffsetCalculator<1, unsigned int>, "
                f"TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, "
                f"at::native::memory::StoreWithCast<1> >(int, {dt}, at::detail::Array<char*, 2>)")
        names.append(
            f"void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<{dt}, float>(int, float, "
            f"{dt} const*, {dt} const*, {dt} const*, float*, float*, {dt}*)")
        names.append(
            f"void at::native::(anonymous namespace)::layer_norm_grad_input_kernel_vectorized<{dt}, float>("
            f"{dt} const*, {dt} const*, float const*, float const*, {dt} const*, {dt}*, int)")
        names.append(
            f"void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, {dt}, float, {dt}, "
            f"at::native::(anonymous namespace)::SoftMaxForwardEpilogue>({dt}*, {dt} const*, int)")
        names.append(
            f"void at::native::reduce_kernel<512, 1, at::native::ReduceOp<{dt}, at::native::func_wrapper_t<float, "
            f"at::native::sum_functor<{dt}, float, {dt}>::operator()(at::TensorIterator&)::{{lambda(float, float)#1}}>"
            f", unsigned int, {dt}, 4> >(at::native::ReduceOp<{dt}, at::native::func_wrapper_t<float, "
            f"at::native::sum_functor<{dt}, float, {dt}>::operator()(at::TensorIterator&)::{{lambda(float, float)#1}}>"
            f", unsigned int, {dt}, 4>)")
        names.append(
            f"void at::native::(anonymous namespace)::fused_dropout_kernel_vec<{dt}, float, unsigned int, 1, 4, "
            f"bool>(at::cuda::detail::TensorInfo<{dt}, unsigned int>, at::cuda::detail::TensorInfo<{dt}, "
            f"unsigned int>, at::cuda::detail::TensorInfo<bool, unsigned int>, unsigned int, float, "
            f"at::PhiloxCudaState)")
        names.append(
            f"void kernelPointwiseApply2<TensorFillOp<{dt}>, {dt}, {dt}, unsigned int, 1, -2>(OffsetInfo<{dt}, "
            f"unsigned int, 1>, OffsetInfo<{dt}, unsigned int, -2>, unsigned int, TensorFillOp<{dt}>) "
            f"[lambda({dt}) (instance 1)]")
    for tile in ("64x64x64", "128x128x64", "128x256x64", "256x128x64"):
        for layout in ("tn", "nt", "nn"):
            names.append(f"sm90_xmma_gemm_bf16bf16_bf16f32_f32_{layout}_n_tilesize{tile}_warpgroupsize2x1x1_"
                         f"execute_segment_k_off_kernel__5x_cublas")
            names.append(f"void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_{tile.rsplit('x', 1)[0]}"
                         f"_32x3_{layout}_align8>(cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_"
                         f"{tile.rsplit('x', 1)[0]}_32x3_{layout}_align8::Params)")
    for hd in (64, 128):
        for causal in (0, 1):
            names.append(
                f"void flash_fwd_kernel<Flash_fwd_kernel_traits<{hd}, 128, 64, 4, 0, 0, cutlass::bfloat16_t, "
                f"Flash_kernel_traits<{hd}, 128, 64, 4, cutlass::bfloat16_t>>, {causal}, 0, 0, 0, 0, 1, 0, 0>"
                f"(Flash_fwd_params)")
            names.append(
                f"void flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<{hd}, 64, 128, 8, 2, 4, "
                f"2, false, false, cutlass::bfloat16_t, Flash_kernel_traits<{hd}, 64, 128, 8, cutlass::bfloat16_t>>, "
                f"{causal}, 0, 0, 0, 0, 0>(Flash_bwd_params)")
    for coll in ("AllReduce_Sum_bf16_RING_LL", "AllGather_RING_LL", "ReduceScatter_Sum_bf16_RING_SIMPLE"):
        names.append(f"ncclDevKernel_{coll}(ncclDevComm*, unsigned long, ncclWork*)")
    names.append("void multi_tensor_apply_kernel<at::native::(anonymous namespace)::TensorListMetadata<4>, "
                 "at::native::(anonymous namespace)::FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)1, "
                 "false>, double*, double, double, double, double, double, bool, float const*, float const*>("
                 "at::native::(anonymous namespace)::TensorListMetadata<4>, at::native::(anonymous namespace)::"
                 "FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)1, false>, double*, double, double, double, "
                 "double, double, bool, float const*, float const*)")
    eigen = ("Eigen::TensorMap<Eigen::Tensor<Eigen::half, 1, 1, long>, 16, Eigen::MakePointer>, "
             "Eigen::TensorConversionOp<Eigen::half, Eigen::TensorMap<Eigen::Tensor<float const, 1, 1, long>, 16, "
             "Eigen::MakePointer> const> const")
    names.append(f"void Eigen::internal::EigenMetaKernel<Eigen::TensorEvaluator<Eigen::TensorAssignOp<{eigen}> const, "
                 f"Eigen::GpuDevice>, long>(Eigen::TensorEvaluator<Eigen::TensorAssignOp<{eigen}> const, "
                 f"Eigen::GpuDevice>, long)")
    for i in range(24):
        names.append(f"triton_poi_fused__to_copy_add_mul_native_layer_norm_{i}")
        names.append(f"triton_red_fused__log_softmax_nll_loss_forward_{i}")
    return names


# ---- per-kernel and per-launch values ------------------------------------------

@dataclass
class Launches:
    """What every launch of the run looks like: kernel index and the per-launch counters."""

    kernel: np.ndarray  # index into names
    duration_ns: np.ndarray
    cycles: np.ndarray
    inst_executed: np.ndarray
    inst_issued: np.ndarray
    dram_read: np.ndarray
    dram_write: np.ndarray
    gld_req: np.ndarray
    gld_sectors: np.ndarray
    gst_req: np.ndarray
    gst_sectors: np.ndarray
    shared_ld: np.ndarray
    occupancy_pct: np.ndarray


@dataclass
class Kernels:
    names: list[str]
    block: np.ndarray  # (k, 3)
    grid: np.ndarray  # (k, 3)
    regs: np.ndarray
    smem_static: np.ndarray
    smem_dynamic: np.ndarray
    base_ns: np.ndarray
    ipns: np.ndarray  # warp instructions per ns
    bpns: np.ndarray  # DRAM bytes per ns
    occupancy: np.ndarray  # percent


def make_kernels(rng: np.random.Generator) -> Kernels:
    names = kernel_names()
    k = len(names)
    bx = rng.choice([64, 128, 256, 512, 1024], size=k)
    block = np.stack([bx, np.ones(k, int), np.ones(k, int)], axis=1)
    grid = np.stack([rng.integers(1, 4096, k), rng.choice([1, 1, 1, 8, 64], size=k), rng.choice([1, 1, 2, 8], size=k)],
                    axis=1)
    return Kernels(
        names=names, block=block, grid=grid,
        regs=rng.choice([16, 24, 32, 40, 64, 96, 128, 168, 255], size=k),
        smem_static=rng.choice([0, 0, 1024, 4096, 16384], size=k),
        smem_dynamic=rng.choice([0, 0, 0, 32768, 65536, 98304], size=k),
        base_ns=np.exp(rng.uniform(np.log(2_000), np.log(900_000), k)),
        ipns=rng.uniform(5, 400, k),
        bpns=rng.uniform(20, 3000, k),
        occupancy=rng.uniform(8, 95, k),
    )


def make_launches(kern: Kernels, n: int, rng: np.random.Generator) -> Launches:
    k = len(kern.names)
    weights = 1.0 / np.arange(1, k + 1) ** 0.9  # a few kernels dominate a training step
    order = rng.permutation(k)
    kernel = order[rng.choice(k, size=n, p=weights / weights.sum())]
    duration = kern.base_ns[kernel] * rng.lognormal(0.0, 0.08, n)
    clock_ghz = 1.98
    inst = np.rint(duration * kern.ipns[kernel]).astype(np.int64) + 32
    gld_req = np.rint(inst * rng.uniform(0.02, 0.12, n)).astype(np.int64)
    gst_req = np.rint(gld_req * rng.uniform(0.2, 0.6, n)).astype(np.int64)
    dram = duration * kern.bpns[kernel]
    return Launches(
        kernel=kernel,
        duration_ns=np.rint(duration).astype(np.int64),
        cycles=np.rint(duration * clock_ghz).astype(np.int64),
        inst_executed=inst,
        inst_issued=inst + np.rint(inst * rng.uniform(0, 0.03, n)).astype(np.int64),
        dram_read=np.rint(dram * 0.7 / 32).astype(np.int64) * 32,
        dram_write=np.rint(dram * 0.3 / 32).astype(np.int64) * 32,
        gld_req=gld_req,
        gld_sectors=gld_req * rng.choice([4, 4, 4, 8, 16, 32], size=n),
        gst_req=gst_req,
        gst_sectors=gst_req * 4,
        shared_ld=np.rint(inst * rng.uniform(0.0, 0.1, n)).astype(np.int64),
        occupancy_pct=np.clip(kern.occupancy[kernel] * rng.uniform(0.9, 1.05, n), 1, 100).round(2),
    )


def _pct(x: float) -> str:
    """ncu prints percentages with two decimals, and plain 0 for zero."""
    return "0" if x == 0 else f"{x:.2f}"


# ---- ncu raw --------------------------------------------------------------------

RAW_IDENTITY = ("ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream", "Block Size",
                "Grid Size", "Device", "CC")

# the per-launch counters (placeholders in the row templates), with their units row entry and the
# Launches field or raw_counters() key that holds their values. Besides time, cycles, occupancy, instructions,
# DRAM bytes and global requests/sectors, the page carries every counter a built-in model reads from an ncu
# profile, so each model computes its full equations on it (a ``--set full`` page has them all): shared-memory
# instructions and wavefronts (Kothapalli's N_memory and k', Kerr, Luo-Suda, the recommended estimate's shared
# term), barriers (Hong-Kim's Synch_cost), L2 sectors and hit rate (the memory levels), thread-level FP
# instructions (flops: roofline, Transit, Kerr), global atomics/reductions (the recommended estimate) and the
# speed-of-light percentages (roofline's comparison with Nsight). Names and units as real ncu files print them
# (../shared/realdata: the shared and FP counters as in the A100 attention profile, #29) or, for the ones no
# file there holds, the first ncu spelling of nvperf_bridge/data/metric_aliases.csv.
RAW_LAUNCH_METRICS = (
    ("dram__bytes_read.sum", "byte", "dram_read"),
    ("dram__bytes_write.sum", "byte", "dram_write"),
    ("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", "%", "sol_memory_pct"),
    ("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", "%", "sol_dram_pct"),
    ("gpu__time_duration.sum", "ns", "duration_ns"),
    ("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum", "", "shared_ld"),
    ("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum", "", "shared_st_wavefronts"),
    ("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", "request", "gld_req"),
    ("l1tex__t_requests_pipe_lsu_mem_global_op_st.sum", "request", "gst_req"),
    ("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "sector", "gld_sectors"),
    ("l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", "sector", "gst_sectors"),
    ("l1tex__t_set_accesses_pipe_lsu_mem_global_op_atom.sum", "", "atom"),
    ("l1tex__t_set_accesses_pipe_lsu_mem_global_op_red.sum", "", "red"),
    ("lts__t_sector_hit_rate.pct", "%", "l2_hit_pct"),
    ("lts__t_sectors_op_read.sum", "sector", "l2_read_sectors"),
    ("lts__t_sectors_op_write.sum", "sector", "l2_write_sectors"),
    ("sass__inst_executed_shared_loads", "inst", "inst_shared_ld"),
    ("sass__inst_executed_shared_stores", "inst", "inst_shared_st"),
    ("sm__cycles_elapsed.avg", "cycle", "cycles"),
    ("sm__sass_thread_inst_executed_op_dadd_pred_on.sum", "inst", "dadd"),
    ("sm__sass_thread_inst_executed_op_dfma_pred_on.sum", "inst", "dfma"),
    ("sm__sass_thread_inst_executed_op_dmul_pred_on.sum", "inst", "dmul"),
    ("sm__sass_thread_inst_executed_op_fadd_pred_on.sum", "inst", "fadd"),
    ("sm__sass_thread_inst_executed_op_ffma_pred_on.sum", "inst", "ffma"),
    ("sm__sass_thread_inst_executed_op_fmul_pred_on.sum", "inst", "fmul"),
    ("sm__sass_thread_inst_executed_op_hadd_pred_on.sum", "inst", "hadd"),
    ("sm__sass_thread_inst_executed_op_hfma_pred_on.sum", "inst", "hfma"),
    ("sm__sass_thread_inst_executed_op_hmul_pred_on.sum", "inst", "hmul"),
    ("sm__throughput.avg.pct_of_peak_sustained_elapsed", "%", "sol_sm_pct"),
    ("sm__warps_active.avg.pct_of_peak_sustained_active", "%", "occupancy_pct"),
    ("smsp__inst_executed.sum", "inst", "inst_executed"),
    ("smsp__inst_executed_op_barrier.sum", "inst", "inst_barrier"),
    ("smsp__inst_issued.sum", "inst", "inst_issued"),
)


def raw_counters(launches: Launches, seed: int) -> dict[str, np.ndarray]:
    """The raw page's per-launch counters beyond ``Launches`` (see RAW_LAUNCH_METRICS), consistent with it.

    Drawn from a generator of their own (``[seed, 1]``), after the launches they follow from.
    """
    rng = np.random.default_rng([seed, 1])
    n = len(launches.kernel)
    inst = launches.inst_executed
    # shared memory: a load request is 1 wavefront without bank conflicts, k for a k-way conflict
    ways_ld = rng.choice([1, 1, 1, 2, 4], size=n)
    inst_shared_ld = -(-launches.shared_ld // ways_ld)
    inst_shared_st = np.rint(inst_shared_ld * rng.uniform(0.1, 0.6, n)).astype(np.int64)
    shared_st_wavefronts = inst_shared_st * rng.choice([1, 1, 2], size=n)
    # barriers come with shared-memory exchanges between a block's warps
    inst_barrier = np.rint(inst_shared_ld * rng.uniform(0.02, 0.2, n)).astype(np.int64)
    # L2: the L1 misses of global loads and every store reach it, and DRAM reads are its misses
    dram_read_sectors = launches.dram_read // 32
    l2_read = np.maximum(np.rint(launches.gld_sectors * rng.uniform(0.3, 1.0, n)).astype(np.int64),
                         np.rint(dram_read_sectors * rng.uniform(1.0, 1.6, n)).astype(np.int64))
    l2_write = np.maximum(launches.gst_sectors, launches.dram_write // 32)
    l2_hit_pct = np.where(l2_read > 0, 100.0 * (1.0 - dram_read_sectors / np.maximum(l2_read, 1)), 0.0)
    # thread-level FP instructions (32 threads per warp instruction); FP64 in a few launches only
    lanes = inst * 32

    def share(high: float, where: np.ndarray | None = None) -> np.ndarray:
        values = np.rint(lanes * rng.uniform(0.0, high, n)).astype(np.int64)
        return values if where is None else np.where(where, values, 0)

    fp64 = rng.random(n) < 0.05
    atomics = rng.random(n) < 0.1
    sol_sm = np.clip(launches.occupancy_pct * rng.uniform(0.2, 1.0, n), 0.0, 100.0)
    sol_dram = rng.uniform(0.5, 95.0, n)
    return {
        "inst_shared_ld": inst_shared_ld, "inst_shared_st": inst_shared_st,
        "shared_st_wavefronts": shared_st_wavefronts, "inst_barrier": inst_barrier,
        "l2_read_sectors": l2_read, "l2_write_sectors": l2_write, "l2_hit_pct": l2_hit_pct.round(2),
        "ffma": share(0.3), "fadd": share(0.05), "fmul": share(0.05),
        "hfma": share(0.1), "hadd": share(0.02), "hmul": share(0.02),
        "dfma": share(0.02, fp64), "dadd": share(0.01, fp64), "dmul": share(0.01, fp64),
        "atom": np.rint(launches.gst_req * rng.uniform(0.0, 0.2, n) * atomics).astype(np.int64),
        "red": np.rint(launches.gst_req * rng.uniform(0.0, 0.1, n) * atomics).astype(np.int64),
        "sol_sm_pct": sol_sm.round(2), "sol_dram_pct": sol_dram.round(2),
        "sol_memory_pct": np.clip(sol_dram * rng.uniform(1.0, 1.3, n), 0.0, 100.0).round(2),
    }
_DEVICE_ATTRS = (
    "architecture", "async_engine_count", "can_flush_remote_writes", "can_map_host_memory", "can_tex2d_gather",
    "can_use_64_bit_stream_mem_ops", "can_use_host_pointer_for_registered_mem", "can_use_stream_wait_value_nor",
    "chip", "clock_rate", "cluster_launch", "compute_capability_major", "compute_capability_minor", "compute_mode",
    "compute_preemption_supported", "concurrent_kernels", "concurrent_managed_access", "cooperative_launch",
    "cooperative_multi_device_launch", "deferred_mapping_cuda_array_supported", "device_index",
    "direct_managed_mem_access_from_host", "display_name", "dma_buf_supported", "ecc_enabled", "fb_bus_width",
    "fbp_count", "generic_compression_supported", "global_l1_cache_supported", "global_memory_bus_width",
    "gpu_direct_rdma_supported", "gpu_overlap", "gpu_pci_device_id", "gpu_pci_ext_gen", "gpu_pci_revision_id",
    "host_native_atomic_supported", "host_numa_id", "host_register_supported", "implementation", "integrated",
    "ipc_event_supported", "kernel_exec_timeout", "l2_cache_size", "l2s_count", "limits_max_cta_per_sm",
    "limits_num_tpcs", "local_l1_cache_supported", "managed_memory", "max_access_policy_window_size",
    "max_block_dim_x", "max_block_dim_y", "max_block_dim_z", "max_blocks_per_multiprocessor",
    "max_gpu_frequency_khz", "max_grid_dim_x", "max_grid_dim_y", "max_grid_dim_z", "max_ipc_per_multiprocessor",
    "max_ipc_per_scheduler", "max_mem_frequency_khz", "max_persisting_l2_cache_size", "max_pitch",
    "max_registers_per_block", "max_registers_per_multiprocessor", "max_registers_per_thread",
    "max_shared_memory_per_block", "max_shared_memory_per_block_optin", "max_shared_memory_per_multiprocessor",
    "max_threads_per_block", "max_threads_per_multiprocessor", "max_warps_per_multiprocessor",
    "max_warps_per_scheduler", "memory_clock_rate", "memory_pools_supported", "multi_gpu_board",
    "multi_gpu_board_group_id", "multiprocessor_count", "num_l2s_per_fbp", "num_schedulers_per_multiprocessor",
    "num_tex_per_multiprocessor", "pageable_memory_access", "pageable_memory_access_uses_host_page_tables",
    "pci_bus_id", "pci_device_id", "pci_domain_id", "ram_location", "ram_type", "reserved_shared_memory_per_block",
    "sparse_cuda_array_supported", "single_to_double_precision_perf_ratio", "stream_priorities_supported",
    "surface_alignment", "tcc_driver", "texture_alignment", "texture_pitch_alignment", "total_constant_memory",
    "total_memory", "unified_addressing", "warp_size",
)
_LAUNCH = (
    "barrier_count", "block_dim_x", "block_dim_y", "block_dim_z", "block_size", "cluster_dim_x", "cluster_dim_y",
    "cluster_dim_z", "cluster_max_active", "cluster_max_potential_size", "cluster_scheduling_policy", "context_id",
    "device_id", "func_cache_config", "function_pcs", "graph_contains_device_launch", "graph_is_device_launchable",
    "grid_dim_x", "grid_dim_y", "grid_dim_z", "grid_size", "occupancy_cluster_gpu_pct", "occupancy_cluster_pct",
    "occupancy_limit_blocks", "occupancy_limit_registers", "occupancy_limit_shared_mem", "occupancy_limit_warps",
    "occupancy_per_block_size", "occupancy_per_cluster_size", "occupancy_per_register_count",
    "occupancy_per_shared_mem_size", "preferred_cluster_dim_x", "preferred_cluster_dim_y", "preferred_cluster_dim_z",
    "registers_per_thread", "registers_per_thread_allocated", "sm_count", "shared_mem_config_size",
    "shared_mem_per_block", "shared_mem_per_block_allocated", "shared_mem_per_block_driver",
    "shared_mem_per_block_dynamic", "shared_mem_per_block_static", "stream_id", "thread_count", "type", "uses_cdp",
    "uses_green_context", "uses_vgpu", "waves_per_multiprocessor",
)
_LAUNCH_UNITS = {"cluster_max_potential_size": "block", "occupancy_limit_blocks": "block",
                 "occupancy_limit_registers": "block", "occupancy_limit_shared_mem": "block",
                 "occupancy_limit_warps": "block", "registers_per_thread": "register/thread",
                 "registers_per_thread_allocated": "register/thread", "shared_mem_config_size": "byte",
                 "shared_mem_per_block": "byte/block", "shared_mem_per_block_driver": "byte/block",
                 "shared_mem_per_block_dynamic": "byte/block", "shared_mem_per_block_static": "byte/block",
                 "shared_mem_per_block_allocated": "byte/block", "sm_count": "SM", "thread_count": "thread",
                 "occupancy_cluster_gpu_pct": "%", "occupancy_cluster_pct": "%", "cluster_max_active": "cluster"}
_LAUNCH_TEXT = {"cluster_scheduling_policy": "PolicySpread", "func_cache_config": "CachePreferNone", "type": "SIMT",
                "occupancy_per_block_size": "all", "occupancy_per_cluster_size": "all",
                "occupancy_per_register_count": "all", "occupancy_per_shared_mem_size": "all"}
_PIPES = ("adu", "alu", "cbu", "fma", "fmaheavy", "fmalite", "fp16", "fp64", "ipa", "lsu", "tensor", "tensor_op_hmma",
          "tex", "tma", "tmem", "uniform", "xu", "workid", "gma", "dmma")


def raw_columns() -> list[tuple[str, str, str]]:
    """(name, unit, role) for the 475 columns; role: identity, launch (per-launch value), kernel, file, pct."""
    cols: list[tuple[str, str, str]] = [(name, "", "identity") for name in RAW_IDENTITY]
    metrics: list[tuple[str, str, str]] = [("c2clink__enabled_mask", "", "file"), ("c2clink__present", "", "file")]
    metrics += [(f"device__attribute_{a}", "", "file") for a in _DEVICE_ATTRS]
    metrics += [(f"launch__{a}", _LAUNCH_UNITS.get(a, ""), "kernel") for a in _LAUNCH]
    metrics += [(f"nvlink__{a}{i}", "", "file") for a in ("dev0type", "peer_atomic", "bandwidth") for i in range(6)]
    metrics += [(f"numa__{a}", "", "file") for a in ("cpu_affinity", "dev_display_name_all", "id_cpu", "id_memory")]
    metrics += [(f"profiler__replayer_{a}", u, "file") for a, u in
                (("bytes_mem_backed_up.avg", "byte"), ("bytes_mem_backed_up.max", "byte"),
                 ("bytes_mem_backed_up.min", "byte"), ("bytes_mem_backed_up.sum", "byte"),
                 ("passes", "pass"), ("passes_type_warmup", "pass"))]
    metrics += [(m, u, "launch") for m, u, _ in RAW_LAUNCH_METRICS]
    metrics += [("sm__cycles_elapsed.avg.per_second", "cycle/second", "kernel"),
                ("sm__maximum_warps_per_active_cycle_pct", "%", "kernel")]
    for agg in ("avg", "max", "min", "sum"):
        metrics.append((f"sm__inst_executed.{agg}.per_cycle_elapsed", "inst/cycle", "pct"))
        metrics.append((f"sm__inst_issued.{agg}.per_cycle_active", "inst/cycle", "pct"))
    for pipe in _PIPES:
        for agg in ("avg", "max", "min", "sum"):
            for peak in ("active", "elapsed"):
                metrics.append((f"sm__inst_executed_pipe_{pipe}.{agg}.pct_of_peak_sustained_{peak}", "%", "pct"))
    have = len(cols) + len(metrics)
    extra = iter((f"sm__pipe_{pipe}_cycles_active.{agg}.pct_of_peak_sustained_{peak}", "%", "pct")
                 for pipe in _PIPES for agg in ("avg", "max", "min", "sum") for peak in ("active", "elapsed"))
    while have < RAW_COLUMNS:
        metrics.append(next(extra))
        have += 1
    metrics = metrics[: RAW_COLUMNS - len(cols)]
    return cols + sorted(metrics)


def _file_value(name: str, rng: np.random.Generator) -> str:
    if name.endswith("display_name"):
        return "NVIDIA B200"
    if name.endswith("dev_display_name_all"):
        return "NVIDIA B200,NVIDIA B200"
    if name.endswith("implementation"):
        return "No-CC"
    return str(int(rng.choice([0, 1, 1, 4, 8, 28, 148, 1024, 2048, 32768, 65536, 1965000, 3996000])))


def _kernel_value(name: str, kern: Kernels, k: int, rng: np.random.Generator) -> str:
    short = name.split("__", 1)[1]
    a = short.removeprefix("attribute_")
    bx, by, bz = (int(v) for v in kern.block[k])
    gx, gy, gz = (int(v) for v in kern.grid[k])
    fixed = {
        "block_dim_x": bx, "block_dim_y": by, "block_dim_z": bz, "block_size": bx * by * bz,
        "grid_dim_x": gx, "grid_dim_y": gy, "grid_dim_z": gz, "grid_size": gx * gy * gz,
        "registers_per_thread": int(kern.regs[k]), "registers_per_thread_allocated": int(kern.regs[k]),
        "shared_mem_per_block_static": int(kern.smem_static[k]),
        "shared_mem_per_block_dynamic": int(kern.smem_dynamic[k]),
        "shared_mem_per_block_driver": 1024, "thread_count": bx * by * bz * gx * gy * gz, "sm_count": 148,
    }
    if a in fixed:
        return str(fixed[a])
    if a in _LAUNCH_TEXT:
        return _LAUNCH_TEXT[a]
    if name == "sm__cycles_elapsed.avg.per_second":
        return f"{1.98e9 * rng.uniform(0.97, 1.0):.0f}"
    if name == "sm__maximum_warps_per_active_cycle_pct":
        return _pct(min(100.0, float(kern.occupancy[k]) * 1.15))
    if a == "waves_per_multiprocessor":
        return f"{gx * gy * gz / 148 / 4:.2f}"
    return str(int(rng.choice([0, 0, 1, 2, 4, 8, 16, 32])))


def _q(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def _raw_templates(kern: Kernels, columns: list[tuple[str, str, str]], rng: np.random.Generator,
                   variants: int = 4) -> list[list[str]]:
    """Per kernel, ``variants`` row templates: per-launch fields are {placeholders}, the rest is baked in."""
    slots = {m: i for i, (m, _, _) in enumerate(RAW_LAUNCH_METRICS)}
    file_values = {name: _file_value(name, rng) for name, _, role in columns if role == "file"}
    out = []
    for k, name in enumerate(kern.names):
        kernel_values = {c: _kernel_value(c, kern, k, rng) for c, _, role in columns if role == "kernel"}
        bx, by, bz = kern.block[k]
        gx, gy, gz = kern.grid[k]
        ident = {"ID": "{id}", "Process ID": "233787", "Process Name": "python3.12", "Host Name": "127.0.0.1",
                 "Kernel Name": name.replace("{", "{{").replace("}", "}}"), "Context": "1", "Stream": "7",
                 "Block Size": f"({bx}, {by}, {bz})", "Grid Size": f"({gx}, {gy}, {gz})", "Device": "0", "CC": "10.0"}
        busy = rng.uniform(0, 80)
        rows = []
        for _ in range(variants):
            fields = []
            for c, _, role in columns:
                if role == "identity":
                    fields.append(ident[c])
                elif role == "launch":
                    fields.append("{%d}" % slots[c])
                elif role == "file":
                    fields.append(file_values[c])
                elif role == "kernel":
                    fields.append(kernel_values[c])
                else:  # a rate or a share of peak: varies a little from launch to launch
                    v = busy * rng.uniform(0.7, 1.3) if rng.random() > 0.35 else 0.0
                    fields.append(_pct(v / 40 if c.endswith(("per_cycle_elapsed", "per_cycle_active")) else v))
            rows.append(",".join(_q(f) for f in fields) + "\n")
        out.append(rows)
    return out


def write_ncu_raw(path: Path, n: int, seed: int = 0) -> Path:
    """``ncu --csv --page raw`` with ``n`` launches."""
    rng = np.random.default_rng(seed)
    kern = make_kernels(rng)
    columns = raw_columns()
    templates = _raw_templates(kern, columns, rng)
    launches = make_launches(kern, n, rng)
    variant = rng.integers(0, len(templates[0]), n)
    counters = {**vars(launches), **raw_counters(launches, seed)}
    fields = [counters[key] for _, _, key in RAW_LAUNCH_METRICS]
    with open(path, "w", encoding="ascii", newline="\n") as out:
        out.write("==PROF== Connected to process 233787 (/usr/bin/python3.12)\n")
        out.write("==PROF== Disconnected from process 233787\n")
        out.write(",".join(_q(c) for c, _, _ in columns) + "\n")
        out.write(",".join(_q(u) for _, u, _ in columns) + "\n")
        for start in range(0, n, CHUNK):
            stop = min(n, start + CHUNK)
            values = [_as_text(f[start:stop]) for f in fields]
            kernels = launches.kernel[start:stop].tolist()
            variants = variant[start:stop].tolist()
            out.write("".join(templates[k][v].format(*vals, id=i) for i, k, v, *vals in
                              zip(range(start, stop), kernels, variants, *values)))
    return path


def _as_text(values: np.ndarray) -> list[str]:
    if values.dtype.kind == "f":
        return [_pct(v) for v in values.tolist()]
    return values.astype(str).tolist()


# ---- ncu details ----------------------------------------------------------------

_RULE_TEXT = (
    ("SpeedOfLight", "SOLBottleneck", "OPT",
     "This workload exhibits low compute throughput and memory bandwidth utilization relative to the peak "
     "performance of this device. Achieved compute throughput and/or memory bandwidth below 60.0% of peak "
     "typically indicate latency issues. Look at Scheduler Statistics and Warp State Statistics for potential "
     "reasons.", "", ""),
    ("SchedulerStats", "IssueSlotUtilization", "OPT",
     "Every scheduler is capable of issuing one instruction per cycle, but for this workload each scheduler only "
     "issues an instruction every 10.3 cycles. This might leave hardware resources underutilized and may lead to "
     "less optimal performance. See the Kernel Profiling Guide (https://docs.nvidia.com/nsight-compute/"
     "ProfilingGuide/index.html#roofline) for more details.", "local", "67.9"),
)


def _scaled(value: float, units: tuple[tuple[float, str], ...]) -> tuple[str, str]:
    """ncu 2025 picks the unit per value (byte, Kbyte, Mbyte...) and prints grouped thousands."""
    factor, unit = units[0]
    for f, u in units:
        if value >= f:
            factor, unit = f, u
    if factor == units[0][0] and value == int(value):
        return f"{int(value):,}", unit
    return f"{value / factor:,.2f}", unit


_BYTES = ((1.0, "byte"), (1e3, "Kbyte"), (1e6, "Mbyte"), (1e9, "Gbyte"))


def _details_rows(kern: Kernels, L: Launches, i: int, new: bool) -> list[tuple[str, str, str, str]]:
    """(section, metric, unit, value) rows of one launch."""
    k = int(L.kernel[i])
    dur = float(L.duration_ns[i])
    if new:
        sol = "GPU Speed Of Light Throughput"
        dr = _scaled(float(L.dram_read[i]), _BYTES)
        dw = _scaled(float(L.dram_write[i]), _BYTES)
        return [
            ("Command line profiler metrics", "dram__bytes_read.sum", dr[1], dr[0]),
            ("Command line profiler metrics", "dram__bytes_write.sum", dw[1], dw[0]),
            ("Command line profiler metrics", "flop_count_hp.sum", "", "n/a"),
            ("Command line profiler metrics", "gpu__time_duration.sum", "us", f"{dur / 1e3:,.2f}"),
            ("Command line profiler metrics", "smsp__inst_executed.sum", "inst", f"{int(L.inst_executed[i]):,}"),
            ("Command line profiler metrics", "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "sector",
             f"{int(L.gld_sectors[i]):,}"),
            ("Command line profiler metrics", "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", "",
             f"{int(L.gld_req[i]):,}"),
            (sol, "DRAM Frequency", "Ghz", "3.99"),
            (sol, "SM Frequency", "Ghz", "1.98"),
            (sol, "Elapsed Cycles", "cycle", f"{int(L.cycles[i]):,}"),
            (sol, "Memory Throughput", "%", _pct(float(L.occupancy_pct[i]) * 0.6)),
            (sol, "DRAM Throughput", "%", _pct(float(L.occupancy_pct[i]) * 0.4)),
            (sol, "Duration", "us", f"{dur / 1e3:,.2f}"),
            (sol, "L1/TEX Cache Throughput", "%", "16.74"),
            (sol, "L2 Cache Throughput", "%", "27.74"),
            (sol, "SM Active Cycles", "cycle", f"{float(L.cycles[i]) * 0.93:,.2f}"),
            (sol, "Compute (SM) Throughput", "%", "32.10"),
            ("Memory Workload Analysis", "Memory Throughput", "Gbyte/s", f"{(L.dram_read[i] + L.dram_write[i]) / dur:,.2f}"),
            ("Memory Workload Analysis", "Mem Busy", "%", "27.74"),
            ("Memory Workload Analysis", "L2 Hit Rate", "%", "80.44"),
            ("Scheduler Statistics", "One or More Eligible", "%", "9.71"),
            ("Scheduler Statistics", "Active Warps Per Scheduler", "warp", "2.00"),
            ("Scheduler Statistics", "Issued Warp Per Scheduler", "", "0.10"),
            ("Launch Statistics", "Block Size", "", str(int(kern.block[k].prod()))),
            ("Launch Statistics", "Grid Size", "", f"{int(kern.grid[k].prod()):,}"),
            ("Launch Statistics", "Registers Per Thread", "register/thread", str(int(kern.regs[k]))),
            ("Launch Statistics", "Shared Memory Configuration Size", "Kbyte", "233.47"),
            ("Launch Statistics", "Dynamic Shared Memory Per Block", "byte/block", f"{int(kern.smem_dynamic[k]):,}"),
            ("Launch Statistics", "Static Shared Memory Per Block", "byte/block", f"{int(kern.smem_static[k]):,}"),
            ("Launch Statistics", "Threads", "thread", f"{int(kern.block[k].prod() * kern.grid[k].prod()):,}"),
            ("Occupancy", "Block Limit Registers", "block", "2"),
            ("Occupancy", "Theoretical Occupancy", "%", _pct(min(100.0, float(kern.occupancy[k]) * 1.15))),
            ("Occupancy", "Achieved Occupancy", "%", _pct(float(L.occupancy_pct[i]))),
            ("Occupancy", "Achieved Active Warps Per SM", "warp", f"{float(L.occupancy_pct[i]) * 0.48:.2f}"),
            ("Instruction Statistics", "Executed Instructions", "inst", f"{int(L.inst_executed[i]):,}"),
            ("Instruction Statistics", "Issued Instructions", "inst", f"{int(L.inst_issued[i]):,}"),
        ]
    return [
        ("Command line profiler metrics", "dram__bytes.sum", "byte", f"{int(L.dram_read[i] + L.dram_write[i]):,}"),
        ("Command line profiler metrics", "gpu__time_duration.sum", "nsecond", f"{int(dur):,}"),
        ("Command line profiler metrics", "launch__block_size", "", str(int(kern.block[k].prod()))),
        ("Command line profiler metrics", "launch__grid_size", "", str(int(kern.grid[k].prod()))),
        ("Command line profiler metrics", "launch__registers_per_thread", "register/thread", str(int(kern.regs[k]))),
        ("Command line profiler metrics", "sm__cycles_elapsed.avg", "cycle", f"{int(L.cycles[i]):,}"),
        ("Command line profiler metrics", "sm__cycles_elapsed.avg.per_second", "cycle/second", "1,980,000,000"),
        ("Command line profiler metrics", "sm__warps_active.avg.pct_of_peak_sustained_active", "%",
         _pct(float(L.occupancy_pct[i]))),
        ("Command line profiler metrics", "smsp__inst_executed.sum", "inst", f"{int(L.inst_executed[i]):,}"),
    ]


NEW_DETAILS_HEADER = ("ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream",
                      "Block Size", "Grid Size", "Device", "CC", "Section Name", "Metric Name", "Metric Unit",
                      "Metric Value", "Rule Name", "Rule Type", "Rule Description", "Estimated Speedup Type",
                      "Estimated Speedup")
OLD_DETAILS_HEADER = ("ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Kernel Time", "Context",
                      "Stream", "Section Name", "Metric Name", "Metric Unit", "Metric Value")


def write_ncu_details(path: Path, n: int, seed: int = 0, *, layout: str = "2025") -> Path:
    """``ncu --csv`` (details page) with ``n`` launches, in the 2025 20-column or the old 12-column layout."""
    rng = np.random.default_rng(seed + 1)
    kern = make_kernels(rng)
    L = make_launches(kern, n, rng)
    new = layout == "2025"
    header = NEW_DETAILS_HEADER if new else OLD_DETAILS_HEADER
    with open(path, "w", encoding="ascii", newline="\n") as out:
        if not new:  # the application's stdout went to the same file
            out.write("Starting training...\nTesla V100-SXM2-16GB\nepoch 0 step 0\n")
        out.write("==PROF== Connected to process 1742833 (/usr/bin/python3.12)\n")
        out.write(",".join(_q(h) for h in header) + "\n")
        buf: list[str] = []
        for i in range(n):
            k = int(L.kernel[i])
            name = _q(kern.names[k])
            bx, by, bz = kern.block[k]
            gx, gy, gz = kern.grid[k]
            if new:
                ident = (f'"{i}","1742833","python3.12","127.0.0.1",{name},"1","7","({bx}, {by}, {bz})",'
                         f'"({gx}, {gy}, {gz})","0","12.0",')
            else:
                ident = f'"{i}","79345","python3.7","127.0.0.1",{name},"2020-Jun-09 12:14:11","2","26",'
            for section, metric, unit, value in _details_rows(kern, L, i, new):
                buf.append(f'{ident}"{section}","{metric}","{unit}","{value}"' + (",\n" if new else "\n"))
            if new and i % 2 == 0:
                for section, rule, rtype, text, stype, speed in _RULE_TEXT:
                    buf.append(f'{ident}"{section}","","","","{rule}","{rtype}","{text}","{stype}","{speed}"\n')
            if len(buf) > 50_000:
                out.write("".join(buf))
                buf.clear()
        out.write("".join(buf))
        out.write("==PROF== Disconnected from process 1742833\n")
    return path


# ---- nvprof trace + metrics -----------------------------------------------------------

TRACE_HEADER = ("Start", "Duration", "Grid X", "Grid Y", "Grid Z", "Block X", "Block Y", "Block Z",
                "Registers Per Thread", "Static SMem", "Dynamic SMem", "Size", "Throughput", "Device", "Context",
                "Stream", "Name")
_NVPROF_DEVICE = "GeForce GTX 1080 Ti (0)"
# nvprof --metrics: (name, description, unit suffix, value from (kernel, mean launch)); 'level' = "Low (2)" style
_NVPROF_METRICS = (
    ("inst_executed", "Instructions Executed", "", "inst"),
    ("inst_issued", "Instructions Issued", "", "issued"),
    ("achieved_occupancy", "Achieved Occupancy", "", "occ"),
    ("gld_transactions", "Global Load Transactions", "", "gld_sectors"),
    ("gst_transactions", "Global Store Transactions", "", "gst_sectors"),
    ("gld_transactions_per_request", "Global Load Transactions Per Request", "", "gld_ratio"),
    ("gst_transactions_per_request", "Global Store Transactions Per Request", "", "gst_ratio"),
    ("shared_load_transactions", "Shared Load Transactions", "", "shared"),
    ("dram_read_transactions", "Device Memory Read Transactions", "", "dram_r"),
    ("dram_write_transactions", "Device Memory Write Transactions", "", "dram_w"),
    ("dram_read_throughput", "Device Memory Read Throughput", "GB/s", "dram_r_tp"),
    ("dram_write_throughput", "Device Memory Write Throughput", "MB/s", "dram_w_tp"),
    ("branch_efficiency", "Branch Efficiency", "%", "100"),
    ("warp_execution_efficiency", "Warp Execution Efficiency", "%", "eff"),
    ("dram_utilization", "Device Memory Utilization", "level", "level"),
    ("ipc", "Executed IPC", "", "ipc"),
)


def write_nvprof(folder: Path, n: int, seed: int = 0, stem: str = "train_step") -> tuple[Path, Path]:
    """An nvprof ``--print-gpu-trace`` of ``n`` launches and the ``--metrics`` summary of the same kernels."""
    rng = np.random.default_rng(seed + 2)
    kern = make_kernels(rng)
    L = make_launches(kern, n, rng)
    trace = folder / f"{stem}_trace.csv"
    metrics = folder / f"{stem}_metrics.csv"
    clean = [nm.replace(" [lambda", " [lambda") for nm in kern.names]
    with open(trace, "w", encoding="ascii", newline="\n") as out:
        out.write("==12400== NVPROF is profiling process 12400, command: python train.py\n")
        out.write("==12400== Profiling application: python train.py\n==12400== Profiling result:\n")
        out.write(",".join(_q(h) for h in TRACE_HEADER) + "\n")
        out.write("ms,us,,,,,,,,KB,B,KB,MB/s,,,,\n")
        start = 584.620743
        buf: list[str] = []
        for i in range(n):
            if i % 20 == 0:  # copies between the steps' kernels
                buf.append(f'{start:.6f},{rng.uniform(1, 900):.6f},,,,,,,,,,400.000000,379.670001,'
                           f'"{_NVPROF_DEVICE}","1","7","[CUDA memcpy HtoD]"\n')
            k = int(L.kernel[i])
            gx, gy, gz = kern.grid[k]
            bx, by, bz = kern.block[k]
            dur_us = L.duration_ns[i] / 1e3
            buf.append(f'{start:.6f},{dur_us:.6f},{gx},{gy},{gz},{bx},{by},{bz},{kern.regs[k]},'
                       f'{kern.smem_static[k] / 1024:.6f},{kern.smem_dynamic[k]},,,"{_NVPROF_DEVICE}","1","7",'
                       f'{_q(clean[k] + f" [{1073 + 7 * i}]")}\n')
            start += dur_us / 1e3 + 0.004
            if len(buf) > 50_000:
                out.write("".join(buf))
                buf.clear()
        out.write("".join(buf))
    used, counts = np.unique(L.kernel, return_counts=True)
    with open(metrics, "w", encoding="ascii", newline="\n") as out:
        out.write("==22569== NVPROF is profiling process 22569, command: python train.py\n")
        out.write("==22569== Some kernel(s) will be replayed on device 0 in order to collect all events/metrics.\n")
        out.write("==22569== Profiling application: python train.py\n==22569== Profiling result:\n")
        out.write("==22569== Metric result:\n")
        out.write('"Device","Kernel","Invocations","Metric Name","Metric Description","Min","Max","Avg"\n')
        for k, count in zip(used.tolist(), counts.tolist()):
            sel = L.kernel == k
            mean = {
                "inst": L.inst_executed[sel].mean(), "issued": L.inst_issued[sel].mean(),
                "occ": L.occupancy_pct[sel].mean() / 100, "gld_sectors": L.gld_sectors[sel].mean(),
                "gst_sectors": L.gst_sectors[sel].mean(),
                "gld_ratio": L.gld_sectors[sel].sum() / max(1, L.gld_req[sel].sum()),
                "gst_ratio": L.gst_sectors[sel].sum() / max(1, L.gst_req[sel].sum()),
                "shared": L.shared_ld[sel].mean(), "dram_r": L.dram_read[sel].mean() / 32,
                "dram_w": L.dram_write[sel].mean() / 32,
                "dram_r_tp": (L.dram_read[sel] / L.duration_ns[sel]).mean(),
                "dram_w_tp": (L.dram_write[sel] / L.duration_ns[sel]).mean() * 1e3,
                "100": 100.0, "eff": rng.uniform(25, 100), "ipc": rng.uniform(0.1, 3.5),
            }
            for name, desc, unit, key in _NVPROF_METRICS:
                if unit == "level":
                    cell = '"Low (2)"'
                    out.write(f'"{_NVPROF_DEVICE}",{_q(clean[k])},{count},"{name}","{desc}",{cell},{cell},{cell}\n')
                    continue
                v = float(mean[key])
                text = f"{v:.6f}{unit}" if unit else (f"{int(v)}" if key in ("inst", "issued") else f"{v:.6f}")
                out.write(f'"{_NVPROF_DEVICE}",{_q(clean[k])},{count},"{name}","{desc}",{text},{text},{text}\n')
    return trace, metrics


# ---- entry points ---------------------------------------------------------------------

def generate(kind: str, n: int, folder: str | Path, seed: int = 0) -> list[Path]:
    """Write one benchmark input of ``kind`` with ``n`` launches into ``folder``; returns the files written."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    if kind == "ncu-raw":
        return [write_ncu_raw(folder / f"train_step_{n}.ncu-raw.csv", n, seed)]
    if kind == "ncu-details":
        return [write_ncu_details(folder / f"train_step_{n}.ncu-details.csv", n, seed, layout="2025")]
    if kind == "ncu-details-old":
        return [write_ncu_details(folder / f"train_step_{n}.ncu-details-old.log", n, seed, layout="old")]
    if kind == "nvprof":
        return list(write_nvprof(folder, n, seed, stem=f"train_step_{n}"))
    raise ValueError(f"unknown kind {kind!r}; choose from {', '.join(KINDS)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kind", choices=(*KINDS, "all"))
    parser.add_argument("launches", type=int)
    parser.add_argument("folder", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    for kind in KINDS if args.kind == "all" else (args.kind,):
        for path in generate(kind, args.launches, args.folder, args.seed):
            print(f"{path} ({path.stat().st_size / 1e6:.1f} MB)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
