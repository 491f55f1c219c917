"""Image files read and written by the CLI, and the durable record of a resumable tiled run."""
