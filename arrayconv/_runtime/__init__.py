"""What a call runs on: the array backend, settings, caches, threads and scratch memory."""
