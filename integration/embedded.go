//go:build integration

package integration

import (
	"bufio"
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// embeddedService labels the container that embeds the lease (package
// coordinator/idlease, through cmd/idlease-example in the worker image). It
// is no service of the compose file: the suite starts it with docker run on
// the project's zk network, labelled with the project so that compose's
// `down --remove-orphans` removes it even when a run dies.
const embeddedService = "embedded"

// StartEmbedded runs idlease-example under the fleet's root, as the worker
// identity, pinned to the workers' datacenter with their session timeout
// and renew, printing an ID every 2 ms until stopped. Its ID waits are long
// (5 min): after a fault it waits for its next lease instead of exiting.
func (s *Stack) StartEmbedded(ctx context.Context) (Container, error) {
	name := s.Project + "_" + embeddedService + "_1"
	_, _ = docker(ctx, "rm", "-f", name) // a leftover of an earlier scenario
	id, err := docker(ctx, "run", "-d", "--name", name,
		"--label", "com.docker.compose.project="+s.Project,
		"--label", "com.docker.compose.service="+embeddedService,
		"--label", "com.docker.compose.container-number=1",
		"--label", "com.docker.compose.oneoff=False",
		"--network", s.Network("zk"),
		"-v", s.Project+"_zk-worker:/run/secrets/zk-worker:ro",
		"--entrypoint", "/idlease-example",
		workerImage(),
		"--zk", "zk1:2181,zk2:2181,zk3:2181", "--zk-root", zkRoot,
		"--zk-auth-file", "/run/secrets/zk-worker/auth",
		"--datacenter", strconv.Itoa(datacenter),
		"--session-timeout", sessionTimeout.String(), "--renew", renew.String(),
		"--count", "0", "--every", "2ms", "--wait", "5m", "--open-timeout", "5m")
	if err != nil {
		return Container{}, fmt.Errorf("/idlease-example of %s (only the chaos build carries it): %w", workerImage(), err)
	}
	return Container{ID: id, Service: embeddedService, Number: 1, Running: true}, nil
}

// FollowEmbedded reads the IDs the embedded container prints (its stdout,
// `docker logs -f`, one ID a line) into a stream of its own, checked with
// every other stream: duplicates, order per slot, datacenter, the slots'
// stored reservations. Its IDs are direct IDs of the container (its
// ContainerIDs). When the container stops (kill -9) the follower waits
// until it runs again and reads on past the lines it already has. stop
// ends the follower and returns once it has.
func (c *Collector) FollowEmbedded(ctx context.Context, e Container) (stop func()) {
	s := newStream("embedded/"+e.Short(), e.ID)
	c.mu.Lock()
	c.streams = append(c.streams, s)
	c.mu.Unlock()
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		seen := 0 // stdout lines read so far: a new docker logs repeats them
		for ctx.Err() == nil {
			if st, err := docker(ctx, "inspect", "-f", "{{.State.Running}}", e.ID); err != nil || st != "true" {
				_ = sleep(ctx, 200*time.Millisecond)
				continue
			}
			seen = c.readEmbedded(ctx, s, e.ID, seen)
			_ = sleep(ctx, 200*time.Millisecond)
		}
	}()
	return func() { cancel(); <-done }
}

// readEmbedded runs one docker logs -f and adds each ID line past the first
// skip; it returns the lines read in all.
func (c *Collector) readEmbedded(ctx context.Context, s *stream, id string, skip int) int {
	cmd := exec.CommandContext(ctx, "docker", "logs", "-f", id)
	out, err := cmd.StdoutPipe()
	if err != nil || cmd.Start() != nil {
		return skip
	}
	n := 0
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		n++
		if n <= skip {
			continue
		}
		field, _, tabbed := strings.Cut(sc.Text(), "\t")
		v, err := strconv.ParseInt(field, 10, 64)
		if err != nil || !tabbed {
			s.mu.Lock()
			s.badIDs = append(s.badIDs, fmt.Sprintf("embedded printed %q", sc.Text()))
			s.mu.Unlock()
			continue
		}
		s.add(time.Now(), v)
		c.n.ids.Add(1)
	}
	_ = cmd.Wait()
	return max(n, skip)
}
