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


def test_search_table_turns_the_query_model_on_and_the_encoder_off(tmp_path):
    path = tmp_path / "site.toml"
    path.write_text('title = "KB"\n[search]\nmodel = true\nencoder = false\n')
    assert load_config(path).search_model is True and load_config(path).search_encoder is False
    assert SiteConfig().search_model is False  # the full model only when the config asks for it
    assert SiteConfig().search_encoder is True  # the static encoder unless the config says otherwise


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[search]\nmodel = 1\n", r"site.toml: search.model must be true or false, got 1"),
        ("[search]\nmodle = true\n", r"site.toml: unknown setting search.modle"),
        ('search = "on"\n', r"site.toml: \[search\] must be a table"),
    ],
)
def test_bad_search_table_names_the_file(tmp_path, text, message):
    path = tmp_path / "site.toml"
    path.write_text(text)
    with pytest.raises(PipelineError, match=message):
        load_config(path)


@pytest.mark.parametrize("value", ["-1", "1.5", "true", '"many"'])
def test_ray_min_tokens_must_be_a_whole_number_of_zero_or_more(tmp_path, value):
    path = tmp_path / "site.toml"
    path.write_text(f'executor = "ray"\nray_min_tokens = {value}\n')
    with pytest.raises(PipelineError, match=r"site.toml.*ray_min_tokens must be a whole number, 0 or more"):
        load_config(path)
    path.write_text('executor = "ray"\nray_min_tokens = 0\n')
    assert load_config(path).ray_min_tokens == 0  # 0: always Ray
