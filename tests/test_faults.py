"""Faults lose no data: outputs appear whole or not at all, interrupts end cleanly, long runs
resume where they stopped, and a GPU out of memory gets a smaller plan or one clear error."""

import errno
import os
import signal
import subprocess
import sys
import time
import types
from pathlib import Path

import numpy as np
import pytest

import arrayconv as ac
from arrayconv.__main__ import main
from arrayconv._api import tiled as _tiled
from arrayconv._io.image_files import partial_path
from arrayconv._io.resume import SUFFIX

FILTER = ["--kernel", "gaussian:3", "--memory-limit", "512K", "--no-progress"]  # a second or more, in hundreds of tiles


@pytest.fixture(scope="module")
def image(tmp_path_factory):
    path = tmp_path_factory.mktemp("faults") / "in.npy"
    np.save(path, np.random.default_rng(0).random((3000, 3000), dtype=np.float32))
    return path


def _start(image: Path, target: Path, *extra: str) -> subprocess.Popen:
    command = [sys.executable, "-m", "arrayconv", "filter", str(image), str(target), *FILTER, *extra]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for(path: Path, run: subprocess.Popen) -> None:
    """Until `path` exists (the run is under way), or the run has ended."""
    while not path.exists() and run.poll() is None:
        time.sleep(0.005)


def _finish(run: subprocess.Popen) -> tuple[int, str]:
    _, err = run.communicate(timeout=120)
    return run.returncode, err


@pytest.mark.parametrize(("stop", "code", "name"), [(signal.SIGTERM, 143, "SIGTERM"), (signal.SIGINT, 130, "SIGINT")])
def test_a_stopped_run_leaves_the_old_output_and_no_partial_one(image, tmp_path, stop, code, name):
    """SIGTERM (a scheduler, `timeout`) and Ctrl-C stop the tile loop, remove the partial
    result and exit with the shell's status and one line; the destination keeps its old
    contents (it once was left full size, its last rows zeros)."""
    rng = np.random.default_rng(int(stop))
    target = tmp_path / "out.npy"
    old = np.arange(5.0)
    for _ in range(3):
        np.save(target, old)
        run = _start(image, target)
        _wait_for(partial_path(target), run)
        time.sleep(rng.uniform(0, 0.8))
        run.send_signal(stop)
        returncode, err = _finish(run)
        if returncode == 0:  # finished before the signal came
            continue
        assert returncode == code and err == f"arrayconv: stopped by {name}: no output written\n", err
        np.testing.assert_array_equal(np.load(target), old)
        assert not partial_path(target).exists() and not Path(str(partial_path(target)) + SUFFIX).exists()
        return
    pytest.fail("every run finished before its signal")


def test_a_killed_run_leaves_no_output_and_resumes_to_the_same_bits(image, tmp_path):
    """SIGKILL can be neither caught nor cleaned up after: the destination appears only
    whole (a kill can land after the rename, before the exit), and a run started with --resume continues from its last recorded tile to the result of
    an uninterrupted run, bit for bit."""
    uninterrupted, whole = tmp_path / "whole.npy", []
    real = _tiled._BoxReader.box
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_tiled._BoxReader, "box", lambda self, *a, **k: whole.append(1) or real(self, *a, **k))
        assert main(["filter", str(image), str(uninterrupted), *FILTER]) == 0
    rng = np.random.default_rng(9)
    target = tmp_path / "out.npy"
    kills = 0
    for _ in range(8):  # killed twice running at random points, then resumed to the end
        run = _start(image, target, "--resume")
        _wait_for(Path(str(partial_path(target)) + SUFFIX), run)  # a tile recorded
        time.sleep(rng.uniform(0, 0.3))
        run.kill()
        run.communicate(timeout=120)
        if target.exists():  # renamed into place before the kill landed: whole, so start over
            np.testing.assert_array_equal(np.load(target), np.load(uninterrupted))
            target.unlink()
            kills = 0
            continue
        assert run.returncode == -signal.SIGKILL
        kills += 1
        if kills == 2:
            break
    else:
        pytest.fail("the runs kept finishing before their kill")
    read = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_tiled._BoxReader, "box", lambda self, *a, **k: read.append(1) or real(self, *a, **k))
        assert main(["filter", str(image), str(target), *FILTER, "--resume"]) == 0
    assert 0 < len(read) < len(whole)  # the tiles recorded before the kill were not done again
    np.testing.assert_array_equal(np.load(target), np.load(uninterrupted))
    assert not partial_path(target).exists() and not Path(str(partial_path(target)) + SUFFIX).exists()


@pytest.mark.parametrize(("where", "error", "message"), [("write", errno.ENOSPC, "No space left on device"), ("read", errno.EIO, "Input/output error")])
def test_a_full_disk_or_a_failed_read_is_one_error_naming_the_file_and_tile(image, tmp_path, capsys, monkeypatch, where, error, message):
    target = tmp_path / "out.npy"
    calls = []

    def failing(real):
        def call(*args, **kwargs):
            calls.append(1)
            if len(calls) == 2:
                raise OSError(error, os.strerror(error))
            return real(*args, **kwargs)

        return call

    if where == "write":
        from arrayconv import _cli

        class Failing(np.memmap):  # the output file, whose second tile's write fails
            __setitem__ = failing(np.memmap.__setitem__)

        real_create = _cli.create_output
        monkeypatch.setattr(_cli, "create_output", lambda *a, **k: real_create(*a, **k).view(Failing))
    else:
        monkeypatch.setattr(_tiled._BoxReader, "box", failing(_tiled._BoxReader.box))
    assert main(["filter", str(image), str(target), "--kernel", "gaussian:3", "--memory-limit", "4M", "--no-progress"]) == 2
    err = capsys.readouterr().err
    doing, file = ("writing", partial_path(target).name) if where == "write" else ("reading", image.name)
    assert err.count("\n") == 1 and f"OSError: [Errno {error}] {doing} tile 2 of " in err and file in err and message in err, err
    assert not target.exists() and not partial_path(target).exists()


def _crash_after(monkeypatch, tiles: int) -> None:
    """The next resumable run records every tile at once (not in the background, at most
    once a second), and stops as a crash would once `tiles` are recorded."""
    from arrayconv._io.resume import Progress

    def tile_done(self, done):
        self._sync_and_record(done)
        if done == tiles:
            raise SystemExit("crash")

    monkeypatch.setattr(Progress, "tile_done", tile_done)


@pytest.mark.parametrize("store", ["memmap", "zarr"])
def test_resume_skips_the_recorded_tiles_and_gives_the_uninterrupted_bits(tmp_path, monkeypatch, store, rng):
    x = rng.random((400, 300), dtype=np.float32)
    k = rng.random((9, 7), dtype=np.float32)
    expected = np.empty((400, 300), np.float32)
    ac.correlate_into(x, k, expected, "same", boundary="symmetric", memory_limit=64 << 10, progress=False)
    if store == "zarr":
        zarr = pytest.importorskip("zarr")
        out = zarr.open(str(tmp_path / "out.zarr"), mode="w", shape=(400, 300), chunks=(64, 300), dtype="float32")
    else:
        out = np.lib.format.open_memmap(tmp_path / "out.npy", "w+", np.float32, (400, 300))
    options = dict(mode="same", boundary="symmetric", memory_limit=64 << 10, progress=False, resume=True)
    with monkeypatch.context() as patch:
        _crash_after(patch, 5)
        with pytest.raises(SystemExit):
            ac.correlate_into(x, k, out, **options)
    with pytest.raises(ValueError, match="`out` holds part of another run"):
        ac.correlate_into(x, k * 2, out, **options)  # another kernel: refused, never mixed
    read, real = [], _tiled._BoxReader.box
    monkeypatch.setattr(_tiled._BoxReader, "box", lambda self, *a, **kw: read.append(1) or real(self, *a, **kw))
    ac.correlate_into(x, k, out, **options)
    whole = []
    monkeypatch.setattr(_tiled._BoxReader, "box", lambda self, *a, **kw: whole.append(1) or real(self, *a, **kw))
    ac.correlate_into(x, k, np.empty_like(expected), "same", boundary="symmetric", memory_limit=64 << 10, progress=False)
    assert len(read) == len(whole) - 5  # the five tiles written before the crash were not done again
    np.testing.assert_array_equal(np.asarray(out[...]), expected)
    attrs = getattr(out, "attrs", None)
    assert (dict(attrs) if store == "zarr" else list(tmp_path.glob("*" + SUFFIX))) in ({}, [])  # the record goes with the run


def test_resume_needs_an_output_it_can_record_in(rng):
    with pytest.raises(ValueError, match=r"`resume=True` needs an `out` backed by a file"):
        ac.correlate_into(rng.random((20, 20)), np.ones((3, 3)), np.empty((20, 20)), resume=True, progress=False)


def test_a_killed_library_run_into_zarr_resumes(tmp_path, rng):
    """A real SIGKILL of a resumable correlate_into into a zarr store, at a random tile."""
    pytest.importorskip("zarr")
    script = f"""
import numpy as np, zarr, arrayconv as ac
x = np.random.default_rng(1).random((1500, 1500), dtype=np.float32)
out = zarr.open({str(tmp_path / 'out.zarr')!r}, mode="a", shape=(1500, 1500), chunks=(32, 1500), dtype="float32")
ac.correlate_into(x, np.ones((15, 15), np.float32) / 225, out, "same", memory_limit=256 << 10, progress=False, resume=True)
"""
    run = subprocess.Popen([sys.executable, "-c", script], stderr=subprocess.PIPE)
    zattrs = [tmp_path / "out.zarr" / "zarr.json", tmp_path / "out.zarr" / ".zattrs"]
    while run.poll() is None and not any(p.exists() and "arrayconv_progress" in p.read_text() for p in zattrs):
        time.sleep(0.005)
    time.sleep(rng.uniform(0, 0.3))
    run.kill()
    run.communicate(timeout=120)
    assert subprocess.run([sys.executable, "-c", script], check=False).returncode == 0
    import zarr

    x = np.random.default_rng(1).random((1500, 1500), dtype=np.float32)
    expected = np.empty_like(x)
    ac.correlate_into(x, np.ones((15, 15), np.float32) / 225, expected, "same", memory_limit=256 << 10, progress=False)
    np.testing.assert_array_equal(zarr.open(str(tmp_path / "out.zarr"), mode="r")[...], expected)


@pytest.mark.gpu
def test_a_gpu_out_of_memory_plans_again_smaller_or_says_what_it_needed(xp, rng, monkeypatch):
    """CuPy's OutOfMemoryError in a method: the pool's free blocks go back, a plain call is
    planned again within half the device's free memory (here direct, with no temporaries,
    instead of the FFT), and a call that cannot be made smaller says what it needed."""
    if xp is np:
        pytest.skip("a GPU's memory")
    import dataclasses

    from arrayconv._methods import METHODS

    def out_of_memory(*args, **kwargs):
        raise xp.cuda.memory.OutOfMemoryError(37_748_736, 0)

    image, kernel = rng.random((1024, 1024)), rng.random((63, 63))
    expected = ac.correlate(image, kernel, "same", "direct")
    with ac.config(memory_limit=1 << 30):
        assert ac.choose_method(xp.asarray(image), xp.asarray(kernel), mode="same").method == "fft"  # the premise
    monkeypatch.setitem(METHODS, "fft", dataclasses.replace(METHODS["fft"], run=out_of_memory))
    monkeypatch.setattr(xp.cuda.runtime, "memGetInfo", lambda: (20 << 20, 16 << 30))
    pool, frees = xp.get_default_memory_pool(), []  # CuPy's pool takes no new attributes: wrap its getter
    recording = types.SimpleNamespace(free_all_blocks=lambda: frees.append(pool.free_all_blocks()))
    monkeypatch.setattr(xp, "get_default_memory_pool", lambda: recording)
    with ac.config(memory_limit=1 << 30):
        got = ac.correlate(xp.asarray(image), xp.asarray(kernel), "same")
    assert frees
    np.testing.assert_allclose(xp.asnumpy(got), expected, rtol=1e-10, atol=1e-10 * np.abs(expected).max())
    message = r"the GPU ran out of memory running 'fft': this call needs about 0.04\d* GiB .* 0.0195 GiB of the device are free"
    with pytest.raises(MemoryError, match=message):
        ac.correlate(xp.asarray(image), xp.asarray(kernel), "same", "fft")  # a method named: not changed behind the caller's back
