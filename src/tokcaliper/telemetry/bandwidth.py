"""Measure this machine's memory bandwidth: the host's and each GPU's (issue 25, METHODS.md A3).

The roofline of a decode step is bandwidth ÷ bytes per token; a spec sheet
gives the peak the memory could reach, a probe what this machine reaches now.

* host: a numpy copy (``np.copyto(dst, src)``, STREAM *Copy*) of a float64
  buffer of ``max(128 MiB, 4 × last-level cache)`` split over one thread per
  logical CPU (numpy releases the GIL inside the copy, so the threads copy at
  once; one thread alone reaches a fraction of a server's bandwidth). Bytes
  per repetition = 2 × buffer (one read, one write; write-allocate traffic is
  not counted, as in STREAM). One untimed warm-up (page faults), then
  :data:`REPETITIONS` timed ones.
* GPU: a device-to-device copy of :data:`GPU_BYTES` with ``torch`` or
  ``cupy`` (whichever imports), timed between two synchronisations; skipped
  with the reason when neither imports or no GPU is visible.

The figure used is the fastest repetition (STREAM's convention: the best
rate is the one the memory can sustain; slower ones met interference); the
stated spread is ``(best − slowest) ÷ best``. Pure apart from the timing;
never raises: a probe that cannot run returns a :class:`BandwidthProbe` with
``skipped`` saying why.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from statistics import median

from tokcaliper.model.telemetry import BandwidthProbe, HostInfo
from tokcaliper.numbers import num

#: Timed repetitions per probe (after one untimed warm-up).
REPETITIONS = 5
#: Smallest host buffer, bytes (each of source and destination).
HOST_MIN_BYTES = 128 * 2**20
#: The host buffer is at least this many times the last-level cache.
CACHE_MULTIPLE = 4
#: GPU copy size, bytes (each of source and destination): far above any GPU's L2 (≤ 128 MiB).
GPU_BYTES = 1024 * 2**20
_CACHE_SYSFS = Path("/sys/devices/system/cpu/cpu0/cache")


def last_level_cache_bytes(root: Path = _CACHE_SYSFS) -> int | None:
    """Largest ``index*/size`` under ``root`` (``"32768K"`` → 33554432), or None when unreadable."""
    best = None
    for p in root.glob("index*/size"):
        try:
            text = p.read_text().strip().upper()
        except OSError:
            continue
        mult = {"K": 2**10, "M": 2**20, "G": 2**30}.get(text[-1:], 1)
        digits = text[:-1] if text[-1:] in "KMG" else text
        if digits.isdigit():
            best = max(best or 0, int(digits) * mult)
    return best


def summarise(device: str, name: str | None, method: str, bytes_per_rep: int,
              seconds: list[float], wall_s: float) -> BandwidthProbe:
    """A :class:`BandwidthProbe` from the timed repetitions' durations (s; pure).

    GB/s per repetition = bytes_per_rep ÷ duration ÷ 1e9; the figure is the
    fastest, the spread (best − slowest) ÷ best.
    """
    rates = sorted(bytes_per_rep / s / 1e9 for s in seconds if s > 0)
    if not rates:
        return BandwidthProbe(device=device, name=name, method=method, skipped="no repetition took measurable time")
    best, worst = rates[-1], rates[0]
    return BandwidthProbe(device=device, name=name, method=method, bytes_per_rep=bytes_per_rep,
                          repetitions=len(rates), gb_s=best, gb_s_median=median(rates), gb_s_min=worst,
                          spread=(best - worst) / best, seconds=wall_s)


def probe_host(name: str | None = None, threads: int | None = None, buffer_bytes: int | None = None,
               repetitions: int = REPETITIONS, np_module: object | None = None) -> BandwidthProbe:
    """The host memory's copy bandwidth (module docstring), < ~1 s.

    Args:
        name: the CPU model, stored with the figure.
        threads: copying threads (default: logical CPUs, ``os.cpu_count()``).
        buffer_bytes: bytes of each of source and destination (default
            ``max(HOST_MIN_BYTES, CACHE_MULTIPLE × last-level cache)``).
        repetitions: timed repetitions.
        np_module: numpy, injectable (a module without it → ``skipped``).

    Returns:
        The probe; ``skipped`` says why when numpy is missing or the buffers cannot be allocated.
    """
    t0 = time.perf_counter()
    try:
        np = np_module if np_module is not None else __import__("numpy")
        n_threads = max(1, threads or os.cpu_count() or 1)
        size = buffer_bytes or max(HOST_MIN_BYTES, CACHE_MULTIPLE * (last_level_cache_bytes() or 0))
        n = size // 8 // n_threads * n_threads
        src = np.ones(n, dtype=np.float64)
        dst = np.empty_like(src)
    except (ImportError, MemoryError, AttributeError) as e:
        return BandwidthProbe(device="host", name=name, skipped=f"host probe cannot run: {type(e).__name__}: {e}")
    chunks = [(src[i * (n // n_threads):(i + 1) * (n // n_threads)],
               dst[i * (n // n_threads):(i + 1) * (n // n_threads)]) for i in range(n_threads)]

    def once() -> float:
        if n_threads == 1:
            start = time.perf_counter()
            np.copyto(chunks[0][1], chunks[0][0])
            return time.perf_counter() - start
        workers = [threading.Thread(target=np.copyto, args=(d, s)) for s, d in chunks]
        start = time.perf_counter()
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        return time.perf_counter() - start

    once()  # warm-up: page faults of the destination
    times = [once() for _ in range(repetitions)]
    mib = n * 8 / 2**20
    method = (f"numpy copy of {num(mib, 4, trim=True)} MiB float64 (read + write = 2 × buffer per repetition), "
              f"{n_threads} thread(s), best of {repetitions}")
    del src, dst, chunks
    return summarise("host", name, method, 2 * n * 8, times, time.perf_counter() - t0)


def _torch_copy(index: int, nbytes: int, repetitions: int) -> list[float]:
    import torch

    if not torch.cuda.is_available():
        raise RuntimeError("torch sees no CUDA device")
    dev = torch.device(f"cuda:{index}")
    src = torch.ones(nbytes // 4, dtype=torch.float32, device=dev)
    dst = torch.empty_like(src)
    dst.copy_(src)
    torch.cuda.synchronize(dev)
    out = []
    for _ in range(repetitions):
        start = time.perf_counter()
        dst.copy_(src)
        torch.cuda.synchronize(dev)
        out.append(time.perf_counter() - start)
    del src, dst
    torch.cuda.empty_cache()
    return out


def _cupy_copy(index: int, nbytes: int, repetitions: int) -> list[float]:
    import cupy

    with cupy.cuda.Device(index):
        src = cupy.ones(nbytes // 4, dtype=cupy.float32)
        dst = cupy.empty_like(src)
        dst[...] = src
        cupy.cuda.Device(index).synchronize()
        out = []
        for _ in range(repetitions):
            start = time.perf_counter()
            dst[...] = src
            cupy.cuda.Device(index).synchronize()
            out.append(time.perf_counter() - start)
        del src, dst
    return out


#: GPU copy back-ends tried in order: (library name, copy function).
GPU_LIBRARIES: tuple[tuple[str, Callable[[int, int, int], list[float]]], ...] = (
    ("torch", _torch_copy), ("cupy", _cupy_copy))


def probe_gpu(index: int, name: str | None = None, nbytes: int = GPU_BYTES,
              repetitions: int = REPETITIONS,
              libraries: tuple[tuple[str, Callable[[int, int, int], list[float]]], ...] = GPU_LIBRARIES,
              ) -> BandwidthProbe:
    """GPU ``index``'s device-to-device copy bandwidth (bytes per repetition = 2 × ``nbytes``).

    Tries each of ``libraries``; the first that runs gives the figure.
    Returns a probe with ``skipped`` naming each library's failure when none runs.
    """
    t0 = time.perf_counter()
    why = []
    for lib, fn in libraries:
        try:
            times = fn(index, nbytes, repetitions)
        except ImportError:
            why.append(f"{lib} not installed")
            continue
        except Exception as e:  # a driver or memory error: the probe is skipped, the run goes on
            why.append(f"{lib}: {type(e).__name__}: {str(e)[:120]}")
            continue
        method = (f"{lib} device-to-device copy of {num(nbytes / 2**20, 4, trim=True)} MiB (read + write = 2 × buffer), "
                  f"best of {repetitions}")
        return summarise(f"gpu{index}", name, method, 2 * nbytes, times, time.perf_counter() - t0)
    return BandwidthProbe(device=f"gpu{index}", name=name,
                          skipped="GPU probe cannot run: " + "; ".join(why or ["no GPU library tried"]))


def probe_machine(host: HostInfo, gpu: Callable[..., BandwidthProbe] = probe_gpu,
                  host_probe: Callable[..., BandwidthProbe] = probe_host) -> list[BandwidthProbe]:
    """The host probe, then one per NVML GPU of ``host`` (none: a skipped ``gpu`` entry saying why).

    Stores nothing; the caller sets ``host.bandwidth``.
    """
    out = [host_probe(name=host.cpu_model)]
    if host.gpus:
        out += [gpu(g.index, name=g.name) for g in host.gpus]
    else:
        out.append(BandwidthProbe(device="gpu", skipped=f"GPU probe not run: {host.gpu_unavailable_reason or 'no GPU'}"))
    return out

