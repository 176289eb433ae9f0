# Draws IDs through the cookbook's next_ids (worker/cookbook/nextids.py):
#   draw.py HOST PORT TOTAL BATCH PAUSE_MS MIN_MS LANES
# LANES connections (as a pool would hold) take the batches in turn.
# IDs go to stdout, one a line; each failed attempt to stderr as
# "E <unix_ms> <error>". Exit 0 once TOTAL IDs are drawn and MIN_MS passed.
import os
import sys
import time

sys.path.insert(0, os.environ["COOKBOOK"])
import nextids  # noqa: E402


def main():
    host = sys.argv[1]
    port, total, batch, pause, min_ms, lanes = (int(a) for a in sys.argv[2:8])
    end = time.time() + min_ms / 1000
    out = sys.stdout

    def on_error(e):
        sys.stderr.write("E %d %s\n" % (time.time() * 1000, str(e).replace("\n", " ")))

    rs = [nextids.connect(host, port) for _ in range(lanes)]
    drawn = 0
    while drawn < total or time.time() < end:
        ids = nextids.next_ids(rs[drawn // batch % lanes], batch, on_error=on_error)
        out.write("".join("%d\n" % i for i in ids))
        drawn += len(ids)
        time.sleep(pause / 1000)
    out.flush()


main()
