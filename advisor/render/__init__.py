"""The advisor's pages, from the JSON-ready dicts that `advisor.output` and `advisor.report`
produce (or that a saved JSON file holds), so a page can be rendered again from JSON alone.

One sub-package per page, each with its data, HTML and Markdown: `diagnose`, `plan` (and its
kubectl script), `report`, `whatif`; `common` holds what they share (tolerant reading, the
card view and its bars, HTML and Markdown blocks, colours); `assets/` the stylesheets and the
page skeleton, shipped as package data.
"""
