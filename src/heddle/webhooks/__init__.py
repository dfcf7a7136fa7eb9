"""Run webhooks: signed POSTs to a workspace's URL when a run closes, fails or waits."""
