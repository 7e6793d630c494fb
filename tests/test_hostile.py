"""Hostile or careless content trees end in a clear error or a warning, never a traceback or a
half-written site (issue 15, points 4-7). Module-level tests live beside their modules; these
run whole builds."""

import orjson
import pytest

from conftest import write_tree, document_resources
from pipeline.config import SiteConfig
from pipeline.embedding.hashing import HashingEmbedder
from pipeline.errors import PipelineError
from pipeline.site.build import build


def run_build(tmp_path, files, **config):
    content = write_tree(tmp_path / "content", files)
    site = tmp_path / "site"
    report = build(content, site, SiteConfig(cache_dir=tmp_path / "cache", **config), embedder=HashingEmbedder(), progress=False)
    return content, site, report


def test_a_document_over_the_size_limit_is_refused_before_anything_is_written(tmp_path):
    big = "# Big\n\n" + "A line of prose about the pipeline.\n" * 3000  # ~100 KB
    with pytest.raises(PipelineError) as info:
        run_build(tmp_path, {"t/big.md": big, "t/ok.md": "# Ok\n\nfine\n"}, max_document_bytes=50_000)
    assert info.value.path.endswith("big.md") and "max_document_bytes" in info.value.message
    assert not (tmp_path / "site").exists()
    _, site, _ = run_build(tmp_path, {"t/big.md": big}, max_document_bytes=200_000)  # within the limit: builds
    assert document_resources(site, "t")["big"]["count"] > 1


# -- names (point 5) ----------------------------------------------------------------------------

import os
import re
import shutil
import subprocess
from pathlib import Path

from pipeline.client import open_site

AWKWARD = {
    "a#b/x#y.md": "# Hash\n\nA folder and a file with a hash sign.\n",
    "p%2e%2e/50%.md": "# Percent\n\nPercent signs that must not decode to dots.\n",
    "sp ace/ünï cödé.md": "# Unicode\n\nSpaces and non-ASCII letters.\n\n## More\n\nA second section here.\n",
    "q?/a&b=c;d.md": "# Query\n\nQuestion marks and ampersands.\n",
}
_RFC3986_PATH = re.compile(r"^(?:[A-Za-z0-9\-._~/:]|%[0-9A-F]{2})*$")


def _hrefs(value):
    if isinstance(value, dict):
        if value.get("templated"):  # RFC 6570: its braces are the template's, expanded by readers
            return
        for k, v in value.items():
            if k == "href" and isinstance(v, str):
                yield v
            else:
                yield from _hrefs(v)
    elif isinstance(value, list):
        for v in value:
            yield from _hrefs(v)


def test_every_href_is_percent_encoded_and_both_clients_open_it(tmp_path):
    from test_client_support import Served

    _, site, _ = run_build(tmp_path, AWKWARD, related_k=1)
    files = [*site.rglob("index.json"), *site.rglob("_index/*.json")]
    hrefs = [h for p in files for h in _hrefs(orjson.loads(p.read_bytes()))]
    assert hrefs and all(_RFC3986_PATH.match(h) for h in hrefs), [h for h in hrefs if not _RFC3986_PATH.match(h)]
    assert "/a%23b/index.json" in hrefs and "/p%252e%252e/index.json" in hrefs
    assert not (site / "sitemap.xml").exists()  # built for a path: no host for the absolute <loc>s sitemaps need
    _, absolute, _ = run_build(tmp_path / "absolute", AWKWARD, base_url="https://example.org/")
    locations = re.findall(r"<loc>([^<]*)</loc>", (absolute / "sitemap.xml").read_text(encoding="utf-8"))
    assert "https://example.org/a%23b/x%23y.md" in locations and all(_RFC3986_PATH.match(u) for u in locations), locations
    expected = {}
    for rel, text in AWKWARD.items():
        folder = rel.split("/")[0]
        expected[folder] = text
    served = Served(site)
    try:
        for location in (site, served.url):
            opened = open_site(location)
            assert sorted(n.id for n in opened.topics()) == sorted(expected)
            for topic, text in expected.items():
                chunks = opened.sample(topic, 10)
                assert chunks and "".join(c.text for c in chunks).startswith(text.split("\n")[0])
        node = shutil.which("node")
        if node:
            client = (Path(__file__).resolve().parent.parent / "pipeline" / "assets" / "client.js").as_uri()
            script = (
                f'import {{ openSite }} from "{client}";\n'
                "const site = await openSite(process.argv[1]); const out = {};\n"
                "for (const n of await site.nodes()) { if (n.documents) out[n.id] = (await site.sample(n.id, 10)).map((c) => c.text).join(''); }\n"
                "console.log(JSON.stringify(out));"
            )
            result = subprocess.run([node, "--input-type=module", "-e", script, served.url], capture_output=True, text=True, timeout=60)
            assert result.returncode == 0, result.stderr
            got = orjson.loads(result.stdout)
            assert sorted(got) == sorted(expected)
            assert all(got[t].startswith(text.split("\n")[0]) for t, text in expected.items())
    finally:
        served.close()


def test_names_the_site_cannot_hold_are_skipped_with_a_warning(tmp_path):
    content = write_tree(tmp_path / "content", {"t/ok.md": "# Ok\n\nfine\n"})
    (content / "t" / ("x" * 245 + ".md")).write_text("# Long\n\ntext\n")
    (content / "t" / ("y" * 240 + ".txt")).write_text("data")
    os.makedirs(os.fsencode(content / "t") + b"/bad\xff")
    with open(os.fsencode(content / "t") + b"/bad\xff/n.md", "wb") as handle:
        handle.write(b"# N\n\ntext\n")
    with open(os.fsencode(content / "t") + b"/caf\xe9.md", "wb") as handle:
        handle.write(b"# C\n\ntext\n")
    with pytest.warns(UserWarning) as caught:
        build(content, tmp_path / "site", SiteConfig(cache_dir=tmp_path / "cache"), embedder=HashingEmbedder(), progress=False)
    messages = " ".join(str(w.message) for w in caught)
    assert "caf\\xe9.md: skipped" in messages and "bad\\xff: skipped" in messages and "bytes long" in messages
    chunks = document_resources(tmp_path / "site", "t")
    assert list(chunks) == ["ok"]


def test_two_documents_with_one_key_are_an_error_naming_both(tmp_path):
    files = {"kb/x.yaml": "type: definition\ntitle: X\noverview: text\n", "kb/x.yaml.md": "# X\n\nother\n"}
    with pytest.raises(PipelineError) as info:
        run_build(tmp_path, files)
    assert "x.yaml and x.yaml.md" in info.value.message and info.value.path.endswith("x.yaml.md")
    assert not (tmp_path / "site").exists()


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("deep.yaml", "type: how_to\nx: " + "[" * 100_000 + "]" * 100_000 + "\n"),  # libyaml crashed on it
        ("deep.json", '{"type": "how_to", "x": ' + "[" * 100_000 + "]" * 100_000 + "}"),
        ("bomb.yml", "x: &a [1,1,1,1,1,1,1,1,1]\n" + "".join(
            f"{c}: &{c} [" + ",".join([f"*{p}"] * 9) + "]\n" for p, c in zip("abcdefgh", "bcdefghi")) + "type: how_to\n"),
    ],
)
def test_hostile_data_files_are_an_error_naming_them(tmp_path, name, text):
    with pytest.raises(PipelineError) as info:
        run_build(tmp_path, {f"kb/{name}": text, "kb/ok.md": "# Ok\n\nfine\n"})
    assert info.value.path.endswith(name)
    assert not (tmp_path / "site").exists()


def test_a_data_file_with_values_metadata_refuses_is_still_only_copied(tmp_path):
    _, site, _ = run_build(tmp_path, {"kb/conf.yaml": "limit: .inf\nblob: !!binary aGVsbG8=\n", "kb/ok.md": "# Ok\n\nfine\n"})
    assert (site / "kb" / "conf.yaml").is_file()
    assert list(document_resources(site, "kb")) == ["ok"]


@pytest.mark.parametrize(("option", "value"), [("related_k", 10**6), ("related_k", -1), ("max_document_bytes", 0)])
def test_unbounded_settings_are_refused(option, value):
    with pytest.raises(PipelineError, match=option):
        SiteConfig(**{option: value})
