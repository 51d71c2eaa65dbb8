"""``tokcaliper doctor`` (issue 21 item 1): the host as this kernel exposes it, the GPU
section against a fake NVML, the server's /metrics and prompt cache."""

from __future__ import annotations

import json
import os

from tokcaliper.cli import main
from tokcaliper.doctor import machine_check
from tokcaliper.doctor.checks import check_host, check_server
from tokcaliper.doctor.facts import HostFacts, ProcessCpu, ServerFacts, gather_gpus, gather_host

from tests.telemetry.fakes import FakeNvmlDoctor, h200


def _by_code(findings):
    return {(f["code"] if isinstance(f, dict) else f.code): f for f in findings}


def test_doctor_json_on_this_machine_reports_governor_boost_load_and_foreign_processes(capsys):
    assert main(["doctor", "--json", "--window", "0.3"]) == 0
    out = json.loads(capsys.readouterr().out)
    f = _by_code(out["findings"])
    gov_files = [p for p in os.listdir("/sys/devices/system/cpu") if p.startswith("cpu") and p[3:].isdigit()
                 and os.path.exists(f"/sys/devices/system/cpu/{p}/cpufreq/scaling_governor")]
    if gov_files:  # as the kernel exposes it …
        with open(f"/sys/devices/system/cpu/{gov_files[0]}/cpufreq/scaling_governor") as fh:
            assert fh.read().strip() in f["cpu-governor"]["found"]
    else:  # … or says it is not exposed
        assert f["cpu-governor"]["status"] == "unknown" and "not exposed" in f["cpu-governor"]["found"]
    boost_known = any(os.path.exists(p) for p in ("/sys/devices/system/cpu/cpufreq/boost",
                                                  "/sys/devices/system/cpu/intel_pstate/no_turbo"))
    assert (f["cpu-boost"]["status"] != "unknown") == boost_known
    la = os.getloadavg()
    assert f["load"]["found"].startswith("load average ") and abs(float(
        f["load"]["found"].split()[2].replace(",", "")) - la[0]) < max(1.0, la[0])
    assert "other processes used" in f["foreign-cpu"]["found"]
    assert out["findings"][0]["area"] == "host" and any(x["area"] == "gpu" for x in out["findings"])


def test_foreign_processes_are_listed_and_the_server_and_client_are_not(tmp_path):
    import subprocess
    import sys
    import time

    burner = subprocess.Popen([sys.executable, "-c", "import time\nt=time.time()\nwhile time.time()-t<4: pass"])
    try:
        time.sleep(0.3)  # past its start-up
        f = gather_host(window_s=0.5, top=1000)  # every process; on a shared host it need not be the busiest
        assert burner.pid in [p.pid for p in f.foreign]  # a busy process outside server and client
        assert os.getpid() not in [p.pid for p in f.foreign]
        g = gather_host(window_s=0.3, server_pids=[burner.pid], top=1000)  # as the server it is not foreign
        assert burner.pid not in [p.pid for p in g.foreign] and g.server_cores is not None
    finally:
        burner.kill()
        burner.wait()


def test_host_checks_say_why_and_the_command():
    f = HostFacts(governor="powersave", boost=True, boost_path="/sys/devices/system/cpu/cpufreq/boost",
                  smt="on", cpus_logical=8, cpus_allowed=8, cgroup_quota_cores=2.0, loadavg=(3.5, 2.0, 1.0),
                  window_s=1.0, busy_cores=1.9, own_cores=0.05, server_cores=0.95, foreign_cores=0.9,
                  foreign=[ProcessCpu(pid=4242, name="make", cores=0.85)], steal_pct=4.0,
                  mem_total_bytes=16 * 2**30, mem_available_bytes=8 * 2**30, swap_total_bytes=2**30,
                  swap_used_bytes=2**20, thp="always")
    c = _by_code(check_host(f, threads=4))
    assert c["cpu-governor"].status == "warn" and c["cpu-governor"].fix == "sudo cpupower frequency-set -g performance"
    assert c["cpu-boost"].fix == "echo 0 | sudo tee /sys/devices/system/cpu/cpufreq/boost"
    assert "2.00 usable" in c["cpus"].found  # the cgroup quota is the limit
    assert c["load"].status == "warn"
    assert c["foreign-cpu"].status == "warn" and "make (pid 4242) 0.850" in c["foreign-cpu"].found
    assert "kill -STOP 4242" in c["foreign-cpu"].fix
    assert c["steal"].status == "warn" and c["swap"].status == "warn" and c["thp"].status == "info"
    assert c["server-threads"].status == "warn" and c["server-threads"].fix.startswith("start the server with -t 2")
    quiet = _by_code(check_host(HostFacts(governor="performance", boost=False, boost_path="x", foreign_cores=0.1,
                                          window_s=1.0, busy_cores=0.2, own_cores=0.1)))
    assert all(x.status in ("ok", "info", "unknown") for x in quiet.values())


def test_gpu_section_against_a_fake_nvml_locked_clock_lowered_power_limit_foreign_process():
    gpu = h200(persistence=0, app_sm=1200, default_app_sm=1980, max_sm=1980, sm=[1200],
               limit_mw=500_000, default_limit_mw=700_000, limit_range_mw=(200_000, 700_000),
               ecc=(1, 1), mig=(0, 0), reasons=[0x2], procs=[(999_999, 3 * 2**30)], temp=[60], slowdown_c=87)
    fake = FakeNvmlDoctor([gpu])
    gpus, reason = gather_gpus(fake, server_pids=[])
    assert reason is None and len(gpus) == 1
    check = machine_check(quick=True, nvml=fake, window_s=0.05)
    c = _by_code(check.findings)
    assert c["gpu0-persistence"].status == "warn" and c["gpu0-persistence"].fix == "sudo nvidia-smi -i 0 -pm 1"
    assert c["gpu0-clocks"].status == "warn" and "1,200 MHz" in c["gpu0-clocks"].found
    assert "applications_clocks_setting" in c["gpu0-clocks"].found and "-rgc" in c["gpu0-clocks"].fix
    assert c["gpu0-power-limit"].status == "warn" and "500 W (default 700 W" in c["gpu0-power-limit"].found
    assert c["gpu0-power-limit"].fix == "sudo nvidia-smi -i 0 -pl 700"
    assert c["gpu0-processes"].status == "warn" and "pid 999999" in c["gpu0-processes"].found
    assert "3,072 MiB" in c["gpu0-processes"].found
    assert c["gpu0-throttle"].status == "ok"  # an application clock is not a slowdown
    assert c["gpu0-temperature"].status == "ok" and c["gpu0-mig"].status == "ok"
    assert fake.shutdowns == fake.inits == 2  # gather_gpus above, then the check: each init shut down
    # The server's own GPU process is not foreign; a default GPU gives no clock warning.
    calm = FakeNvmlDoctor([h200(persistence=1, app_sm=1980, default_app_sm=1980, max_sm=1980, reasons=[0],
                                procs=[(4321, 2**30)], slowdown_c=87, temp=[85])])
    c2 = _by_code(machine_check(nvml=calm, server_pids=[4321], window_s=0.05).findings)
    assert c2["gpu0-processes"].status == "ok" and c2["gpu0-clocks"].status == "info"
    assert c2["gpu0-temperature"].status == "warn"  # 85 °C is within 5 °C of 87


def test_no_gpu_is_one_line():
    check = machine_check(window_s=0.05, nvml=FakeNvmlDoctor([], init_error=RuntimeError("no driver")))
    gpu = [f for f in check.findings if f.area == "gpu"]
    assert len(gpu) == 1 and gpu[0].found.startswith("no NVIDIA GPU")


def test_server_checks_metrics_and_prompt_cache():
    s = ServerFacts(target="llama-server -m m.gguf", metrics=False, metrics_detail="launch command lacks --metrics",
                    prefix_cache=True, prefix_detail="llama-server default", engine="llama.cpp")
    c = _by_code(check_server(s))
    assert c["server-metrics"].fix == "start llama-server with --metrics"
    assert c["prompt-cache"].status == "warn" and "repetition 2" in c["prompt-cache"].why
    assert _by_code(check_server(s, unique_prompts=True))["prompt-cache"].status == "ok"
    from tokcaliper.doctor.facts import gather_server

    g = gather_server(server_cmd="llama-server -m m.gguf --port 8080 -t 8")
    assert g.metrics is False and g.prefix_cache is True and g.threads == 8
    assert gather_server(server_cmd="llama-server -m m.gguf --metrics").metrics is True


def test_doctor_rejects_url_and_server_cmd_together(capsys):
    assert main(["doctor", "--url", "http://127.0.0.1:1", "--server-cmd", "x"]) == 2
    assert capsys.readouterr().err.startswith("tokcaliper: error: give either --url or --server-cmd")


def test_bench_stores_the_quick_check_with_every_run_and_names_its_warnings(tmp_path):
    import subprocess
    import sys

    from tests.load.fake_server import FakeServer, FakeTiming
    from tokcaliper.store import Store

    db = tmp_path / "r.db"
    with FakeServer(FakeTiming(ttft_s=0.002, itl_s=0.001, tokens=8)) as srv:
        proc = subprocess.run(
            [sys.executable, "-m", "tokcaliper", "bench", "--url", srv.base_url, "--repeat", "2", "-c", "2",
             "-n", "4", "--warmup", "0", "--max-tokens", "8", "--idle-seconds", "0", "--db", str(db)],
            capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    with Store(db) as s:
        runs = [s.get_run(row.id) for row in s.list_runs()]
    checks = [r.host.machine_check for r in runs]
    assert all(c is not None and c.quick for c in checks) and checks[0] == checks[1]  # one check per session
    err = " ".join(proc.stderr.split())
    for f in checks[0].warnings:
        assert f"warning: machine-check {f.code}: " in err
    assert {f.code for f in checks[0].findings} >= {"cpu-governor", "load", "foreign-cpu"}
    # Prompts are salted per run by default: a prompt cache is no warning then.
    assert all(f.status == "ok" for f in checks[0].findings if f.code == "prompt-cache")
