"""Collection settings for the whole repository (the doctests of arrayconv/ and tests/)."""
import importlib.util

# arrayconv.dask imports dask at the top: without the `dask` extra its doctests are skipped,
# not an error that stops the whole run (the GPU machine has no dask).
collect_ignore = [] if importlib.util.find_spec("dask") else ["arrayconv/dask.py"]
