"""Reports: render an Analysis as Markdown, JSON, CSV or an Excel workbook, plus figures.

Renderers return content (``render_markdown``, ``render_json``, ``render_csv``,
``render_workbook``, the ``figures`` functions); ``render.report_outputs``
picks the renderer for a format and ``write.write_outputs`` writes the files
atomically. Nothing here prints.
"""
