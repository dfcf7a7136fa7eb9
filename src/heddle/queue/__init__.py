"""Queue mode (HEDDLE_EXECUTOR=queue): runs enqueued as procrastinate jobs, executed by workers."""
