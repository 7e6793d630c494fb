from pathlib import Path

import pytest

from pipeline.config import SiteConfig, load_config
from pipeline.errors import PipelineError


def test_defaults_without_a_file():
    config = load_config(None)
    assert config == SiteConfig() and config.normalized_base_url == "/"


def test_reads_top_level_and_chunking_table(tmp_path):
    path = tmp_path / "site.toml"
    path.write_text('base_url = "/kb"\ntitle = "KB"\n[chunking]\nstrategy = "tokens"\nmax_tokens = 200\n')
    config = load_config(path)
    assert config.normalized_base_url == "/kb/" and config.title == "KB"
    assert config.strategy == "tokens" and config.strategy_options == {"max_tokens": 200}


def test_unknown_key_names_the_file(tmp_path):
    path = tmp_path / "site.toml"
    path.write_text('bse_url = "/"\n')
    with pytest.raises(PipelineError, match=r"site.toml: unknown setting 'bse_url'"):
        load_config(path)


def test_overrides_ignore_none():
    assert SiteConfig().with_overrides(base_url=None, embedder="hashing").embedder == "hashing"


def test_the_repository_config_loads():
    assert load_config(Path(__file__).parent.parent / "build" / "site.toml").title
