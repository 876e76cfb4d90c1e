"""Regenerate the PNG renderings in docs/ from real profiler output (../shared/realdata).

    python docs/render.py            # needs soffice (LibreOffice) and pdftoppm (poppler) on PATH

Writes, for the V100 cfd Nsight Compute file (3 kernels, 100 launches):

- docs/kernel-groups-sheet.png: the workbook's first sheet (Kernel groups), as
  LibreOffice prints it (``soffice --headless --convert-to pdf``, then
  ``pdftoppm -png``);
- docs/summary-sheet.png: the workbook's Summary sheet, the same way;
- docs/markdown-report.png: the Markdown report's header and review sections
  (Where the time goes, Top kernels, Coverage, Roofline) as they read rendered:
  code-span fences, bold markers and escapes removed, tables aligned, drawn in
  a monospace font with matplotlib (the LibreOffice here has no Writer, so it
  cannot print HTML);
- docs/transit-figure.png: the cfd report's Transit figure, as the Markdown
  report links it (and the workbook's Figures sheet holds it);
- docs/measured-vs-predicted.png: the accuracy figure of the Markdown report on
  the whole magus-corpus folder (43 applications on a GTX 1080 Ti, 122 timed
  kernels): the cfd page has none, since every prediction there read DRAM bytes
  derived from the measured time, which the Accuracy table does not judge.

Look at them after a change to a report; they are what a reviewer sees.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

DOCS = Path(__file__).resolve().parent
REPO = DOCS.parent
REALDATA = REPO.parent / "shared" / "realdata"
INPUT = REALDATA / "optimal_unified_memory" / "optimal_unified_memory__cfd__nsight_cfd_097K.log"
MARKDOWN_SECTIONS = ("Where the time goes", "Top kernels", "Coverage", "Roofline")
ACCURACY_INPUT = REALDATA / "magus-corpus"  # the accuracy set: nvprof metrics + trace pairs of 43 applications


def run(command: list[str], cwd: Path | None = None) -> None:
    subprocess.run(command, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=300)


def pdf_to_png(pdf: Path, target: Path, pages: int = 1, dpi: int = 110) -> None:
    """The first ``pages`` pages of ``pdf`` (fewer if it is shorter), cropped to their content and
    stacked into one PNG at ``target``."""
    from PIL import Image, ImageChops  # Pillow: matplotlib's dependency, always installed with it

    prefix = pdf.with_suffix("")
    count = _page_count(pdf)
    run(["pdftoppm", "-png", "-r", str(dpi), "-f", "1", "-l", str(min(pages, count)), str(pdf), str(prefix)])
    images = []
    for path in sorted(pdf.parent.glob(prefix.name + "-*.png")):
        image = Image.open(path).convert("RGB")
        box = ImageChops.difference(image, Image.new("RGB", image.size, "white")).getbbox()
        images.append(image.crop((max(0, box[0] - 12), max(0, box[1] - 12), min(image.width, box[2] + 12),
                                  min(image.height, box[3] + 12))) if box else image)
    width = max(i.width for i in images)
    sheet = Image.new("RGB", (width, sum(i.height for i in images)), "white")
    top = 0
    for image in images:
        sheet.paste(image, (0, top))
        top += image.height
    sheet.save(target)


def _page_count(pdf: Path) -> int:
    """Pages in a PDF (pdfinfo when present, else 1)."""
    if shutil.which("pdfinfo") is None:
        return 1
    info = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True, timeout=60).stdout
    found = re.search(r"^Pages:\s+(\d+)", info, flags=re.M)
    return int(found.group(1)) if found else 1


def workbook_sheet_png(workbook: Path, sheet: str, target: Path, work: Path, pages: int = 1) -> None:
    """One sheet of the workbook, printed by LibreOffice (the other sheets removed first)."""
    from openpyxl import load_workbook

    wb = load_workbook(workbook)
    for name in list(wb.sheetnames):
        if name != sheet:
            del wb[name]
    single = work / f"{sheet.replace(' ', '-').lower()}.xlsx"
    wb.save(single)
    run(["soffice", "--headless", "--convert-to", "pdf", "--outdir", str(work), str(single)])
    pdf_to_png(single.with_suffix(".pdf"), target, pages=pages)


def _rendered(text: str) -> str:
    """One line of the report's Markdown as it reads rendered: code-span fences, bold markers and
    backslash escapes removed."""
    text = re.sub(r"(`+) ?(.+?) ?\1", lambda m: m.group(2).replace("\\|", "|"), text)
    text = re.sub(r"\*\*(.+?)\*\*", r"\1", text)
    return re.sub(r"\\([\\`*_\[\]|#~<>&])", r"\1", text)


def _table_lines(rows: list[str], width: int) -> list[tuple[str, str]]:
    """A GFM table as aligned monospace lines (header bold), cells cut to fit ``width``."""
    split = [[_rendered(c) for c in re.split(r"(?<!\\)\|", r.strip())[1:-1]] for r in rows]
    header, aligns, body = split[0], split[1], split[2:]
    right = [a.strip().endswith(":") for a in aligns]
    widths = [max(len(r[i]) if i < len(r) else 0 for r in [header, *body]) for i in range(len(header))]
    while sum(widths) + 3 * len(widths) > width and max(widths) > 12:
        widths[widths.index(max(widths))] -= 1
    def line(cells: list[str]) -> str:
        out = []
        for i, w in enumerate(widths):
            cell = cells[i] if i < len(cells) else ""
            cell = cell if len(cell) <= w else cell[: w - 1] + "…"
            out.append(cell.rjust(w) if right[i] else cell.ljust(w))
        return " │ ".join(out)
    return [("bold", line(header)), ("plain", "─┼─".join("─" * w for w in widths))] + [("plain", line(r)) for r in body]


def markdown_lines(text: str, width: int = 150) -> list[tuple[str, str]]:
    """(style, text) lines of the rendered report: headings, aligned tables, wrapped prose and lists."""
    import textwrap

    lines = text.splitlines()
    out: list[tuple[str, str]] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            i += 1
            while i < len(lines) and not lines[i].startswith("```"):
                out.extend(("code", part) for part in textwrap.wrap(lines[i], width - 4) or [""])
                i += 1
        elif line.startswith("#"):
            level = len(line) - len(line.lstrip("#"))
            out.append((f"h{level}", _rendered(line[level:].strip())))
        elif line.startswith("|"):
            rows = []
            while i < len(lines) and lines[i].startswith("|"):
                rows.append(lines[i])
                i += 1
            i -= 1
            out.extend(_table_lines(rows, width))
        elif line.strip():
            indent = len(line) - len(line.lstrip())
            marker = re.match(r"\s*(-|\d+\.) ", line)
            hang = " " * (indent + (len(marker.group(0)) - indent if marker else 0))
            body = _rendered(line.strip()).replace("- ", "• ", 1) if marker and marker.group(1) == "-" \
                else _rendered(line.strip())
            out.extend(("plain", part) for part in textwrap.wrap(body, width, initial_indent=" " * indent,
                                                                  subsequent_indent=hang))
        else:
            out.append(("plain", ""))
        i += 1
    return out


def markdown_png(text: str, target: Path, width: int = 150) -> None:
    """The rendered report drawn line by line in a monospace font (matplotlib), as one PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    lines = markdown_lines(text, width)
    height = 0.19 * len(lines) + 0.4
    fig = plt.figure(figsize=(width * 0.075, height), dpi=100)
    sizes = {"h1": 13, "h2": 11.5, "h3": 10}
    y = 1.0 - 0.2 / height
    for style, content in lines:
        extra = {"backgroundcolor": "#EEEEEE"} if style == "code" else {}
        fig.text(0.01, y, content, family="DejaVu Sans Mono", fontsize=sizes.get(style, 8.5), va="top",
                 weight="bold" if style.startswith("h") or style == "bold" else "normal",
                 color="#1F4E78" if style.startswith("h") else ("#333333" if style == "code" else "black"), **extra)
        y -= 0.19 / height * (1.25 if style in sizes else 1.0)
    fig.savefig(target, dpi=100, facecolor="white")
    plt.close(fig)


def review_sections(text: str) -> str:
    """The report's header and review sections (the per-launch detail after them is left out)."""
    parts = re.split(r"(?m)^(?=## )", text)
    keep = [parts[0]] + [p for p in parts[1:] if p.splitlines()[0][3:].strip() in MARKDOWN_SECTIONS]
    return "".join(keep)


def main() -> int:
    for needed in (INPUT, ACCURACY_INPUT):
        if not needed.exists():
            print(f"render.py: {needed} not found (../shared/realdata is needed)", file=sys.stderr)
            return 1
    for tool in ("soffice", "pdftoppm"):
        if shutil.which(tool) is None:
            print(f"render.py: {tool} is not on PATH", file=sys.stderr)
            return 1
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        workbook = work / "review.xlsx"
        report = work / "review.md"
        cli = [sys.executable, "-m", "nvperf_bridge"]
        run([*cli, "analyze", str(INPUT), "-o", str(workbook), "-q"])
        run([*cli, "analyze", str(INPUT), "-o", str(report), "-q"])
        workbook_sheet_png(workbook, "Kernel groups", DOCS / "kernel-groups-sheet.png", work, pages=2)
        workbook_sheet_png(workbook, "Summary", DOCS / "summary-sheet.png", work)
        markdown_png(review_sections(report.read_text(encoding="utf-8")), DOCS / "markdown-report.png")
        shutil.copyfile(work / "review-transit.png", DOCS / "transit-figure.png")
        run([*cli, "analyze", str(ACCURACY_INPUT), "-o", str(work / "corpus.md"), "-q"])
        shutil.copyfile(work / "corpus-measured-vs-predicted.png", DOCS / "measured-vs-predicted.png")
    print("wrote docs/kernel-groups-sheet.png, docs/summary-sheet.png, docs/markdown-report.png, "
          "docs/transit-figure.png, docs/measured-vs-predicted.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
