"""The benchmark harness is not run by `make test` (it takes tens of minutes), but a syntax error
in it only shows at the end of `make bench`: every module must at least compile."""

import py_compile

import pytest

from conftest import ROOT

BENCH_MODULES = sorted((ROOT / "bench").rglob("*.py"))


def test_bench_modules_were_found():
    assert len(BENCH_MODULES) >= 10


@pytest.mark.parametrize("path", BENCH_MODULES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_bench_module_compiles(path, tmp_path):
    py_compile.compile(str(path), cfile=str(tmp_path / "out.pyc"), doraise=True)


def test_report_shows_the_backend_choice_and_query_latency():
    from bench.report import backends_section, query_section

    row = {"backend": "openvino-bf16", "texts_per_s": 11.3, "speedup_vs_torch_fp32": 3.18, "cosine_min": 0.99997,
           "cosine_mean": 0.99998}
    text = backends_section({"texts": 192, "block": 64, "rounds": 6, "native_bf16": True, "auto_chooses": "openvino-bf16",
                             "fastest_eligible": "openvino-bf16", "cosine_floor": 0.999, "rows": [row]})
    assert "`auto` chose **openvino-bf16**" in text and "| openvino-bf16 | 11.3 | ×3.18 | 0.999970 |" in text
    q = {"documents": 12, "cli_first_seconds": 0.8, "cli_warm_seconds": [0.7, 0.77, 0.9], "cli_warm_seconds_median": 0.77,
         "in_process": {"first_query_seconds": 0.3, "warm_query_seconds_median": 0.005, "torch_imported": False}}
    assert "warm median **0.77 s** over 3 calls" in query_section(q) and "torch imported: no" in query_section(q)
    assert query_section(None).startswith("Not run")
