"""Published reference figures and thresholds the audit checks use, with sources.

Each constant names where it comes from; verdicts print these strings.
"""

from __future__ import annotations

#: DFlash's published mean acceptance lengths on real tasks (docs/METHODS.md A1;
#: tests/data/seed_cases.json ``dflash_published_al``).
DFLASH_PUBLISHED_AL = {"GSM8K": 5.46, "MATH-500": 5.28, "MBPP": 4.79, "HumanEval": 4.39}
DFLASH_SOURCE = "DFlash published AL: GSM8K 5.46, MATH-500 5.28, MBPP 4.79, HumanEval 4.39 (METHODS.md A1)"

#: Highest realistic AL on real tasks, used to scale the roofline under
#: speculative decoding (METHODS.md A3: "the bound scales by a realistic AL ≈5.46"):
#: DFlash's GSM8K figure, the highest above. Computed with the window and the
#: claimed AL by :func:`tokcaliper.audit.claims.realistic_al` only.
REALISTIC_AL = DFLASH_PUBLISHED_AL["GSM8K"]
REALISTIC_AL_SOURCE = "DFlash GSM8K"

#: Highest published per-position acceptance probability: MTP k=1 AL 1.93
#: (bonus included) → p = 0.93 (InferenceX golden_al_distribution/qwen3.5_mtp.yaml).
PUBLISHED_MAX_ACCEPT_P = 0.93
GOLDEN_AL_SOURCE = "InferenceX golden AL, Qwen3.5-397B-A17B MTP: k=1 1.93 … k=8 5.21 (bonus included)"

#: A1 thresholds on the implied per-position acceptance probability p.
A1_FAIL_P = 0.99
A1_WARN_P = 0.95
#: A1: all drafted tokens accepted is a fail when p_max^drafted is below this
#: (p_max = A1_WARN_P, a generous ceiling above the published 0.93).
A1_ALL_ACCEPTED_ALPHA = 1e-3

#: Documented multipliers of real speculative-decoding methods (METHODS.md A11).
SPEC_SPEEDUP_RANGE = (2.7, 4.6)
DFLASH_SPEEDUP_GSM8K = 3.43

#: A2: power ÷ TDP bands for a record claiming sustained decode. The source's
#: card really decoding drew 574–576 W of 575 W (ratio ≈ 1.0); 99–100 W
#: (0.172) meant mostly idle (METHODS.md A2).
A2_FAIL_BELOW = 0.25
A2_WARN_BELOW = 0.5
#: A2: readings above TDP. A board may draw more than its TDP for milliseconds
#: (transient spikes, which nvidia-smi's averaged ``power.draw`` smooths away)
#: and factory-overclocked boards raise the default power limit by up to
#: ~20 % (RTX 4090/5090 partner cards: 600 W on a 575 W part, some 660 W BIOSes),
#: so a reading up to 1.2 × TDP passes, up to 1.5 × warns. A *sustained*
#: reading above 1.5 × TDP exceeds what the board's connectors and power
#: limit allow (a 575 W RTX 5090 has one 600 W 12V-2x6 plug + 75 W slot) — it
#: is a unit error or a sum over several GPUs, and fails.
A2_WARN_ABOVE = 1.2
A2_FAIL_ABOVE = 1.5

#: A3: host memory bandwidth assumed for weights offloaded to the CPU: dual-channel
#: DDR5-6400 = 2 channels × 8 B × 6400 MT/s = 102.4 GB/s, the fastest common desktop
#: platform (JEDEC DDR5; a generous figure for the bound). ``--host-bandwidth`` overrides it.
#: (cli/audit.py's help repeats the figure as text, to keep the audit out of CLI start-up;
#: tests/audit/test_cli.py checks the two agree.)
DEFAULT_HOST_BANDWIDTH_GB_S = 102.4
DEFAULT_HOST_BANDWIDTH_SOURCE = "dual-channel DDR5-6400, 2 × 8 B × 6400 MT/s"

#: A3: claim ÷ roofline above this is "at the ceiling" (warn); above 1.0 fail.
A3_WARN_ABOVE = 0.9
#: A3: fail only above this ratio. Bits per weight of K-quant mixes are approximate
#: (±5 %) and parameter counts include input embeddings, which are not read per
#: token (up to ~10 % of a small model): a claim within 15 % over the bound warns.
A3_FAIL_ABOVE = 1.15

#: A5: tokens ÷ seconds against the reported rate: relative difference bands.
A5_WARN_DIFF = 0.05
A5_FAIL_DIFF = 0.20

#: A4: Spearman ρ of tok/s against the draft window: fail at or above, warn at or above.
A4_FAIL_RHO = 0.9
A4_WARN_RHO = 0.7
A4_MIN_N = 3
#: A4's p-values are exact up to :data:`tokcaliper.stats.covariates.EXACT_MAX_N` (8) records.

#: A10: a baseline older than this (days) than the record is stale; fewer
#: runs than M1's minimum (:data:`tokcaliper.model.warnings.M1_MIN_RUNS`) is thin.
A10_STALE_DAYS = 90
