"""The `heddle worker` process (queue mode): it builds the container and executes the runs that
heddle.queue enqueued. A process entry point, like app.py for `heddle serve`, so it sits above
the container (docs/architecture.md, "Layers and import contracts")."""
