"""numpy's BLAS on one thread around the spec stage's small products, restored after."""

import numpy as np
import pytest

from pipeline.blas import numpy_blas, one_thread
from pipeline.topicspec.context import related

threadpoolctl = pytest.importorskip("threadpoolctl")


def _numpy_threads() -> list[int]:
    paths = {lib["filepath"] for lib in numpy_blas().info()}
    return [lib["num_threads"] for lib in threadpoolctl.threadpool_info() if lib["filepath"] in paths]


def test_one_thread_inside_and_the_setting_restored_after():
    if numpy_blas() is None:
        pytest.skip("numpy uses a BLAS of the system here")
    before = _numpy_threads()
    with one_thread():
        assert _numpy_threads() == [1] * len(before)
    assert _numpy_threads() == before


def test_related_is_the_same_on_one_thread():
    rng = np.random.default_rng(5)
    v = rng.normal(size=(90, 384))
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    expected = related(v, 5)
    with one_thread():
        assert related(v, 5) == expected
