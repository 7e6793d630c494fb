"""pipeline sample and pipeline search: the client's commands on the fixture site."""

from __future__ import annotations

import socket

import orjson
import pytest
from typer.testing import CliRunner

from pipeline.cli import app
from pipeline.client import open_site
from test_client_support import ALPHA_Q, fixture_site  # noqa: F401


def test_cli_sample_and_search(fixture_site):
    runner = CliRunner()
    result = runner.invoke(app, ["sample", str(fixture_site), "handbook", "-n", "2", "--document", "alpha"])
    assert result.exit_code == 0, result.output
    assert result.output.count("=== handbook/alpha.md #") == 2
    result = runner.invoke(app, ["search", str(fixture_site), ALPHA_Q, "-k", "2", "--json"])
    assert result.exit_code == 0, result.output
    rows = orjson.loads(result.stdout)
    assert rows[0]["method"] == "simhash" and rows[0]["source"] == "handbook/alpha.md"
    # what a citation needs: the source's lines holding the chunk, its header path, public URLs
    ref = open_site(fixture_site).topic("handbook").document("alpha").items[rows[0]["index"]]
    lines = (fixture_site / "handbook" / "alpha.md").read_text(encoding="utf-8").split("\n")
    cited = "\n".join(lines[rows[0]["start_line"] - 1:rows[0]["end_line"]]).strip()
    assert cited and (fixture_site / ref.path).read_text(encoding="utf-8").rstrip().endswith(cited)
    assert rows[0]["header_path"] == ref.header_path and rows[0]["url"] == "/" + ref.path
    assert rows[0]["section_url"] == f"/#topic=handbook&doc=alpha&chunk={ref.index}"
    result = runner.invoke(app, ["search", str(fixture_site), ALPHA_Q, "-k", "1"])
    assert f"handbook/alpha.md:{rows[0]['start_line']}-{rows[0]['end_line']}" in result.output
    result = runner.invoke(app, ["topics", str(fixture_site)])
    assert result.exit_code == 0 and "handbook" in result.output


def test_cli_search_sentences_gives_the_clients_sentence_reranking(fixture_site):
    query = "how does the stripe order spread chunks over a document"
    result = CliRunner().invoke(app, ["search", str(fixture_site), query, "-k", "6", "--method", "hybrid", "--sentences", "--json"])
    assert result.exit_code == 0, result.output
    rows = orjson.loads(result.stdout)
    hits = open_site(fixture_site).search(query, 6, method="hybrid", sentences=True)
    assert [(r["source"], r["index"]) for r in rows] == [(h.chunk.source, h.chunk.index) for h in hits]
    assert {r["method"] for r in rows} == {"hybrid"}


def test_cli_search_request_budget_reaches_the_client(fixture_site, monkeypatch):
    from pipeline.client.site import Site

    seen: list = []
    real = Site.search

    def spy(self, *args, **kwargs):
        seen.append(kwargs.get("request_budget", "missing"))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Site, "search", spy)
    from pipeline.client.searchindex import REQUEST_BUDGET

    # unset: the clients' default cap; 0: no cap
    for extra, expected in (([], REQUEST_BUDGET), (["--request-budget", "3"], 3), (["--request-budget", "0"], None)):
        result = CliRunner().invoke(app, ["search", str(fixture_site), ALPHA_Q, "-k", "2", "--json", *extra])
        assert result.exit_code == 0, result.output
        assert seen.pop() == expected
    assert REQUEST_BUDGET == 6
    result = CliRunner().invoke(app, ["search", str(fixture_site), ALPHA_Q, "--request-budget", "-1"])
    assert result.exit_code != 0 and not seen


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["sample", "{missing}", "handbook"], "no such directory"),
        (["search", "{empty}", "q"], "no index.json here"),
        (["sample", "{site}", "nope"], "no topic 'nope'"),
        (["search", "http://127.0.0.1:{port}/", "q", "--timeout", "2"], "cannot connect"),
        (["search", "{site}", "q", "--method", "psychic"], "method must be one of"),
    ],
)
def test_cli_errors_are_one_line_without_traceback(fixture_site, tmp_path, args, message):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    (tmp_path / "empty").mkdir()
    fill = {"missing": tmp_path / "missing", "empty": tmp_path / "empty", "site": fixture_site, "port": port}
    result = CliRunner().invoke(app, [a.format(**fill) for a in args])
    assert result.exit_code == 1
    assert message in result.output and "Traceback" not in result.output
    assert result.output.startswith("error: ")
