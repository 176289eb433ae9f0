package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snowfleet/snowfleet/integration/testenv"
)

// hostileRoleEnv, set to "attackers", makes a re-executed test binary
// TestHostile's attackers (TestHostileAttackers); hostileTargetEnv holds
// the worker's ID port, its admin port and how long to attack, for it.
const (
	hostileRoleEnv   = "SNOWFLEET_HOSTILE_ROLE"
	hostileTargetEnv = "SNOWFLEET_HOSTILE_TARGET"
)

// hostileAttackers is the attackers' process.
type hostileAttackers struct {
	cmd *exec.Cmd
	out bytes.Buffer
}

// startHostileAttackers re-executes this test binary as the attackers of
// d for dur, of the kinds given (digits 0-6, "" for all), at idle priority
// (testenv.IdleCommand): they stand for clients on other machines, and in
// this process, beside the clean clients, their goroutines took the clean
// clients' turns in one Go scheduler (it polls the network only when its
// run queues are empty, or every 10 ms).
func startHostileAttackers(t *testing.T, d *daemonProc, dur time.Duration, kinds string) *hostileAttackers {
	t.Helper()
	a := &hostileAttackers{cmd: testenv.IdleCommand(t, os.Args[0], "-test.run=^TestHostileAttackers$")}
	a.cmd.Env = append(os.Environ(), hostileRoleEnv+"=attackers", fmt.Sprintf("%s=%s %s %s", hostileTargetEnv, d.port, d.http, dur),
		"SNOWFLEET_HOSTILE_KINDS="+kinds)
	a.cmd.Stdout, a.cmd.Stderr = &a.out, &a.out
	if err := a.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if a.cmd.ProcessState == nil {
			_ = a.cmd.Process.Kill()
			_ = a.cmd.Wait()
		}
	})
	return a
}

// wait waits for the attackers to end, and returns the connections they
// made, by kind.
func (a *hostileAttackers) wait(t *testing.T) []int64 {
	t.Helper()
	if err := a.cmd.Wait(); err != nil {
		t.Fatalf("the attackers' process: %v\n%s", err, a.out.String())
	}
	for _, l := range strings.Split(a.out.String(), "\n") {
		if f, ok := strings.CutPrefix(l, "hostile-attacks "); ok {
			var made []int64
			for _, n := range strings.Fields(f) {
				v, err := strconv.ParseInt(n, 10, 64)
				if err != nil {
					t.Fatalf("the attackers' count %q: %v", l, err)
				}
				made = append(made, v)
			}
			return made
		}
	}
	t.Fatalf("the attackers' process printed no counts:\n%s", a.out.String())
	return nil
}

// TestHostileAttackers is TestHostile's attackers, in a process of their
// own (startHostileAttackers); run alone it does nothing. It attacks for
// the time hostileTargetEnv gives, then prints the connections it made, by
// kind.
func TestHostileAttackers(t *testing.T) {
	if os.Getenv(hostileRoleEnv) != "attackers" {
		t.Skip("TestHostile's attackers' process")
	}
	var target struct{ port, http string }
	var dur time.Duration
	f := strings.Fields(os.Getenv(hostileTargetEnv))
	if len(f) == 3 {
		target.port, target.http = f[0], f[1]
		dur, _ = time.ParseDuration(f[2])
	}
	if dur <= 0 {
		t.Fatalf("%s=%q: want id-port admin-port duration", hostileTargetEnv, os.Getenv(hostileTargetEnv))
	}
	ctx, cancel := context.WithTimeout(context.Background(), dur)
	defer cancel()
	var wg sync.WaitGroup
	var attacks [7]atomic.Int64 // connections made, by kind
	run := func(kind, n int, attack func(ctx context.Context, nc net.Conn)) {
		if k := os.Getenv("SNOWFLEET_HOSTILE_KINDS"); k != "" && !strings.Contains(k, strconv.Itoa(kind)) {
			return
		}
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					port := target.port
					if kind == 5 {
						port = target.http
					}
					nc, err := net.DialTimeout("tcp", "127.0.0.1:"+port, time.Second)
					if err != nil {
						time.Sleep(10 * time.Millisecond)
						continue
					}
					attacks[kind].Add(1)
					stop := context.AfterFunc(ctx, func() { nc.Close() })
					attack(ctx, nc)
					stop()
					nc.Close()
				}
			}()
		}
	}
	drainAll := func(nc net.Conn) {
		buf := make([]byte, 64<<10)
		for {
			if _, err := nc.Read(buf); err != nil {
				return
			}
		}
	}
	// Garbage: random bytes, until the worker closes the connection.
	run(0, 5, func(ctx context.Context, nc net.Conn) {
		b := make([]byte, 4096)
		for i := range b {
			b[i] = byte(rand.IntN(256))
		}
		_, _ = nc.Write(b)
		drainAll(nc)
	})
	// Absurd lengths.
	absurd := []string{"*1\r\n$2147483648\r\n", "*2000000000\r\n", "*1\r\n$65537\r\n", "*" + strings.Repeat("9", 100), strings.Repeat("A", 70000)}
	run(1, 5, func(ctx context.Context, nc net.Conn) {
		_, _ = nc.Write([]byte(absurd[rand.IntN(len(absurd))]))
		drainAll(nc)
	})
	// Slowloris: a request a byte at a time, until the read timeout.
	run(2, 6, func(ctx context.Context, nc net.Conn) {
		req := "*2\r\n$7\r\nNEXTIDS\r\n$1\r\n5\r\n"
		for i := 0; ctx.Err() == nil; i++ {
			if _, err := nc.Write([]byte{req[i%(len(req)-1)]}); err != nil {
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
	})
	// Pipelines never read: closed by the output limit (or the write
	// timeout).
	run(3, 6, func(ctx context.Context, nc net.Conn) {
		batch := []byte(strings.Repeat("NEXTIDS 4096\r\n", 200))
		for ctx.Err() == nil {
			if _, err := nc.Write(batch); err != nil {
				return
			}
		}
	})
	// Heavy pipelined NEXTIDS, read back (raw: parsing 4 million IDs a
	// second would take a core of this 2-core machine from the worker).
	run(4, 6, func(ctx context.Context, nc net.Conn) {
		go drainAll(nc)
		batch := []byte(strings.Repeat("NEXTIDS 4096\r\n", 292))
		for ctx.Err() == nil {
			if _, err := nc.Write(batch); err != nil {
				return
			}
		}
	})
	// Idle admin connections: one request, then nothing.
	run(5, 6, func(ctx context.Context, nc net.Conn) {
		_, _ = nc.Write([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"))
		drainAll(nc)
	})
	// SETNAME floods: 64 KiB names, and names that would forge lines.
	run(6, 6, func(ctx context.Context, nc net.Conn) {
		name := strings.Repeat("n", 60000)
		var b strings.Builder
		for range 20 {
			fmt.Fprintf(&b, "*3\r\n$6\r\nCLIENT\r\n$7\r\nSETNAME\r\n$%d\r\n%s\r\n", len(name), name)
			b.WriteString("*4\r\n$5\r\nHELLO\r\n$1\r\n2\r\n$7\r\nSETNAME\r\n$9\r\nx\r\nid=666\r\n")
			b.WriteString("CLIENT LIST\r\n")
		}
		req := []byte(b.String())
		buf := make([]byte, 64<<10)
		for ctx.Err() == nil {
			if _, err := nc.Write(req); err != nil {
				return
			}
			_ = nc.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
			for {
				if _, err := nc.Read(buf); err != nil {
					break
				}
			}
		}
	})

	wg.Wait()
	var counts []string
	for i := range attacks {
		counts = append(counts, strconv.FormatInt(attacks[i].Load(), 10))
	}
	fmt.Printf("hostile-attacks %s\n", strings.Join(counts, " "))
}
