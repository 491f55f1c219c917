"""The command line: `arrayconv filter` on .npy, .tif and .png files, `arrayconv match`, `arrayconv info`, errors."""

import os
import subprocess
import sys

import numpy as np
import pytest
import scipy.ndimage
from _reference import assert_matches, reference_richardson_lucy

import arrayconv as ac
from arrayconv.__main__ import main
from arrayconv._cli import make_kernel, parse_size


@pytest.fixture
def image(tmp_path, rng):
    data = rng.random((120, 90), dtype=np.float32)
    np.save(tmp_path / "in.npy", data)
    return data


def test_filter_npy_to_npy_gaussian_symm(tmp_path, image):
    code = main(["filter", str(tmp_path / "in.npy"), str(tmp_path / "out.npy"), "--kernel", "gaussian:1.5", "--boundary", "symm", "--no-progress"])
    assert code == 0
    expected = scipy.ndimage.gaussian_filter(image.astype(np.float64), 1.5, mode="reflect", truncate=4.0)
    assert_matches(np.load(tmp_path / "out.npy"), expected, dtype="float32")


def test_filter_on_each_device(xp, tmp_path, image):
    device = "cpu" if xp is np else "gpu"
    args = ["filter", str(tmp_path / "in.npy"), str(tmp_path / "out.npy"), "--kernel", "gaussian:2", "--device", device]
    assert main([*args, "--memory-limit", "128K", "--no-progress"]) == 0
    expected = scipy.ndimage.gaussian_filter(image.astype(np.float64), 2, mode="constant", truncate=4.0)
    assert_matches(np.load(tmp_path / "out.npy"), expected, dtype="float32")


def test_filter_on_the_gpu_without_cupy_is_one_line_and_exit_2(tmp_path, image, capsys):
    try:
        import cupy

        if cupy.cuda.is_available():
            pytest.skip("this machine has a usable GPU")
    except ImportError:
        pass
    code = main(["filter", str(tmp_path / "in.npy"), str(tmp_path / "out.npy"), "--kernel", "box:3", "--device", "gpu", "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and "--device gpu needs CuPy and a CUDA device" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out.npy").exists()


def test_filter_npy_to_tiff_box_with_a_small_budget(tmp_path, image):
    tifffile = pytest.importorskip("tifffile")
    code = main(["filter", str(tmp_path / "in.npy"), str(tmp_path / "out.tif"), "--kernel", "box:5", "--memory-limit", "64K", "--no-progress"])
    assert code == 0
    expected = scipy.ndimage.uniform_filter(image.astype(np.float64), 5, mode="constant")
    assert_matches(tifffile.imread(tmp_path / "out.tif"), expected, dtype="float32")


def test_filter_png_rgb_channels_independently(tmp_path, rng):
    imageio = pytest.importorskip("imageio.v3")
    rgb = rng.integers(0, 256, (40, 50, 3), dtype=np.uint8)
    imageio.imwrite(tmp_path / "in.png", rgb)
    assert main(["filter", str(tmp_path / "in.png"), str(tmp_path / "out.png"), "--kernel", "box:3", "--no-progress"]) == 0
    got = imageio.imread(tmp_path / "out.png")
    expected = scipy.ndimage.uniform_filter(rgb.astype(np.float64), (3, 3, 1), mode="constant")
    assert got.dtype == np.uint8 and got.shape == rgb.shape
    assert np.abs(got.astype(float) - expected).max() <= 0.5 + 1e-6


def test_filter_fits_with_a_fits_psf_out_of_core(tmp_path, rng):
    """The astronomer's files: big-endian data in an image extension after an empty primary
    HDU, a PSF in a FITS file of its own; the result is a FITS file of one image HDU."""
    fits = pytest.importorskip("astropy.io.fits")
    sky, psf = rng.random((130, 90)).astype(">f4"), rng.random((9, 7)).astype(">f4")
    fits.HDUList([fits.PrimaryHDU(), fits.ImageHDU(sky, name="SCI")]).writeto(tmp_path / "sky.fits")
    fits.PrimaryHDU(psf).writeto(tmp_path / "psf.fits")
    args = ["filter", str(tmp_path / "sky.fits"), str(tmp_path / "out.fits"), "--kernel", str(tmp_path / "psf.fits")]
    assert main([*args, "--boundary", "wrap", "--memory-limit", "100K", "--no-progress"]) == 0
    with fits.open(tmp_path / "out.fits") as result:
        result.verify("exception")
        assert len(result) == 1 and result[0].header["BITPIX"] == -32
        got = np.array(result[0].data)
    expected = scipy.ndimage.correlate(sky.astype(np.float64), psf.astype(np.float64), mode="wrap")
    assert_matches(got.astype(np.float32), expected, dtype="float32")
    counts = rng.integers(0, 60000, (50, 40)).astype(np.uint16)  # stored as int16 with BZERO=32768
    fits.PrimaryHDU(counts).writeto(tmp_path / "counts.fits")
    assert main(["filter", str(tmp_path / "counts.fits"), str(tmp_path / "out.fits"), "--kernel", "box:3", "--no-progress"]) == 0
    expected = scipy.ndimage.uniform_filter(counts.astype(np.float64), 3, mode="constant")
    assert_matches(fits.getdata(tmp_path / "out.fits").astype(np.float32), expected, dtype="float32")


@pytest.mark.parametrize("mode", ["same", "full", "valid"])
def test_fits_to_fits_keeps_the_header_and_world_coordinates(tmp_path, rng, mode):
    """The result's pixel over a sky position has that position's coordinates, in every
    mode (the reference pixel moves with the result's first sample)."""
    fits = pytest.importorskip("astropy.io.fits")
    wcs = pytest.importorskip("astropy.wcs")
    sky = wcs.WCS(naxis=2)
    sky.wcs.ctype, sky.wcs.crval, sky.wcs.crpix, sky.wcs.cdelt = ["RA---TAN", "DEC--TAN"], [10.5, -30.0], [40.5, 25.0], [-1e-4, 1e-4]
    header = sky.to_header()
    header["OBJECT"], header["CRPIX1A"], header["CTYPE1A"] = "NGC 300", 7.0, "LINEAR"
    fits.PrimaryHDU(rng.random((60, 80), dtype=np.float32), header=header).writeto(tmp_path / "in.fits")
    args = ["filter", str(tmp_path / "in.fits"), str(tmp_path / "out.fits"), "--kernel", "box:4", "--mode", mode]
    assert main([*args, "--no-progress"]) == 0
    got = fits.getheader(tmp_path / "out.fits")
    shift = {"same": 0, "full": 1, "valid": -2}[mode]  # output minus input index, box:4
    assert got["OBJECT"] == "NGC 300" and got["CTYPE1"] == "RA---TAN" and got["CRPIX1A"] == 7.0 + shift
    assert got["NAXIS1"] == {"same": 80, "full": 83, "valid": 77}[mode]
    result = wcs.WCS(got)
    pixels = np.array([[3.0, 4.0], [50.0, 30.0]])  # (x, y), 0-based, of the input
    np.testing.assert_allclose(result.wcs_pix2world(pixels + shift, 0), sky.wcs_pix2world(pixels, 0), rtol=0, atol=1e-12)


@pytest.mark.parametrize("mode", ["same", "full", "valid"])
def test_a_cube_under_a_3d_kernel_keeps_its_world_coordinates_in_tiles(tmp_path, rng, mode):
    """A spectral cube (frequency, dec, ra) under a 3-D kernel through a 64 KB budget, cut
    into tiles along every axis: each CRPIXn, the spectral one too, moves with the result."""
    fits = pytest.importorskip("astropy.io.fits")
    wcs = pytest.importorskip("astropy.wcs")
    sky = wcs.WCS(naxis=3)
    sky.wcs.ctype, sky.wcs.crval = ["RA---TAN", "DEC--TAN", "FREQ"], [10.5, -30.0, 1.4e9]
    sky.wcs.crpix, sky.wcs.cdelt = [40.5, 25.0, 3.0], [-1e-4, 1e-4, 1e6]
    cube = rng.random((12, 50, 80), dtype=np.float32)
    fits.PrimaryHDU(cube, header=sky.to_header()).writeto(tmp_path / "cube.fits")
    args = ["filter", str(tmp_path / "cube.fits"), str(tmp_path / "out.fits"), "--kernel", "box:3,5,4", "--mode", mode]
    assert main([*args, "--memory-limit", "64K", "--no-progress"]) == 0
    got = fits.getdata(tmp_path / "out.fits")
    assert_matches(np.asarray(got, np.float32), scipy.signal.correlate(cube.astype(np.float64), np.full((3, 5, 4), 1 / 60), mode), dtype="float32")
    shift = {"same": [0, 0, 0], "full": [1, 2, 1], "valid": [-1, -2, -2]}[mode]  # output minus input index, (z, y, x)
    pixels = np.array([[3.0, 4.0, 2.0], [50.0, 30.0, 7.0]])  # (x, y, z), 0-based, of the input
    result = wcs.WCS(fits.getheader(tmp_path / "out.fits"))
    np.testing.assert_allclose(result.wcs_pix2world(pixels + shift[::-1], 0), sky.wcs_pix2world(pixels, 0), rtol=0, atol=1e-9)


def test_stacks_and_cubes_are_filtered_plane_by_plane(tmp_path, rng):
    """Named kernels spanned the first two axes: a (planes, y, x) stack was filtered across
    its planes and its rows."""
    tifffile = pytest.importorskip("tifffile")
    fits = pytest.importorskip("astropy.io.fits")
    stack = rng.random((6, 70, 50), dtype=np.float32)
    expected = scipy.ndimage.gaussian_filter(stack.astype(np.float64), (0, 1.5, 1.5), mode="constant", truncate=4.0)
    tifffile.imwrite(tmp_path / "stack.tif", stack)
    fits.PrimaryHDU(stack).writeto(tmp_path / "cube.fits")
    for source, target in [("stack.tif", "out.tif"), ("cube.fits", "out.fits"), ("stack.tif", "out.fits")]:
        assert main(["filter", str(tmp_path / source), str(tmp_path / target), "--kernel", "gaussian:1.5", "--no-progress"]) == 0
        got = tifffile.imread(tmp_path / target) if target.endswith(".tif") else fits.getdata(tmp_path / target)
        assert_matches(np.asarray(got, np.float32), expected, dtype="float32")


def test_named_kernels_take_a_size_per_axis_and_psfs_span_the_last_axes(tmp_path, rng, capsys):
    """Named kernels were 2-D only: a z-stack's 3-D Gaussian (coarser along z) needed a
    hand-made file. And a 3-D PSF file on a (t, z, y, x) series spanned (t, z, y). Sizes
    now go one per axis over the last spatial axes, as do kernel files of 3 or more dims.
    gaussian:inf was a traceback, and gaussian:1e9 a MemoryError."""
    tifffile = pytest.importorskip("tifffile")
    stack = rng.random((16, 70, 50), dtype=np.float32)
    tifffile.imwrite(tmp_path / "stack.tif", stack)
    assert main(["filter", str(tmp_path / "stack.tif"), str(tmp_path / "out.tif"), "--kernel", "gaussian:3,1.5,1", "--no-progress"]) == 0
    expected = scipy.ndimage.gaussian_filter(stack.astype(np.float64), (3, 1.5, 1), mode="constant", truncate=4.0)
    assert_matches(tifffile.imread(tmp_path / "out.tif"), expected, dtype="float32")
    series, psf = rng.random((2, 6, 30, 20), dtype=np.float32), rng.random((3, 5, 4), dtype=np.float32)
    np.save(tmp_path / "series.npy", series)
    np.save(tmp_path / "psf.npy", psf)
    assert main(["filter", str(tmp_path / "series.npy"), str(tmp_path / "out.npy"), "--kernel", str(tmp_path / "psf.npy"), "--no-progress"]) == 0
    expected = np.stack([scipy.signal.correlate(volume.astype(np.float64), psf.astype(np.float64), "same") for volume in series])
    assert_matches(np.load(tmp_path / "out.npy"), expected, dtype="float32")
    assert make_kernel("box:3,5", (40, 50, 3)).shape == (3, 5, 1)  # two sizes: the plane, before a colour axis
    capsys.readouterr()
    for kernel, message in [
        ("box:3,3,3,3", "kernel 'box:3,3,3,3' has 4 dims, but an image of shape (16, 70, 50) has 3 spatial axes"),
        ("gaussian:1e9", "kernel 'gaussian:1e9' of shape (8000000001, 8000000001) would take 256000000064000000004 bytes, over the memory budget"),  # not made
        ("box:0,3", "kernel 'box:0,3': each size must be positive and finite, got 0,3"),
        ("gaussian:inf", "kernel 'gaussian:inf': each size must be positive and finite"),  # was a traceback (OverflowError)
        ("gaussian:0", "kernel 'gaussian:0': each size must be positive and finite"),
    ]:
        assert main(["filter", str(tmp_path / "stack.tif"), str(tmp_path / "o.tif"), "--kernel", kernel, "--no-progress"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and message in err, err


def test_filter_correlates_and_convolves_with_an_asymmetric_psf(tmp_path, rng):
    """`filter` correlated, and said nowhere that it did: a PSF blurs an image by
    convolution, so an asymmetric PSF gave its mirror image's blur. `--convolve` flips it."""
    image, psf = rng.random((40, 30), dtype=np.float32), rng.random((5, 4), dtype=np.float32)
    np.save(tmp_path / "in.npy", image)
    np.save(tmp_path / "psf.npy", psf)
    for flag, func in (([], scipy.signal.correlate), (["--convolve"], scipy.signal.convolve)):
        assert main(["filter", str(tmp_path / "in.npy"), str(tmp_path / "out.npy"), "--kernel", str(tmp_path / "psf.npy"), *flag, "--no-progress"]) == 0
        assert_matches(np.load(tmp_path / "out.npy"), func(image.astype(np.float64), psf.astype(np.float64), "same"), dtype="float32")


def test_a_fits_file_without_an_image_is_one_line(tmp_path, capsys):
    fits = pytest.importorskip("astropy.io.fits")
    table = fits.BinTableHDU.from_columns([fits.Column(name="flux", format="E", array=np.arange(3.0))])
    fits.HDUList([fits.PrimaryHDU(), table]).writeto(tmp_path / "catalog.fits")
    assert main(["filter", str(tmp_path / "catalog.fits"), str(tmp_path / "o.fits"), "--kernel", "box:3"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "catalog.fits holds no image data" in err, err
    assert not (tmp_path / "o.fits").exists()


def test_a_result_fits_cannot_hold_is_one_line(tmp_path, rng, capsys):
    pytest.importorskip("astropy.io.fits")
    np.save(tmp_path / "counts.npy", rng.integers(0, 1000, (20, 30), dtype=np.uint32))
    np.save(tmp_path / "k.npy", np.ones((3, 3), np.uint8))
    assert main(["filter", str(tmp_path / "counts.npy"), str(tmp_path / "o.fits"), "--kernel", str(tmp_path / "k.npy")]) == 2
    assert "FITS holds images of uint8, int16, int32, int64, float32, float64; the result here is uint32" in capsys.readouterr().err
    assert not (tmp_path / "o.fits").exists()


@pytest.mark.parametrize("mode", ["valid", "same", "full"])
def test_match_prints_the_best_windows_and_writes_the_scores(tmp_path, rng, capsys, mode):
    tifffile = pytest.importorskip("tifffile")
    image = rng.standard_normal((120, 90)).astype(np.float32)
    template = image[30:41, 50:57].copy()
    image[80:91, 10:17] = 3 * template + 2  # a second copy, brighter
    np.save(tmp_path / "image.npy", image)
    np.save(tmp_path / "template.npy", template)
    code = main(["match", str(tmp_path / "image.npy"), str(tmp_path / "template.npy"), "--matches", "3", "--mode", mode, "--scores", str(tmp_path / "scores.tif")])
    assert code == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "window (first sample in the image)\tscore" and len(lines) == 4
    assert {lines[1].split("\t")[0], lines[2].split("\t")[0]} == {"(30, 50)", "(80, 10)"}
    assert lines[1].endswith("\t1.000000") and lines[2].endswith("\t1.000000") and float(lines[3].split("\t")[1]) < 0.9
    np.testing.assert_array_equal(tifffile.imread(tmp_path / "scores.tif"), ac.match_template(image, template, mode))


def test_match_errors_from_the_library_are_one_line(tmp_path, image, capsys):
    np.save(tmp_path / "flat.npy", np.ones((3, 3), np.float32))
    assert main(["match", str(tmp_path / "in.npy"), str(tmp_path / "flat.npy")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("arrayconv: error: ValueError: TEMPLATE is constant"), err


@pytest.mark.parametrize("dtype, result", [("uint16", "float32"), ("float32", "float32"), ("int32", "float64")])
def test_deconvolve_writes_richardson_lucy_of_the_image_by_the_psf_scaled_to_sum_one(xp, tmp_path, rng, dtype, result):
    tifffile = pytest.importorskip("tifffile")
    image = rng.integers(1, 1000, (60, 50)).astype(dtype)
    psf = rng.random((5, 4))
    np.save(tmp_path / "image.npy", image)
    np.save(tmp_path / "psf.npy", 3 * psf)  # a PSF file need not be normalized
    device = "cpu" if xp is np else "gpu"
    args = ["deconvolve", str(tmp_path / "image.npy"), str(tmp_path / "out.tif"), "--psf", str(tmp_path / "psf.npy"), "--iterations", "5"]
    assert main([*args, "--boundary", "nearest", "--filter-epsilon", "300", "--device", device]) == 0
    got = tifffile.imread(tmp_path / "out.tif")
    ref = reference_richardson_lucy(image, psf / psf.sum(), 5, boundary="nearest", filter_epsilon=300)
    assert got.dtype == np.dtype(result)
    assert_matches(got, ref, dtype=result, bound=1.0)


def test_deconvolve_fits_keeps_the_header_and_deconvolves_each_plane_of_a_cube(tmp_path, rng):
    fits = pytest.importorskip("astropy.io.fits")
    cube = rng.integers(1, 500, (3, 40, 30)).astype(np.int16)
    header = fits.Header({"OBJECT": "M 31", "CRPIX1": 12.5})
    fits.PrimaryHDU(cube, header=header).writeto(tmp_path / "in.fits")
    assert main(["deconvolve", str(tmp_path / "in.fits"), str(tmp_path / "out.fits"), "--psf", "gaussian:1", "--iterations", "4"]) == 0
    with fits.open(tmp_path / "out.fits") as hdus:
        got, header = hdus[0].data, hdus[0].header
    assert header["OBJECT"] == "M 31" and header["CRPIX1"] == 12.5 and got.dtype == np.dtype(">f4")
    psf = make_kernel("gaussian:1", cube.shape)
    assert psf.shape == (1, 9, 9)
    ref = reference_richardson_lucy(cube, psf.astype(np.float64) / psf.sum(dtype=np.float64), 4)
    assert_matches(got.astype(np.float32), ref, dtype="float32")


def test_best_matches_are_more_than_half_a_template_apart():
    from arrayconv._cli import best_matches

    scores = np.zeros((20, 20))
    scores[5, 5], scores[5, 7], scores[5, 8], scores[15, 15] = 0.9, 0.8, 0.7, np.nan
    assert best_matches(scores, (5, 5), 3) == [((5, 5), 0.9), ((5, 8), 0.7), ((0, 0), 0.0)]
    assert best_matches(np.full((3, 3), np.nan), (2, 2), 2) == []


def test_kernel_from_file(tmp_path, image, rng):
    k = rng.random((4, 3))
    np.save(tmp_path / "k.npy", k)
    assert main(["filter", str(tmp_path / "in.npy"), str(tmp_path / "out.npy"), "--kernel", str(tmp_path / "k.npy"), "--mode", "full", "--no-progress"]) == 0
    assert_matches(np.load(tmp_path / "out.npy"), ac.correlate(image.astype(np.float64), k, "full"), dtype="float64")


def test_filter_with_a_nan_policy_and_a_fill_value(tmp_path, image):
    image[10:13, 40] = np.nan
    np.save(tmp_path / "in.npy", image)
    args = ["filter", str(tmp_path / "in.npy"), str(tmp_path / "out.npy"), "--kernel", "box:5", "--no-progress"]
    assert main([*args, "--nan", "normalize", "--memory-limit", "64K"]) == 0
    assert_matches(np.load(tmp_path / "out.npy"), ac.correlate(image.astype(np.float64), np.full((5, 5), 1 / 25), "same", nan="normalize"), dtype="float32")
    assert main([*args, "--nan", "fill", "--fillvalue", "0.25"]) == 0
    filled = np.where(np.isnan(image), 0.25, image).astype(np.float64)
    assert_matches(np.load(tmp_path / "out.npy"), scipy.ndimage.uniform_filter(filled, 5, mode="constant", cval=0.25), dtype="float32")


def test_a_library_error_leaves_no_output_file(tmp_path, image, capsys):
    image[100, 3] = np.nan
    np.save(tmp_path / "in.npy", image)
    args = ["filter", str(tmp_path / "in.npy"), str(tmp_path / "out.npy"), "--kernel", "box:3", "--nan", "raise", "--no-progress"]
    assert main(args) == 2
    assert "INPUT contains NaN and --nan raise; use --nan propagate" in capsys.readouterr().err  # the command's words, not Python's
    assert not (tmp_path / "out.npy").exists()


@pytest.mark.parametrize(
    "args, message",
    [
        (["filter", "{tmp}/missing.npy", "{tmp}/o.npy", "--kernel", "box:3"], "input file not found"),
        (["filter", "{tmp}/in.npy", "{tmp}/o.npy", "--kernel", "disk:3"], "unknown kernel 'disk:3'"),
        (["filter", "{tmp}/in.npy", "{tmp}/o.npy", "--kernel", "gaussian:-1"], "each size must be positive"),
        (["filter", "{tmp}/in.npy", "{tmp}/o.npy", "--kernel", "{tmp}/nokernel.npy"], "kernel file not found"),
        (["filter", "{tmp}/in.npy", "{tmp}/o.jpg", "--kernel", "box:3"], "unsupported format '.jpg'"),
        (["filter", "{tmp}/in.npy", "{tmp}/o.npy"], "the following arguments are required: --kernel"),
        (["filter", "{tmp}/in.npy", "{tmp}/o.npy", "--kernel", "box:3", "--memory-limit", "lots"], "--memory-limit must be bytes"),
        (["filter", "{tmp}/in.npy", "{tmp}/o.npy", "--kernel", "box:300", "--mode", "valid"], "mode 'valid' needs the image"),
        (["filter", "{tmp}/in.npy", "{tmp}/./in.npy", "--kernel", "box:3"], "OUTPUT must be another file than INPUT"),
        (["filter", "{tmp}/in.npy", "{tmp}/o.png", "--kernel", "box:3"], "a .png OUTPUT holds the uint8 or uint16 images PNG stores; {tmp}/in.npy holds float"),
        (["frobnicate"], "invalid choice: 'frobnicate'"),
        (["match", "{tmp}/in.npy", "{tmp}/missing.npy"], "input file not found"),
        (["match", "{tmp}/in.npy", "{tmp}/in.npy", "--scores", "{tmp}/o.png"], "PNG holds no scores"),
        (["match", "{tmp}/in.npy", "{tmp}/in.npy", "--matches", "-1"], "--matches must be at least 0"),
        (["match", "{tmp}/in.npy", "{tmp}/in.jpg"], "unsupported format '.jpg'"),
        (["deconvolve", "{tmp}/in.npy", "{tmp}/o.png", "--psf", "gaussian:2"], "PNG holds no deconvolved (float) image"),
        (["deconvolve", "{tmp}/in.npy", "{tmp}/o.npy", "--psf", "gaussian:2", "--iterations", "-1"], "--iterations must be at least 0"),
        (["deconvolve", "{tmp}/in.npy", "{tmp}/o.npy"], "the following arguments are required: --psf"),
        (["deconvolve", "{tmp}/in.npy", "{tmp}/o.npy", "--psf", "{tmp}/zero.npy"], "sums to 0.0; a PSF must sum to more than 0"),
    ],
)
def test_errors_are_one_line_and_exit_code_2(tmp_path, image, capsys, args, message):
    np.save(tmp_path / "zero.npy", np.zeros((3, 3)))
    assert main([a.format(tmp=tmp_path) for a in args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("arrayconv: error: ") and message.format(tmp=tmp_path) in err, err
    assert not (tmp_path / "o.npy").exists() and not (tmp_path / "o.png").exists()


def test_a_corrupt_file_is_one_line_from_a_real_process(tmp_path):
    """A corrupt TIFF (IndexError in tifffile) and an empty .npy (EOFError) were tracebacks;
    a corrupt PNG's error ran to four lines (imageio's plugins), a corrupt FITS file's came
    after four lines of astropy's warnings, a corrupt TIFF's after tifffile's log."""
    pytest.importorskip("tifffile")
    pytest.importorskip("imageio")
    pytest.importorskip("astropy")
    files = {"corrupt.tif": b"II*\x00garbage", "empty.npy": b"", "corrupt.png": b"\x89PNG garbage", "corrupt.fits": b"SIMPLE  = T garbage"}
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
        args = [sys.executable, "-m", "arrayconv", "filter", str(tmp_path / name), str(tmp_path / "o.npy"), "--kernel", "box:3"]
        done = subprocess.run(args, capture_output=True, text=True, check=False)
        assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
        assert done.stderr.startswith(f"arrayconv: error: cannot read {tmp_path / name}: "), done.stderr


def test_info_and_exit_code_from_a_real_process(tmp_path):
    env = {**os.environ, "ARRAYCONV_CACHE_DIR": str(tmp_path)}  # no calibrated rates there
    done = subprocess.run([sys.executable, "-m", "arrayconv", "info"], capture_output=True, text=True, check=False, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"arrayconv {ac.__version__}") and "cache estimated_choices" in done.stdout
    assert ", BLAS " in done.stdout and "cpu: cost model rates shipped: GEMM 100 GFLOP/s" in done.stdout
    done = subprocess.run([sys.executable, "-m", "arrayconv", "filter", "a.npy", "b.npy", "--kernel", "box:3"], capture_output=True, text=True, check=False)
    assert done.returncode == 2 and "Traceback" not in done.stderr


def test_version_and_help_from_a_real_process():
    done = subprocess.run([sys.executable, "-m", "arrayconv", "--version"], capture_output=True, text=True, check=False)
    assert done.returncode == 0 and done.stdout == f"arrayconv {ac.__version__}\n"
    code = "import sys; from arrayconv.__main__ import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass\nprint('scipy.signal' in sys.modules, file=sys.stderr)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "deconvolve" in done.stdout and done.stderr == "False\n"  # --help leaves the demo's SciPy peer unimported


def test_a_closed_pipe_ends_quietly(monkeypatch, capsys):
    """`arrayconv info | head -1`: the reader has gone; no BrokenPipeError traceback or message."""
    read, write = os.pipe()
    os.close(read)
    with open(write, "w", buffering=1) as closed:
        monkeypatch.setattr(sys, "stdout", closed)
        assert main(["info"]) == 141
    assert capsys.readouterr().err == ""


def test_deconvolve_defaults_are_richardson_lucys(tmp_path, rng, capsys):
    """The command line's defaults are the library's (it once ran 30 iterations, the library 50)."""
    import inspect

    np.save(tmp_path / "image.npy", rng.random((24, 20)) + 1)
    np.save(tmp_path / "psf.npy", np.full((3, 3), 1 / 9))
    assert main(["deconvolve", str(tmp_path / "image.npy"), str(tmp_path / "out.npy"), "--psf", str(tmp_path / "psf.npy"), "--no-progress"]) == 0
    defaults = inspect.signature(ac.richardson_lucy).parameters
    expected = ac.richardson_lucy(np.load(tmp_path / "image.npy"), np.full((3, 3), 1 / 9), defaults["num_iter"].default, boundary=defaults["boundary"].default)
    np.testing.assert_array_equal(np.load(tmp_path / "out.npy"), expected)


def test_deconvolve_shows_its_progress(tmp_path, rng, capsys):
    pytest.importorskip("tqdm")
    np.save(tmp_path / "image.npy", rng.random((24, 20)) + 1)
    np.save(tmp_path / "psf.npy", np.full((3, 3), 1 / 9))
    assert main(["deconvolve", str(tmp_path / "image.npy"), str(tmp_path / "out.npy"), "--psf", str(tmp_path / "psf.npy"), "--iterations", "7"]) == 0
    assert "7/7" in capsys.readouterr().err


def test_helpers():
    assert parse_size("512M") == 512 << 20 and parse_size("2GiB") == 2 << 30 and parse_size("1000") == 1000
    assert make_kernel("box:3", (40, 50, 3)).shape == (3, 3, 1)  # colour last
    assert make_kernel("box:3", (8, 40, 50)).shape == (1, 3, 3)  # a stack of planes
    assert make_kernel("box:3", (2, 40, 50, 4)).shape == (1, 3, 3, 1)
    assert make_kernel("gaussian:1", (100,)).shape == (9,)
    assert abs(float(make_kernel("gaussian:2", (40, 50)).sum()) - 1) < 1e-6


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no CPU affinity on this OS")
def test_workers_default_to_the_cores_this_process_may_run_on():
    """A batch job (or ``taskset``) that allots one core gets one worker, not the machine's
    count, and ``arrayconv info`` says so."""
    code = (
        "import os; os.sched_setaffinity(0, {min(os.sched_getaffinity(0))}); "
        "from arrayconv._runtime import config as _config; from arrayconv.__main__ import main; "
        "assert _config.workers() == 1, _config.workers(); main(['info'])"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    total = os.cpu_count() or 1
    assert ("1 cores" if total == 1 else f"1 of {total} cores") in done.stdout and "1 FFT workers" in done.stdout
