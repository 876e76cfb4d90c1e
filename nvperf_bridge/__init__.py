"""nvperf-bridge: profiler CSV in, analytical GPU performance models out.

Importers read Nsight Compute and nvprof CSV into one canonical per-kernel
table (the KernelFrame); model plugins predict each kernel's time and its
bottleneck; reports render the results.
"""

__version__ = "0.1.0"
