# snowfleet from Python with redis-py. Python ints hold 64 bits, so the
# integer replies are safe here; behind a balancer, retry -NOLEASE and
# -CLOCKBACK on a new connection (the worker closes the old one).
import time

import redis

RETRY = ("NOLEASE", "CLOCKBACK")


def connect(host, port):
    # socket_timeout: a paused worker costs one timeout, then a reconnect.
    return redis.Redis(host=host, port=port, socket_timeout=2, socket_connect_timeout=2)


def next_ids(r, n, attempts=50, on_error=None):
    """n ascending IDs from one worker, retried on another worker on refusal;
    on_error(exc) sees each failed attempt (count them in your metrics)."""
    for attempt in range(attempts):
        try:
            return [int(x) for x in r.execute_command("NEXTIDS", n)]
        except redis.ResponseError as e:
            if not str(e).startswith(RETRY):
                raise  # a bad request: retrying cannot help
            last = e
        except (redis.ConnectionError, redis.TimeoutError) as e:
            last = e
        if on_error:
            on_error(last)
        time.sleep(min(0.01 * (attempt + 1), 0.2))
    raise last
