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
