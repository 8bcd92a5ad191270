#!/usr/bin/env python3
"""Summarise the CSV files of contrib/perftest-gpu-matrix.sh as Markdown.

usage: contrib/perftest-table.py DIR [SIZE ...]

For each placement (GPU pair) and each size (default 4M and 256M for
tag_bw), prints a sender x receiver table of "GB/s (% of raw) protocol", and
a tag_lat table of the 8 B half round trip. The numbers are the CSV's own:
this script only rearranges them.
"""
import csv
import glob
import os
import sys

UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
SHORT = {"rndv_get": "get", "rndv_host_get": "host get", "rndv_put": "put",
         "rndv_pipe_cuda": "pipe", "rndv_pipe_host": "pipe-host",
         "rndv_pipe_host_get": "pipe-host-get", "rndv_am": "am",
         "eager_staged": "eager", "eager_short": "eager", "eager_bcopy": "eager",
         "eager_multi": "eager"}


def parse_size(text):
    if text[-1].upper() in UNITS:
        return int(text[:-1]) * UNITS[text[-1].upper()]
    return int(text)


def load(directory):
    rows = []
    for path in sorted(glob.glob(os.path.join(directory, "*.csv"))):
        with open(path, newline="") as f:
            rows.extend(r for r in csv.DictReader(f) if r.get("test"))
    return rows


def proto(row):
    name = row.get("protocol", "-").split("/")[0]
    return SHORT.get(name, name or "-")


def table(rows, test, size, cell):
    kinds = []
    for r in rows:
        for k in (r["send_mem"], r["recv_mem"]):
            if k not in kinds:
                kinds.append(k)
    by_pair = {(r["send_mem"], r["recv_mem"]): r for r in rows
               if r["test"] == test and int(r["size"]) == size}
    if not by_pair:
        return []
    out = ["| sender \\ receiver | " + " | ".join(kinds) + " |",
           "|---" * (len(kinds) + 1) + "|"]
    for s in kinds:
        cells = [cell(by_pair[(s, r)]) if (s, r) in by_pair else "" for r in kinds]
        out.append("| " + s + " | " + " | ".join(cells) + " |")
    return out


def bw_cell(r):
    pct = r.get("pct_raw") or ""
    pct = " (%.0f%%)" % float(pct) if pct else ""
    return "%.0f%s %s" % (float(r["bw_gbs"]), pct, proto(r))


def lat_cell(r):
    return "%.1f %s" % (float(r["lat_typical_us"]), proto(r))


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    rows = load(sys.argv[1])
    sizes = [parse_size(s) for s in sys.argv[2:]] or [4 << 20, 256 << 20]
    placements = sorted({(r["send_dev"], r["recv_dev"]) for r in rows})
    for dev in placements:
        sub = [r for r in rows if (r["send_dev"], r["recv_dev"]) == dev]
        where = "one GPU" if dev[0] == dev[1] else "GPU%s -> GPU%s" % dev
        for size in sizes:
            lines = table(sub, "tag_bw", size, bw_cell)
            if lines:
                print("\ntag_bw %s, %s: GB/s (%% of raw copy) protocol\n" %
                      (sys.argv[2 + sizes.index(size)] if len(sys.argv) > 2
                       else "%dM" % (size >> 20), where))
                print("\n".join(lines))
        lines = table(sub, "tag_lat", 8, lat_cell)
        if lines:
            print("\ntag_lat 8 B, %s: half round trip us (median) protocol\n" % where)
            print("\n".join(lines))


if __name__ == "__main__":
    main()
