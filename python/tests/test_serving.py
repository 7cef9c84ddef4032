"""Serving from Python: syntorch.serve runs what `syntorch serve` runs and returns its report."""

import json
import os
import subprocess

import pytest

import _syntorch
import syntorch

SOURCE = os.environ.get("SYNTORCH_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
H100 = os.path.join(SOURCE, "hw_configs", "h100_sxm5_80gb.json")


def test_serve_reports_the_benchmark_metrics_with_the_parameters_as_run():
    r = syntorch.serve("llama3-8b", hw=H100, rate=8, requests=40, input_len=512, output_len=32, seed=3,
                       slo="ttft=1s,tpot=50ms", prefix_caching=False)
    assert r["status"] == "ok"
    assert r["completed"] == 40
    assert r["parameters"]["engine"] == "vllm"
    assert r["parameters"]["prefix_caching"] is False
    assert r["parameters"]["block_size"] == 16
    for key in ("ttft_s", "tpot_s", "itl_s", "e2el_s"):
        assert 0 < r[key]["median"] <= r[key]["p99"]
    assert r["good_requests"] <= r["completed"]
    assert r["kv_cache"]["blocks"] > 0
    # Every parameter of the table is a keyword, in the docstring, and shown back as run.
    for key, alias, typ, unit, help_text, default in _syntorch.workload_parameters("serve"):
        assert f"    {key}" in syntorch.serve.__doc__, key
        assert key in r["parameters"], key


def test_serve_matches_the_command_line():
    args = dict(rate=4, requests=20, input_len=256, output_len=16)
    r = syntorch.serve("llama3-8b", hw=H100, **args)
    binary = os.path.join(os.path.dirname(os.path.realpath(_syntorch.__file__)), "..", "syntorch")
    if not os.path.exists(binary):
        pytest.skip("the command-line binary is not built")
    flags = [f"--{k.replace('_', '-')}={v}" for k, v in args.items()]
    out = subprocess.run([binary, "serve", "--model", "llama3-8b", "--hw", H100, "--json", *flags],
                         capture_output=True, text=True, check=True).stdout
    assert json.loads(out)["output_throughput"] == r["output_throughput"]


def test_a_bad_serving_parameter_is_a_value_error_naming_it():
    with pytest.raises(ValueError, match="arrival"):
        syntorch.serve("llama3-8b", hw=H100, arrival="bursty")
    with pytest.raises(ValueError, match="not a parameter of this run"):
        syntorch.serve("llama3-8b", hw=H100, batch=4)


def test_an_engine_without_room_for_its_kv_cache_is_an_oom_result():
    r = syntorch.serve("llama3-8b", hw=H100, requests=2, input_len=8192, memory_fraction=0.21)
    assert r["status"] == "oom"
    assert "longest request" in r["oom_reason"]


def test_a_capacity_search_finds_the_highest_rate_that_meets_the_slos():
    r = syntorch.serve("llama3-8b", hw=H100, requests=120, input_len=1024, output_len=64, slo="ttft=300ms,tpot=25ms",
                       capacity=True, probes=5)
    assert r["status"] == "ok"
    assert 0 < r["capacity_rate"] <= r["saturation_rate"]
    rates = [p["rate"] for p in r["points"]]
    assert rates == sorted(rates) and len(rates) == 5
    for p in r["points"]:
        assert p["meets_slo"] == (p["rate"] <= r["capacity_rate"])
    with pytest.raises(ValueError, match="slo"):
        syntorch.serve("llama3-8b", hw=H100, capacity=True)


def test_a_deployment_reports_each_engine_and_its_role():
    dgx = os.path.join(SOURCE, "hw_configs", "dgx_h100.json")
    r = syntorch.serve("llama3-8b", hw=dgx, tp=2, replicas=2, prefill_replicas=1, router="least_outstanding",
                       rate=10, requests=40, input_len=512, output_len=16, dtype="bf16")
    assert r["status"] == "ok" and r["completed"] == 40
    assert [e["role"] for e in r["replicas"]] == ["decode", "decode", "prefill"]
    assert sum(e["requests"] for e in r["replicas"][:2]) == 40
    assert r["replicas"][2]["output_tokens"] == 40  # the first tokens
    with pytest.raises(ValueError, match="need 12 devices"):
        syntorch.serve("llama3-8b", hw=dgx, tp=4, replicas=2, prefill_replicas=1, requests=4)
