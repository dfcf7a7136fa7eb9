"""A caller's web site embedding Heddle's chat widget: its own login, a mint endpoint, a page
and a tool host. Run ``python -m examples.web_chat --heddle http://127.0.0.1:8080``
(README.md)."""
