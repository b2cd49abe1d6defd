"""The command line says, once, when it compiles numba kernels; with a warm cache it says nothing."""

import os
import subprocess
import sys

from cofiviz.util.compile_notice import MESSAGE


def _run(tmp_path, cache):
    train, test = tmp_path / "train.csv", tmp_path / "test.csv"
    if not train.exists():
        rows = [(u, i, 1 + (u * 7 + i * 3) % 5) for u in range(12) for i in range(10)]
        train.write_text("".join(f"{u},{i},{r}\n" for u, i, r in rows if (i + u) % 10 < 6))
        test.write_text("".join(f"{u},{i},{r}\n" for u, i, r in rows if (i + u) % 10 >= 6))
    return subprocess.run([sys.executable, "-m", "cofiviz.cli", "run", "poprec", "--train", str(train),
                           "--test", str(test), "--metrics", "ndcg@10"],
                          capture_output=True, text=True, env={**os.environ, "NUMBA_CACHE_DIR": str(cache)})


def test_first_run_says_it_compiles_and_the_second_does_not(tmp_path):
    cache = tmp_path / "numba-cache"
    cold = _run(tmp_path, cache)
    assert cold.returncode == 0, cold.stderr
    assert cold.stderr.count(MESSAGE) == 1, cold.stderr
    assert MESSAGE not in cold.stdout and "ndcg@10" in cold.stdout
    assert any(cache.rglob("*.nbi")), "the kernels were not written to the cache"
    warm = _run(tmp_path, cache)
    assert warm.returncode == 0, warm.stderr
    assert MESSAGE not in warm.stderr
    assert warm.stdout.splitlines()[1:] == cold.stdout.splitlines()[1:]   # the same table (line 1 has the time)
