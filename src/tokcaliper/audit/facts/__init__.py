"""Facts with sources: GPU specs, bytes per weight, model parameters.

Every value returned here carries the place it came from (package, curated
table row with its spec sheet, the record itself, or a user override), so a
verdict can print it next to the number (METHODS.md A2, A3).
"""

from tokcaliper.audit.facts.gpus import GPUFacts, GPUOverrides, UnknownGPUError, lookup_gpu
from tokcaliper.audit.facts.params import ParamFacts, params_from_config, params_from_tensors, resolve_params
from tokcaliper.audit.facts.quant import QuantFacts, bits_per_weight

__all__ = [
    "GPUFacts",
    "GPUOverrides",
    "UnknownGPUError",
    "lookup_gpu",
    "ParamFacts",
    "resolve_params",
    "params_from_config",
    "params_from_tensors",
    "QuantFacts",
    "bits_per_weight",
]
