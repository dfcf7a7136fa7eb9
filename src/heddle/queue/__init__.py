"""Queue mode (HEDDLE_EXECUTOR=queue): runs enqueued as procrastinate jobs, executed by workers
(heddle.worker, the process above the container)."""
