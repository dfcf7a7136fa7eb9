"""Attachments: files and images in conversations (issue 43).

- `sniff.py`   what a file is, decided by its bytes (filetype, a text check), images opened
               with Pillow (its decompression-bomb limit), PDFs read for text (pypdf); names
               made safe. Pure: a file in, a verdict out.
- `upload.py`  the multipart body streamed into a spooled temporary file, counted and capped.
- `store.py`   the rows: metadata and 256 KiB chunks in the database (SQLite and PostgreSQL),
               quotas, claiming by a message, reading back.
- `routes.py`  POST /threads/{id}/attachments, GET /attachments/{id}[/content].
- `to_model.py` what a model turn gets from a message's attachments.
"""
