//go:build linux

package clients

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// draw is what one client drew: every ID it was handed, in order, and each
// failed attempt it saw, stamped with the wall clock.
type draw struct {
	name string
	ids  []uint64
	errs []failure
	err  error // the client itself failed (non-zero exit, unparsable output)
}

type failure struct {
	at  time.Time
	msg string
}

// drawSpec is one run of a draw: at least total IDs in batches of batch,
// pause between batches, for at least min, over lanes connections taking
// the batches in turn (a pool; through a round-robin balancer, lanes land
// on different workers).
type drawSpec struct {
	addr                string
	total, batch, lanes int
	pause, min          time.Duration
}

func (s drawSpec) args() []string {
	host, port, _ := strings.Cut(s.addr, ":")
	return []string{host, port, strconv.Itoa(s.total), strconv.Itoa(s.batch),
		strconv.FormatInt(s.pause.Milliseconds(), 10), strconv.FormatInt(s.min.Milliseconds(), 10),
		strconv.Itoa(max(s.lanes, 1))}
}

// runScript runs a draw script (testdata/draw.py or draw.js) and parses
// its output: IDs on stdout, "E <unix_ms> <msg>" lines on stderr.
func runScript(ctx context.Context, t *testing.T, name string, argv []string) *draw {
	d := &draw{name: name}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "COOKBOOK="+cookbook(t), "NODE_PATH="+nodePath)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	runErr := cmd.Run()
	d.ids, d.err = parseIDs(out.Bytes())
	var other []string
	for _, line := range strings.Split(errb.String(), "\n") {
		if line == "" {
			continue
		}
		if f, ok := parseFailure(line); ok {
			d.errs = append(d.errs, f)
		} else {
			other = append(other, line)
		}
	}
	if runErr != nil {
		d.err = fmt.Errorf("%s: %v\n%s", name, runErr, strings.Join(other, "\n"))
	}
	return d
}

func parseFailure(line string) (failure, bool) {
	rest, ok := strings.CutPrefix(line, "E ")
	if !ok {
		return failure{}, false
	}
	ms, msg, _ := strings.Cut(rest, " ")
	n, err := strconv.ParseInt(ms, 10, 64)
	if err != nil {
		return failure{}, false
	}
	return failure{at: time.UnixMilli(n), msg: msg}, true
}

func parseIDs(b []byte) ([]uint64, error) {
	ids := make([]uint64, 0, bytes.Count(b, []byte{'\n'}))
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		id, err := strconv.ParseUint(sc.Text(), 10, 64)
		if err != nil {
			return ids, fmt.Errorf("not an ID: %q", sc.Text())
		}
		ids = append(ids, id)
	}
	return ids, sc.Err()
}

// drawRedisCLI draws with redis-cli as an operator's script would: one
// process, so one connection, per batch through the balancer. A reply that
// is not a list of IDs, or a failed run, is a failure.
func drawRedisCLI(ctx context.Context, s drawSpec) *draw {
	d := &draw{name: "redis-cli"}
	host, port, _ := strings.Cut(s.addr, ":")
	end := time.Now().Add(s.min)
	for len(d.ids) < s.total || time.Now().Before(end) {
		if ctx.Err() != nil {
			d.err = ctx.Err()
			return d
		}
		out, err := exec.CommandContext(ctx, "redis-cli", "-h", host, "-p", port,
			"NEXTIDS", strconv.Itoa(s.batch)).CombinedOutput()
		ids, perr := parseIDs(out)
		if err != nil || perr != nil || len(ids) != s.batch {
			d.errs = append(d.errs, failure{at: time.Now(), msg: strings.TrimSpace(string(out))})
		} else {
			d.ids = append(d.ids, ids...)
		}
		time.Sleep(s.pause)
	}
	return d
}

// runAll runs the draws concurrently and returns them once all ended.
func runAll(fns ...func() *draw) []*draw {
	out := make([]*draw, len(fns))
	var wg sync.WaitGroup
	for i, fn := range fns {
		wg.Add(1)
		go func() { defer wg.Done(); out[i] = fn() }()
	}
	wg.Wait()
	return out
}

func pyDraw(ctx context.Context, t *testing.T, s drawSpec) *draw {
	return runScript(ctx, t, "redis-py", append([]string{python, filepath.Join("testdata", "draw.py")}, s.args()...))
}

func nodeDraw(ctx context.Context, t *testing.T, s drawSpec, mode string) *draw {
	return runScript(ctx, t, "node-redis "+mode, append([]string{"node", filepath.Join("testdata", "draw.js")}, append(s.args(), mode)...))
}
