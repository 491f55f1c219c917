"""The public functions, each reducing its arguments to a problem and running a plan."""
