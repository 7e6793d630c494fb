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
    from bench.reporting.sections import encoding, query

    row = {"backend": "openvino-bf16", "texts_per_s": 11.3, "speedup_vs_torch_fp32": 3.18, "cosine_min": 0.99997,
           "cosine_mean": 0.99998}
    text = encoding({"texts": 192, "block": 64, "rounds": 6, "native_bf16": True, "auto_chooses": "openvino-bf16",
                           "fastest_eligible": "openvino-bf16", "cosine_floor": 0.999, "rows": [row]})
    assert "`auto` chose **openvino-bf16**" in text and "| openvino-bf16 | 11.3 | ×3.18 | 0.999970 |" in text
    calls = {"first": 8.7, "warm_median": 8.05, "cpu_warm_median": 3.1, "runtimes": "[]"}
    q = {"documents": 12, "runs": 7, "loadavg": [2.0, 2.0, 2.0], "static": calls,
         "full": {**calls, "warm_median": 11.32, "runtimes": "['onnxruntime']"}}
    assert "| static | 8.70 | **8.05** | 3.10 | [] |" in query(q) and "| full | 8.70 | **11.32** | 3.10 | ['onnxruntime'] |" in query(q)
    assert "7 warm calls each" in query(q) and query(None).startswith("Not run")


def _backends(native: bool, speedup: float, cosine: float, texts: int = 512) -> dict:
    rows = [{"backend": "torch", "texts_per_s": 3.0, "speedup_vs_torch_fp32": 1.0, "cosine_min": 1.0, "cosine_mean": 1.0},
            {"backend": "openvino", "texts_per_s": 6.0, "speedup_vs_torch_fp32": 2.0, "cosine_min": 1.0, "cosine_mean": 1.0},
            {"backend": "openvino-bf16", "texts_per_s": 9.0, "speedup_vs_torch_fp32": speedup, "cosine_min": cosine,
             "cosine_mean": 0.99998}]
    return {"texts": texts, "block": 128, "rounds": 4, "native_bf16": native, "cosine_floor": 0.999, "rows": rows,
            "auto_chooses": "openvino-bf16" if native else "openvino", "fastest_eligible": "openvino-bf16",
            "auto_on_other_cpu": "openvino" if native else "openvino-bf16"}


def test_encoding_target_verdict_follows_the_cpu_kind():
    from bench.reporting.targets import encoding_verdict

    assert encoding_verdict(_backends(True, 3.42, 0.99997))[0] == "met"
    assert encoding_verdict(_backends(True, 2.3, 0.99997))[0] == "not met"
    assert encoding_verdict(_backends(True, 3.42, 0.998))[0] == "not met"
    assert encoding_verdict(_backends(True, 3.42, 0.99997, texts=192))[0] == "partly measured"
    verdict, evidence = encoding_verdict(_backends(True, 3.42, 0.99997))
    assert "picks `openvino`, ×2.00 here" in evidence
    assert encoding_verdict(_backends(False, 3.42, 0.99997))[0] == "met"  # auto = openvino, ×2.00 ≥ fp32


def test_remove_site_leaves_nothing_a_build_would_reuse(tmp_path):
    from bench.speed import remove_site
    from pipeline.site.staging import sibling

    site = tmp_path / "site"
    (site / "a").mkdir(parents=True)
    for role in ("memo", "previous", "staging"):
        (sibling(site, role) / "x").mkdir(parents=True)
    sibling(site, "stamps").write_text("{}")
    other = tmp_path / ".site2.pipeline-memo"  # another site's memo stays
    other.mkdir()
    remove_site(site)
    assert sorted(p.name for p in tmp_path.iterdir()) == [other.name]
    remove_site(site)  # nothing left to remove: no error


def test_whole_ray_builds_split_into_a_fixed_cost_and_a_rate_and_judge_the_ray_row():
    from bench.reporting.targets import engine_targets
    from bench.speed.executor_builds import break_even, marginal, report_section

    def corpus(name, chunks, local, ray, joined):
        rounds = [{"ratio_ray": local / ray, "ratio_ray_joined": local / joined}]
        return {"corpus": name, "chunks": chunks, "identical": True, "rounds": rounds, "local_seconds": local,
                "ray_seconds": ray, "ray_joined_seconds": joined, "ray_over_local": local / ray,
                "ray_joined_over_local": local / joined}

    # local: 2 s + chunks / 100; Ray started: 10 s + chunks / 100; joined: 6 s + chunks / 100
    small, large = corpus("synthetic, 1,000 documents", 1000, 12, 20, 16), corpus("synthetic, 3,000 documents", 3000, 32, 40, 36)
    m = marginal(small, large)
    assert round(m["local_chunks_per_s"], 6) == 100 and round(m["ray_fixed_seconds"], 6) == 10
    assert round(m["ray_over_local"], 6) == 1.0
    # 0.85 (10 + n/100) <= 2 + n/100  <=>  n >= 6.5 / 0.0015
    assert round(m["ray_within_target_from"]) == round(6.5 / 0.0015)
    assert break_even(2, 100, 1, 100) == 0.0  # within at every size
    assert break_even(2, 100, 10, 50) is None  # half the rate: never within 15 %
    builds = {"workers": 2, "rounds": 1, "corpora": [small, large], "marginal": m}
    (_, verdict, evidence), = engine_targets(None, builds)[1:]
    assert verdict == ("met once running, and by whole builds from ~4,300 chunks; not by smaller builds (Ray's start is a "
                       "fixed ~8 s more than local's)") and "×0.60" in evidence and "×1.00" in evidence
    fast = {**builds, "corpora": [corpus("a", 1000, 12, 13, 12.5)]}
    assert engine_targets(None, fast)[1][1] == "met"
    assert engine_targets(None, {**fast, "corpora": [{**fast["corpora"][0], "identical": False}]})[1][1] == "not met"
    text = report_section(builds)
    assert "| synthetic, 1,000 documents | 1,000 | started by the build | 12.0 | 20.0 | ×0.60 (×0.60–×0.60) | no | yes |" in text
    assert "~4,300 chunks (Ray started by the build)" in text


def test_search_targets_judge_the_default_fusion_and_show_the_ceilings():
    from bench.reporting.targets import search_targets

    def summary(**recall):
        return {m: {"recall": r, "iou": 6.0} for m, r in recall.items()}

    result = {"set": "chroma", "oracle_recall": 89.9, "rerank_depth": 10, "rerank_ceiling_recall": 92.8,
              "summary": summary(vector=76.6, lexical=86.3, bm25=85.3, **{"hybrid-score": 87.0})}
    rows = {name: (verdict, evidence) for name, verdict, evidence in search_targets({"results": [result]})}
    verdict, evidence = rows["chroma: hybrid R@5 ≥ best single + 3 with IoU ≥ vector's"]
    assert verdict == "not met" and "oracle of the two lists 89.9" in evidence and "first 10 92.8" in evidence
    assert rows["chroma: lexical alone (the page before its model) at BM25's level"][0] == "met"
    result["summary"]["hybrid-score"]["recall"] = 89.4
    assert search_targets({"results": [result]})[0][1] == "met"


def test_rerank_ceiling_puts_the_gold_chunks_of_the_candidates_first():
    import numpy as np

    from bench import chroma_eval as ce
    from bench.search_eval import rerank_ceiling

    chunks = ce.ChunkSet(["a"] * 4, np.array([0, 10, 20, 30]), np.array([10, 20, 30, 40]), ["x"] * 4)
    dataset = ce.Dataset({"a": "y" * 40}, [ce.Question("q", "a", ((20, 30),))], "d")
    assert rerank_ceiling(dataset, chunks, [[0, 1, 2, 3]], depth=3, k=1) == [1.0]  # chunk 2 is among the first 3
    assert rerank_ceiling(dataset, chunks, [[0, 1, 3, 2]], depth=3, k=1) == [0.0]  # it is not


def test_executor_builds_compares_sites_but_the_code_digests(tmp_path):
    """Two checkouts' sites differ in the state file and the search index's ``inputs`` digest
    (both cover the code); every other byte must match."""
    from bench.speed.executor_builds import differing_files

    for name, digest in (("a", "1111"), ("b", "2222")):
        (tmp_path / name / "_search").mkdir(parents=True)
        (tmp_path / name / ".pipeline-state.json").write_text(digest)
        (tmp_path / name / "_search" / "meta.json").write_text(f'{{"chunks":3,"inputs":"{digest}"}}')
        (tmp_path / name / "_search" / "records.json").write_text(f'{{"meta":{{"inputs":"{digest}"}},"records":[1]}}')
        (tmp_path / name / "index.json").write_text("{}")
    assert differing_files(tmp_path / "a", tmp_path / "b") == []
    (tmp_path / "b" / "_search" / "records.json").write_text('{"meta":{"inputs":"2222"},"records":[2]}')
    (tmp_path / "b" / "index.json").write_text("[]")
    assert differing_files(tmp_path / "a", tmp_path / "b") == ["_search/records.json", "index.json"]


def test_mcp_sizes_judge_the_budget_on_fastapi_and_ten_thousand_documents():
    from bench.mcp_sizes import targets
    from bench.reporting.sections import mcp

    def site(name, documents, largest, errors=()):
        return {"name": name, "embedder": "hashing", "documents": documents, "chunks": 4 * documents, "topics": 3,
                "tools_list_chars": 2907, "errors": list(errors), "walks": {},
                "tools": {"search": {"calls": 10, "median": 3800, "max": 4100}, "read_document": {"calls": 9, "median": 9000, "max": largest}}}

    result = {"limit_chars": 16000, "chars_per_token": 4, "sites": [site("FastAPI docs", 153, 15438), site("synthetic, 10,000 documents", 10000, 15990)]}
    assert targets(result)[0][1] == "met" and "largest 15,990 characters over 19 answers" in targets(result)[0][2]
    assert "| `read_document` | 9,000 / 15,438 | 9,000 / 15,990 |" in mcp(result)
    over = {**result, "sites": [site("FastAPI docs", 153, 16001), result["sites"][1]]}
    failed = {**result, "sites": [result["sites"][0], site("synthetic, 10,000 documents", 10000, 900, ["search: boom"])]}
    small = {**result, "sites": [result["sites"][0], site("synthetic, 300 documents", 300, 900)]}
    assert [targets(r)[0][1] for r in (over, failed, small, None)] == ["not met", "not met", "not met", "not run"]
