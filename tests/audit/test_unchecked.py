"""An audit says what it could not check (issue 26 item 3).

The impossible H100 claim (8B bf16 at batch 1, 620 tok/s ≈ 3× the roofline) fails
A3 under the names a spec sheet and nvidia-smi use; under an unknown name the
summary names the check that did not run, suggests the nearest rows, and the
exit code (12) says checks were skipped instead of "no record fails" (0).
"""

from __future__ import annotations

import json

import pytest

from tokcaliper.audit.facts.gpus import UnknownGPUError, lookup_gpu
from tokcaliper.cli import main
from tokcaliper.errors import EXIT_AUDIT_FAIL, EXIT_AUDIT_INCOMPLETE

from .conftest import REPO

H100 = str(REPO / "examples" / "audit" / "h100_records.json")
UNKNOWN = str(REPO / "examples" / "audit" / "h100_unknown_gpu.json")


@pytest.mark.parametrize("name,row", [
    ("H100 SXM", "H100 SXM5 80 GB"),
    ("NVIDIA H100 80GB HBM3", "H100 SXM5 80 GB"),     # nvidia-smi / NVML on an SXM5 board
    ("NVIDIA A100-SXM4-80GB", "A100 SXM4 80 GB"),
    ("NVIDIA H100 PCIe", "H100 PCIe 80 GB"),
    ("H100 PCIe 96 GB", "H100 PCIe 96 GB"),           # an alias never swallows a longer name
])
def test_nvidia_smi_and_short_names_are_aliases_of_their_rows(name, row):
    assert lookup_gpu(name).name == row


def test_unknown_gpu_suggests_the_nearest_rows():
    with pytest.raises(UnknownGPUError, match=r"nearest known: H100 SXM5 80 GB"):
        lookup_gpu("H100 SXM6 Ultra")


def test_the_h100_claim_fails_a3_once_its_name_is_recognised(capsys):
    assert main(["audit", "--json", H100]) == EXIT_AUDIT_FAIL
    doc = json.loads(capsys.readouterr().out)
    for rec in doc["records"]:
        a3 = next(v for v in rec["verdicts"] if v["check"] == "A3")
        assert a3["status"] == "fail" and 2.5 < a3["inputs"]["claim_over_roofline"] < 3.5
    assert doc["unchecked"] == []


def test_an_unknown_gpu_is_a_finding_with_its_own_exit_code(capsys):
    assert main(["audit", "--brief", UNKNOWN]) == EXIT_AUDIT_INCOMPLETE == 12
    out = " ".join(capsys.readouterr().out.split())
    assert "Not checked" in out and "A3 roofline not checked" in out
    assert "nearest known: H100 SXM5 80 GB" in out
    assert "exit 12" in out and "not all checks ran" in out and "exit 0" not in out


def test_no_python_none_in_audit_or_diff_text(capsys):
    recs = str(REPO / "examples" / "attribution" / "records.json")
    main(["diff", f"{recs}#0", f"{recs}#1"])
    main(["audit", H100])
    out = capsys.readouterr().out
    assert "None" not in out
