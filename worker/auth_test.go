package worker

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"

	"github.com/snowfleet/snowfleet/integration/testenv"
)

// TestAuth: requirepass semantics on the wire, for both transports, then
// redis-cli -a, go-redis Password and redis-py against the same worker.
func TestAuth(t *testing.T) {
	for _, goroutines := range []bool{false, true} {
		t.Run("goroutines="+strconv.FormatBool(goroutines), func(t *testing.T) {
			noEventLoop = goroutines
			defer func() { noEventLoop = false }()
			w := startFake(t, nil)

			// No password: AUTH accepts anything, as Redis does.
			r := w.dial(t)
			r.send("NEXTID\r\nAUTH default x\r\nAUTH x\r\n")
			r.expectPrefix(":")
			r.expect("+OK")
			r.expectPrefix("-ERR AUTH <password> called without any password configured")

			w.srv.SetPasswords([][]byte{[]byte("s3cret")})
			failures := func() float64 {
				var m dto.Metric
				if err := w.srv.auth.failures.Write(&m); err != nil {
					t.Fatal(err)
				}
				return m.GetCounter().GetValue()
			}
			r = w.dial(t)
			r.send("NEXTID\r\nPING\r\nNOSUCH\r\nDECODE 1\r\nHELLO 2\r\nHELLO 2 AUTH default wrong\r\n")
			for range 4 {
				r.expect("-NOAUTH Authentication required.")
			}
			r.expectPrefix("-NOAUTH HELLO must be called with the client already authenticated")
			r.expect("-WRONGPASS invalid username-password pair or user is disabled.")
			// The third wrong password closes the connection after its
			// reply: what was pipelined behind it is not run.
			r.send("AUTH wrong\r\nAUTH admin s3cret\r\nAUTH default s3cret\r\nNEXTID\r\n")
			r.expect("-WRONGPASS invalid username-password pair or user is disabled.")
			r.expect("-WRONGPASS invalid username-password pair or user is disabled.")
			r.expectClosed()
			if got := failures(); got != 3 {
				t.Errorf("auth failures = %v, want 3", got)
			}
			var lock dto.Metric
			if err := w.srv.auth.lockouts.Write(&lock); err != nil || lock.GetCounter().GetValue() != 1 {
				t.Errorf("auth lockouts = %v (%v), want 1", lock.GetCounter().GetValue(), err)
			}
			// Before AUTH, Redis's unauthenticated limits: 10 arguments,
			// 16 KiB each; after it, the full ones.
			eleven := "*11\r\n" + strings.Repeat("$4\r\nPING\r\n", 11)
			r = w.dial(t)
			r.send(eleven)
			r.expect("-ERR Protocol error: unauthenticated multibulk length")
			r.expectClosed()
			r = w.dial(t)
			r.send("*2\r\n$4\r\nAUTH\r\n$17000\r\n")
			r.expect("-ERR Protocol error: unauthenticated bulk length")
			r.expectClosed()
			r = w.dial(t)
			r.send("AUTH s3cret\r\n" + eleven + "*2\r\n$4\r\nECHO\r\n$17000\r\n" + strings.Repeat("x", 17000) + "\r\n")
			r.expect("+OK")
			r.expect("-ERR wrong number of arguments for 'ping' command")
			r.expect("$17000")
			// HELLO's SETNAME takes effect only with the authentication.
			r = w.dial(t)
			r.send("HELLO 2 AUTH default wrong SETNAME evil\r\nAUTH s3cret\r\nCLIENT GETNAME\r\n")
			r.expect("-WRONGPASS invalid username-password pair or user is disabled.")
			r.expect("+OK")
			r.expect("$-1")
			// Two wrong passwords leave the connection open.
			r = w.dial(t)
			r.send("AUTH wrong\r\nAUTH admin s3cret\r\nAUTH default s3cret\r\nNEXTID\r\n")
			r.expect("-WRONGPASS invalid username-password pair or user is disabled.")
			r.expect("-WRONGPASS invalid username-password pair or user is disabled.")
			r.expect("+OK")
			r.expectPrefix(":")
			// HELLO AUTH authenticates too; QUIT needs no password.
			r = w.dial(t)
			r.send("HELLO 2 AUTH default s3cret\r\nECHO done\r\n")
			r.expect("*14")
			for i := 0; ; i++ {
				if l, err := r.line(); l == "done" || err != nil || i > 40 {
					break
				}
			}
			r.send("NEXTID\r\n")
			r.expectPrefix(":")
			r = w.dial(t)
			r.send("QUIT\r\n")
			r.expect("+OK")
			r.expectClosed()

			// Rotation: old and new both accepted, then only the new; a
			// connection authenticated with the new one stays so (those
			// of the old are closed: TestRotationClosesOldPasswords).
			w.srv.SetPasswords([][]byte{[]byte("s3cret"), []byte("n3w")})
			for _, pw := range []string{"s3cret", "n3w"} {
				r = w.dial(t)
				r.send("AUTH " + pw + "\r\nNEXTID\r\n")
				r.expect("+OK")
				r.expectPrefix(":")
			}
			w.srv.SetPasswords([][]byte{[]byte("n3w")})
			old := w.dial(t)
			old.send("AUTH s3cret\r\n")
			old.expect("-WRONGPASS invalid username-password pair or user is disabled.")
			r.send("NEXTID\r\n")
			r.expectPrefix(":")

			// go-redis with Password, and without.
			ctx := context.Background()
			good := w.client(func(o *redis.Options) { o.Password = "n3w" })
			if id, err := good.Do(ctx, "NEXTID").Int64(); err != nil || id <= 0 {
				t.Fatalf("go-redis with Password: %d, %v", id, err)
			}
			bad := w.client(func(o *redis.Options) { o.Password = "nope" })
			if err := bad.Do(ctx, "NEXTID").Err(); err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
				t.Fatalf("go-redis with a wrong Password: %v; want WRONGPASS", err)
			}
			none := w.client()
			if err := none.Do(ctx, "NEXTID").Err(); err == nil || !strings.Contains(err.Error(), "NOAUTH") {
				t.Fatalf("go-redis without Password: %v; want NOAUTH", err)
			}
			w.srv.SetPasswords(nil) // back to no password: new connections need none
			r = w.dial(t)
			r.send("NEXTID\r\n")
			r.expectPrefix(":")
		})
	}

	t.Run("redis-cli and redis-py", func(t *testing.T) {
		testenv.Require(t, "redis-cli", "redis-py")
		cli := "redis-cli"
		w := startFake(t, nil)
		w.srv.SetPasswords([][]byte{[]byte("pw with space")})
		_, port, _ := strings.Cut(w.addr, ":")
		cliRun := func(args ...string) string {
			out, _ := exec.Command(cli, append([]string{"--no-auth-warning", "-h", "127.0.0.1", "-p", port}, args...)...).CombinedOutput()
			return strings.TrimSpace(string(out))
		}
		if out := cliRun("-a", "pw with space", "NEXTID"); mustInt(out) <= 0 {
			t.Fatalf("redis-cli -a NEXTID = %q", out)
		}
		if out := cliRun("--user", "default", "--pass", "pw with space", "NEXTID"); mustInt(out) <= 0 {
			t.Fatalf("redis-cli --user default --pass NEXTID = %q", out)
		}
		if out := cliRun("NEXTID"); !strings.Contains(out, "NOAUTH Authentication required.") {
			t.Fatalf("redis-cli without -a = %q", out)
		}
		if out := cliRun("-a", "wrong", "NEXTID"); !strings.Contains(out, "WRONGPASS") {
			t.Fatalf("redis-cli -a wrong = %q", out)
		}
		py := `import sys, redis
r = redis.Redis(host="127.0.0.1", port=int(sys.argv[1]), password=sys.argv[2])
print(r.execute_command("NEXTID"))
try:
    redis.Redis(host="127.0.0.1", port=int(sys.argv[1]), password="wrong").execute_command("NEXTID")
except (redis.exceptions.AuthenticationError, redis.exceptions.ResponseError) as e:
    print("refused:", e)
`
		out, err := exec.Command(testenv.Python, "-c", py, port, "pw with space").CombinedOutput()
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if err != nil || len(lines) != 2 || mustInt(lines[0]) <= 0 || !strings.Contains(lines[1], "refused: WRONGPASS") {
			t.Fatalf("redis-py: %v\n%s", err, out)
		}
	})
}
