# IDs over HTTP (snowflaked --http-ids) with requests. The IDs come as JSON
# strings (many JSON parsers turn numbers into doubles: 53 bits); Python's
# int holds them. A 503 (that worker holds no lease), a gateway error or a
# broken connection is retried: through a balancer the next attempt goes to
# another worker. Any other status is a bad request: retrying cannot help.
import sys
import time

import requests


def next_ids(base, n, attempts=50, token=None):
    headers = {"Authorization": "Bearer " + token} if token else {}
    for attempt in range(attempts):
        try:
            r = requests.get(base + "/ids", params={"count": n}, headers=headers, timeout=2)
            if r.status_code == 200:
                return [int(x) for x in r.json()["ids"]]
            if r.status_code not in (502, 503, 504):
                r.raise_for_status()
        except (requests.ConnectionError, requests.Timeout):
            pass
        time.sleep(min(0.01 * (attempt + 1), 0.2))
    raise RuntimeError("no worker answered in %d attempts" % attempts)


if __name__ == "__main__":
    print("\n".join(str(i) for i in next_ids(sys.argv[1], int(sys.argv[2]))))
