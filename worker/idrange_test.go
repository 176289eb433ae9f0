package worker

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/snowfleet/snowfleet/integration/testenv"
	"github.com/snowfleet/snowfleet/snowflake"
)

// TestIDRange: IDRANGE answers the smallest and largest ID of a time
// window, in Unix ms or RFC 3339, in the request's form; it needs no lease
// (this worker has no ZooKeeper); bad times are named and the connection
// serves on. Through go-redis, the raw protocol and redis-cli.
func TestIDRange(t *testing.T) {
	w := startWorker(t, "127.0.0.1:1", false, nil)
	const lo, hi = 1724551110456246272, 1724551114650550271 // 2023-11-14T22:13:20.000Z .. .000Z+0.999s, every slot
	c := w.client()
	ctx := context.Background()
	got, err := c.Do(ctx, "IDRANGE", "1700000000000", "2023-11-14T22:13:20.999Z").Int64Slice()
	if err != nil || len(got) != 2 || got[0] != lo || got[1] != hi {
		t.Fatalf("IDRANGE = %v, %v; want [%d %d]", got, err, lo, hi)
	}
	if f, _ := snowflake.Decode(hi); f.UnixMs != 1700000000999 || f.Sequence != snowflake.MaxSequence || f.Machine != snowflake.MaxMachine {
		t.Fatalf("last = %+v", f)
	}

	r := w.dial(t)
	r.send("IDRANGE 1700000000000 1700000000999 SHORT\r\nIDRANGE 1700000000000 1700000000999 string\r\n")
	r.expect("*2")
	r.expect("$13")
	r.expect(snowflake.FormatShort(lo))
	r.expect("$13")
	r.expect(snowflake.FormatShort(hi))
	r.expect("*2")
	r.expect("$19")
	r.expect("1724551110456246272")
	r.expect("$19")
	r.expect("1724551114650550271")
	r.send("IDRANGE 1000 1700000000000\r\n" +
		"IDRANGE 1700000000000 4000000000000\r\n" +
		"IDRANGE 1700000000001 1700000000000\r\n" +
		"IDRANGE yesterday 1700000000000\r\n" +
		"IDRANGE 1700000000000 2023-13-01T00:00:00Z\r\n" +
		"IDRANGE 1700000000000 1700000000001 HEX\r\n" +
		"IDRANGE 1700000000000\r\n" +
		"PING\r\n")
	r.expect("-ERR from (unix ms) 1000 is out of range 1288834974657..3487858230208")
	r.expect("-ERR to (unix ms) 4000000000000 is out of range 1288834974657..3487858230208")
	r.expect("-ERR empty ID range: from 2023-11-14T22:13:20.001Z is after to 2023-11-14T22:13:20Z")
	r.expect("-ERR from must be Unix milliseconds or an RFC 3339 time, got 'yesterday'")
	r.expect("-ERR to must be Unix milliseconds or an RFC 3339 time, got '2023-13-01T00:00:00Z'")
	r.expect("-ERR ID format must be STRING, INTEGER or SHORT, got 'HEX'")
	r.expect("-ERR wrong number of arguments for 'idrange' command")
	r.expect("+PONG")

	t.Run("redis-cli", func(t *testing.T) {
		testenv.Require(t, "redis-cli")
		cli, err := exec.LookPath("redis-cli")
		if err != nil {
			t.Fatal(err)
		}
		_, port, _ := strings.Cut(w.addr, ":")
		out, err := exec.Command(cli, "-h", "127.0.0.1", "-p", port, "IDRANGE", "2023-11-14T22:13:20Z", "2023-11-14T22:13:20.999Z").CombinedOutput()
		if f := strings.Fields(string(out)); err != nil || len(f) != 2 || f[0] != "1724551110456246272" || f[1] != "1724551114650550271" {
			t.Fatalf("redis-cli IDRANGE = %q, %v", out, err)
		}
	})
}
