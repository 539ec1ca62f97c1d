"""Images in memories: a screenshot or diagram given to ``store_memory``, its text read by OCR, its bytes kept.

- ``files``: the formats, the limits, and ``ImageFiles``, one private file a memory in ``<data_dir>/images``;
- ``given``: the image a call names (a file inside the roots, or base64), read and checked with Pillow;
- ``ocr``: its text, read by RapidOCR's models (the ``[ocr]`` extra), their sha256 checked before they load.

Only ``files`` is imported with the plugin: Pillow and RapidOCR load when an image is first stored.
"""
