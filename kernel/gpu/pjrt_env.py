"""Describes the CUDA PJRT plugin that gomase's xla:cuda would load.

Usage: python3 pjrt_env.py [PLUGIN.so]

Without an argument it looks for JAX's plugin (jax_plugins/xla_cuda*/xla_cuda_plugin.so) under this
Python's prefix and the usual install places. It prints one `key: value` line each: the plugin's path
(`plugin:`), the versions of the jax packages installed, the PJRT C API version the plugin implements,
its extensions, the size of the GPU custom-call extension (its version: 32 bytes is version 2), and
whether the plugin exports XlaCustomCallStatusSetFailure (a failing custom-call handler can only
report its error through it). Exit status 1 when no plugin is found or it cannot be loaded.
"""
import ctypes
import glob
import importlib.metadata
import os
import sys

# PJRT_Extension_Type values of pjrt_c_api.h, in order.
EXTENSION_NAMES = [
    "Gpu_Custom_Call", "Profiler", "Custom_Partitioner", "Stream", "Layouts", "FFI",
    "MemoryDescriptions", "Triton", "RawBuffer", "PhaseCompile", "Example", "Unknown",
    "CrossHostTransfers", "ExecutableMetadata", "Callback", "HostAllocator", "TpuTopology",
    "TpuExecutable", "Megascale", "Shardings", "AbiVersion", "Collectives", "MultiSlice",
    "HostMemoryAllocator",
]


def find_plugins():
    prefixes = [sys.prefix, os.environ.get("VIRTUAL_ENV", ""), os.environ.get("CONDA_PREFIX", ""),
                "/opt/torch/.venv", "/usr/local", "/usr", "/opt/conda", os.path.expanduser("~/.local")]
    found = []
    for prefix in prefixes:
        if not prefix:
            continue
        pattern = prefix + "/lib/python3*/*-packages/jax_plugins/xla_cuda*/xla_cuda_plugin.so"
        for path in sorted(glob.glob(pattern)):
            if path not in found:
                found.append(path)
    return found


def main():
    for package in ("jax", "jaxlib", "jax-cuda12-pjrt", "jax-cuda13-pjrt", "jax-cuda12-plugin", "jax-cuda13-plugin", "torch"):
        try:
            print("package %s: %s" % (package, importlib.metadata.version(package)))
        except importlib.metadata.PackageNotFoundError:
            pass
    plugins = sys.argv[1:] or find_plugins()
    if not plugins:
        print("plugin: none found (python %s)" % sys.prefix)
        return 1
    path = plugins[0]
    print("plugin: %s" % path)
    for other in plugins[1:]:
        print("other plugin: %s" % other)
    try:
        lib = ctypes.CDLL(path)
    except OSError as err:
        print("load error: %s" % err)
        return 1
    lib.GetPjrtApi.restype = ctypes.c_void_p
    api = lib.GetPjrtApi()
    word = lambda addr: ctypes.c_uint64.from_address(addr).value
    int32 = lambda addr: ctypes.c_int32.from_address(addr).value
    # PJRT_Api: struct_size, extension_start, then PJRT_Api_Version (struct_size,
    # extension_start, major_version, minor_version).
    print("PJRT C API: %d.%d (PJRT_Api struct_size %d)" % (int32(api + 32), int32(api + 36), word(api)))
    ext, names = word(api + 8), []
    while ext:
        kind = int32(ext + 8)
        name = EXTENSION_NAMES[kind] if 0 <= kind < len(EXTENSION_NAMES) else "type%d" % kind
        names.append(name)
        if kind == 0:
            size = word(ext)
            print("GPU custom-call extension: struct_size %d (%s)" % (size, "version 2" if size <= 32 else "version 3 or later"))
        ext = word(ext + 16)
    print("extensions: %s" % ", ".join(names))
    print("exports XlaCustomCallStatusSetFailure: %s" % hasattr(lib, "XlaCustomCallStatusSetFailure"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
